"""Drives the link's changes over time on a switch, in real time: the
link-state timeline (StateDriver) and a varying rate (RateDriver).

Each change is written at its scheduled instant; the write returns once BMv2
has applied it, so the time from the scheduled instant to the write's return
is the latency with which the data plane follows the schedule.
"""

import csv
import heapq
import statistics
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

from . import dataplane
from .link_states import TIMELINE_FIELDS, timeline_row

APPLIED_FIELDS = ("applied_unix", "latency_ms")
RATE_FIELDS = ("start_us", "direction", "rate_bps", "down")


@dataclass(frozen=True)
class Applied:
    change: object
    applied_unix: float
    latency_s: float


def default_record_path(profile_name, kind="timeline"):
    """Where a run's applied changes go unless told otherwise."""
    return f"{kind}-{profile_name}-{time.strftime('%Y%m%d-%H%M%S')}.csv"


class ScheduleDriver:
    """Writes timed changes to `switch`; subclasses say what a change writes."""

    fields = ()

    def __init__(self, switch, changes, record_path=None):
        self.switch = switch
        self.changes = changes
        self.record_path = record_path
        self.applied = []
        self.error = None
        self.started = threading.Event()
        self.stopping = threading.Event()

    def start_us(self, change):
        raise NotImplementedError

    def write(self, change):
        raise NotImplementedError

    def row(self, change):
        raise NotImplementedError

    def run(self, duration_s=None):
        """Until the changes end, `duration_s` passes, or stop() is called.
        A failure to write ends the walk; it is kept in `error` and raised."""
        self.started.set()
        record = open(self.record_path, "w", newline="") if self.record_path else None
        writer = csv.writer(record) if record else None
        if writer:
            writer.writerow(self.fields + APPLIED_FIELDS)
        origin = time.monotonic()
        try:
            for change in self.changes:
                start = self.start_us(change) / 1e6
                if duration_s is not None and start >= duration_s:
                    break
                if self.stopping.wait(max(0.0, origin + start - time.monotonic())):
                    break
                try:
                    self.write(change)
                except Exception as err:
                    self.error = err
                    raise
                latency = time.monotonic() - (origin + start)
                applied = Applied(change, time.time(), latency)
                self.applied.append(applied)
                if writer:
                    writer.writerow(self.row(change) + (
                        f"{applied.applied_unix:.6f}", f"{latency * 1e3:.3f}"))
                    record.flush()
        finally:
            if record:
                record.close()

    def stop(self):
        self.stopping.set()

    def latency_summary(self):
        """Milliseconds from scheduled instant to applied, over all changes."""
        latencies = sorted(a.latency_s * 1e3 for a in self.applied)
        if not latencies:
            return {}
        return {"changes": len(latencies), "p50_ms": statistics.median(latencies),
                "p99_ms": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
                "max_ms": latencies[-1]}


@contextmanager
def running(*drivers):
    """Runs each driver (a ScheduleDriver or an EventRecorder) in a thread of
    its own, once each has started; stops and joins them all on exit."""
    threads = [threading.Thread(target=d.run, name=type(d).__name__, daemon=True)
               for d in drivers]
    for thread in threads:
        thread.start()
    for driver in drivers:
        driver.started.wait()
    try:
        yield drivers
    finally:
        for driver in drivers:
            driver.stop()
        for thread in threads:
            thread.join()


class StateDriver(ScheduleDriver):
    """Walks `segments` (link_states.Segment) of `chain`: each writes its
    state's error probabilities. The record is a replayable timeline."""

    fields = TIMELINE_FIELDS

    def __init__(self, switch, chain, segments, record_path=None):
        super().__init__(switch, segments, record_path)
        self.chain = chain

    def start_us(self, segment):
        return segment.start_us

    def write(self, segment):
        dataplane.write_link_state(self.switch, self.chain.states[segment.state])

    def row(self, segment):
        return timeline_row(segment)


def rate_changes(profile):
    """(direction, RateSegment) of every direction with a varying rate, in time
    order (endless for a trace)."""
    def walk(name, direction):
        for segment in direction.rate_schedule.segments(direction.rate_bps):
            yield segment.start_us, name, segment

    walks = [walk(name, direction) for name, direction in profile.directions().items()
             if direction.rate_schedule]
    return ((name, segment) for _, name, segment in heapq.merge(*walks))


class RateDriver(ScheduleDriver):
    """Steps the rate of `profile`'s directions that vary it."""

    fields = RATE_FIELDS

    def __init__(self, switch, profile, record_path=None):
        super().__init__(switch, rate_changes(profile), record_path)
        self.profile = profile

    def start_us(self, change):
        return change[1].start_us

    def write(self, change):
        name, segment = change
        direction = self.profile.directions()[name]
        self.switch.modify([dataplane.link_params_entry(name, direction, segment.rate_bps,
                                                        segment.down)])

    def row(self, change):
        name, segment = change
        return (segment.start_us, name, f"{segment.rate_bps or 0:.0f}", int(segment.down))
