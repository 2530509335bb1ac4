"""Drives the link's changes over time on a switch, in real time: the
link-state timeline (StateDriver) and a varying rate (RateDriver).

A rate change is written at its scheduled instant and applies when the write
returns. A state change is written ahead of its instant, with that instant on
the switch's clock, and the data plane changes state then: its latency is
only the clock's uncertainty, unless the write came back late.
"""

import csv
import heapq
import statistics
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

from ..model.link_states import TIMELINE_FIELDS, timeline_row
from ..switch.entries.link_errors import link_state_entries
from ..switch.entries.link_params import link_params_entry
from ..switch.errors import SwitchUnreachable
from . import switch_clock

APPLIED_FIELDS = ("applied_unix", "latency_ms")
RATE_FIELDS = ("start_us", "direction", "rate_bps", "down")
# How far ahead of its instant a state change is written: far more than a
# write takes, and never before the previous change has taken over.
STATE_LEAD_S = 0.1
# How long a driver tries to get back a switch it lost before it gives up.
RECONNECT_S = 30.0


@dataclass(frozen=True)
class Applied:
    change: object
    applied_unix: float    # when the data plane followed the change
    latency_s: float       # after its scheduled instant


def default_record_path(profile_name, kind="timeline"):
    """Where a run's applied changes go unless told otherwise."""
    return f"{kind}-{profile_name}-{time.strftime('%Y%m%d-%H%M%S')}.csv"


class ScheduleDriver:
    """Writes timed changes to `switch`; subclasses say what a change writes
    and when. Instants are host real time (time.time()), the clock BMv2
    stamps packets with. A driver that loses its switch connects again, puts
    back what it last wrote (reassert) and goes on; `outages` lists the
    (lost, back) host instants."""

    fields = ()

    def __init__(self, switch, changes, record_path=None):
        self.switch = switch
        self.changes = changes
        self.record_path = record_path
        self.applied = []
        self.error = None
        self.outages = []
        self.started = threading.Event()
        self.stopping = threading.Event()

    def start_us(self, change):
        raise NotImplementedError

    def write_at(self, instant, previous):
        """When to write the change due at `instant`, after the one due at
        `previous`."""
        return instant

    def write(self, change, instant):
        """Writes `change`, due at `instant` (None: at once)."""
        raise NotImplementedError

    def row(self, change):
        raise NotImplementedError

    def prepare(self):
        """Before the first change."""

    def reassert(self):
        """After the connection was made again and prepared: puts back what
        the last change wrote (a switch started again has lost it)."""

    def _on_switch(self, action, *args):
        """Runs `action`; while the connection to the switch is broken
        (RECONNECT_S at most), connects again, prepares again, puts back
        what was written (reassert) and runs it again."""
        lost = None
        while True:
            generation = self.switch.generation
            try:
                if lost is not None and action != self.prepare:
                    self.prepare()
                    self.reassert()
                action(*args)
                break
            except SwitchUnreachable as err:
                if lost is None:
                    lost = time.time()
                    print(f"linkemu: {type(self).__name__}: {err}; connecting again",
                          file=sys.stderr, flush=True)
                left = lost + RECONNECT_S - time.time()
                if left <= 0:
                    raise
                self.switch.recover(generation, left)
        if lost is not None:
            self.outages.append((lost, time.time()))
            print(f"linkemu: {type(self).__name__}: the switch is back after "
                  f"{time.time() - lost:.1f} s", file=sys.stderr, flush=True)

    def run(self, duration_s=None):
        """Until the changes end, `duration_s` passes, or stop() is called.
        The walk starts once prepared (`started` is set then, or on failure).
        A failure ends the walk; it is kept in `error` and raised."""
        record = open(self.record_path, "w", newline="") if self.record_path else None
        writer = csv.writer(record) if record else None
        if writer:
            writer.writerow(self.fields + APPLIED_FIELDS)
        try:
            try:
                self._on_switch(self.prepare)
            finally:
                self.started.set()
            origin = previous = None
            for change in self.changes:
                offset = self.start_us(change) / 1e6
                if duration_s is not None and offset >= duration_s:
                    break
                if origin is None:
                    # The walk starts when its first change is in place.
                    self._on_switch(self.write, change, None)
                    returned = instant = time.time()
                    origin = instant - offset
                else:
                    instant = origin + offset
                    if self.stopping.wait(
                            max(0.0, self.write_at(instant, previous) - time.time())):
                        break
                    self._on_switch(self.write, change, instant)
                    returned = time.time()
                applied_unix = max(instant, returned)
                applied = Applied(change, applied_unix, applied_unix - instant)
                self.applied.append(applied)
                previous = instant
                if writer:
                    writer.writerow(self.row(change) + (
                        f"{applied.applied_unix:.6f}", f"{applied.latency_s * 1e3:.3f}"))
                    record.flush()
        except Exception as err:
            self.error = err
            raise
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
    state's error probabilities, to take over from the previous state's at
    the segment's start on the switch's clock (measured first, by probes).
    The record is a replayable timeline."""

    fields = TIMELINE_FIELDS

    def __init__(self, switch, chain, segments, record_path=None):
        super().__init__(switch, segments, record_path)
        self.chain = chain
        self.clock = None
        self.current = None

    def prepare(self):
        # Again after an outage: a switch started again keeps time from its start.
        self.clock = switch_clock.measure(self.switch)

    def reassert(self):
        if self.current:
            self.switch.modify(link_state_entries(self.current.error))

    def start_us(self, segment):
        return segment.start_us

    def write_at(self, instant, previous):
        # The entry holds one change: it replaces the previous one only once
        # that has surely taken over on the switch.
        return max(previous + self.clock.uncertainty_s, instant - STATE_LEAD_S)

    def write(self, segment, instant):
        state = self.chain.states[segment.state]
        current = self.current or state
        at_us = 0 if instant is None else self.clock.switch_us(instant)
        self.switch.modify(link_state_entries(current.error, state.error, at_us))
        self.current = state

    def row(self, segment):
        return timeline_row(segment)

    def latency_summary(self):
        summary = super().latency_summary()
        if summary:
            summary["clock_uncertainty_ms"] = self.clock.uncertainty_s * 1e3
        return summary


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
        self.current = {}   # direction -> its RateSegment in force

    def start_us(self, change):
        return change[1].start_us

    def write(self, change, instant):
        name, segment = change
        self.switch.modify([link_params_entry(self.profile, name, segment.rate_bps,
                                              segment.down)])
        self.current[name] = segment

    def reassert(self):
        self.switch.modify([link_params_entry(self.profile, name, s.rate_bps, s.down)
                            for name, s in self.current.items()])

    def row(self, change):
        name, segment = change
        return (segment.start_us, name, f"{segment.rate_bps or 0:.0f}", int(segment.down))
