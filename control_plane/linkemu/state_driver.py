"""Drives the link-state timeline on a switch in real time.

Every segment's error probabilities are written as the link_state table's
entries at the segment's scheduled instant; the write returns once BMv2 has
applied them, so the time from the scheduled instant to the write's return is
the latency with which the data plane follows the timeline.
"""

import csv
import statistics
import threading
import time
from dataclasses import dataclass

from . import dataplane
from .link_states import TIMELINE_FIELDS, timeline_row

# A timeline (replayable as it is) with when and how late each change applied.
RECORD_FIELDS = TIMELINE_FIELDS + ("applied_unix", "latency_ms")


@dataclass(frozen=True)
class Applied:
    segment: object
    applied_unix: float
    latency_s: float


def default_record_path(profile_name):
    """Where a run's applied timeline goes unless told otherwise."""
    return f"timeline-{profile_name}-{time.strftime('%Y%m%d-%H%M%S')}.csv"


class StateDriver:
    """Writes `segments` (an iterable of link_states.Segment) to `switch`."""

    def __init__(self, switch, chain, segments, record_path=None):
        self.switch = switch
        self.chain = chain
        self.segments = segments
        self.record_path = record_path
        self.applied = []
        self.error = None
        self.stopping = threading.Event()

    def run(self, duration_s=None):
        """Until the segments end, `duration_s` passes, or stop() is called.
        A failure to write ends the walk; it is kept in `error` and raised."""
        record = open(self.record_path, "w", newline="") if self.record_path else None
        writer = csv.writer(record) if record else None
        if writer:
            writer.writerow(RECORD_FIELDS)
        origin = time.monotonic()
        try:
            for segment in self.segments:
                start = segment.start_us / 1e6
                if duration_s is not None and start >= duration_s:
                    break
                if self.stopping.wait(max(0.0, origin + start - time.monotonic())):
                    break
                try:
                    dataplane.write_link_state(self.switch, self.chain.states[segment.state])
                except Exception as err:
                    self.error = err
                    raise
                latency = time.monotonic() - (origin + start)
                applied = Applied(segment, time.time(), latency)
                self.applied.append(applied)
                if writer:
                    writer.writerow(timeline_row(segment) + (
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
