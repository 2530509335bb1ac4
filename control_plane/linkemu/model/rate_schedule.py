"""A direction's rate over time: scheduled steps, outages, Mahimahi traces.

The controller steps the rate: at each change's instant the RateDriver
rewrites the direction's link_params entry (rate, or the link down for an
outage). The data plane makes the change reach the packets already queued:
every best-effort packet of such a direction is deferred
(p4src/include/control/best_effort.p4), so it is serialized at the rate in
force when it leaves the queue, not the one when it arrived; during an
outage nothing starts, packets queue up to the queue's limit, and the queue
drains at the next rate. What it cannot follow: unlike a link state, which
is written ahead with its instant on the switch's clock, a change lands when
its P4Runtime write returns (about 2-3 ms after its instant here), and the
packet being serialized at that moment finishes at the old rate.

In a profile's direction:

    rate_changes:                    # in time order
      - {at: 10s, rate: 2Mbit}
      - {at: 20s, outage: 1500ms}    # nothing sent for 1.5 s, then the rate before
    rate_trace: {file: lte.down, window: 10ms}     # or this

A Mahimahi trace lists the millisecond of each 1500-byte delivery
opportunity, one per line, non-decreasing, and repeats after its last line.
The controller turns it into a rate per window (opportunities in the window
x 1500 B x 8 / window); a window without any opportunity is an outage.
"""

import bisect
import itertools
import math
from dataclasses import dataclass
from pathlib import Path

from .fields import TIME_JSON, Kind, shown
from .files import read_text
from .units import format_rate, format_time_us, parse_time_us

OPPORTUNITY_BYTES = 1500     # Mahimahi's delivery opportunity
MIN_WINDOW_MS = 5            # a few P4Runtime writes' latency
DEFAULT_WINDOW_MS = 10
MAX_TRACE_BYTES = 32 << 20   # Mahimahi's longest traces are a few MB
MAX_TRACE_MS = 365 * 24 * 3600 * 1000


@dataclass(frozen=True)
class RateSegment:
    """From `start_us` on, the direction sends at `rate_bps`, or not at all."""

    start_us: int
    rate_bps: float | None   # None: unlimited
    down: bool = False


def _changes(segments):
    """The segments that change the rate or the link's state, in order."""
    previous = None
    for segment in segments:
        if previous is None or (segment.rate_bps, segment.down) != previous:
            yield segment
        previous = (segment.rate_bps, segment.down)


@dataclass(frozen=True)
class RateSteps:
    """Scheduled changes: (at_us, rate_bps) steps and (at_us, duration_us) outages."""

    steps: tuple
    outages: tuple

    def segments(self, base_rate_bps):
        """Every change in time order, starting from the profile's rate."""
        bounds = sorted({0} | {at for at, _ in self.steps}
                        | {t for at, length in self.outages for t in (at, at + length)})

        def at(t):
            rate = next((r for start, r in reversed(self.steps) if start <= t), base_rate_bps)
            down = any(start <= t < start + length for start, length in self.outages)
            return RateSegment(t, rate, down)

        return _changes(at(t) for t in bounds)

    def describe(self):
        parts = [(at, f"{format_rate(r) if r else 'unlimited'} at {format_time_us(at)}")
                 for at, r in self.steps]
        parts += [(at, f"outage of {format_time_us(length)} at {format_time_us(at)}")
                  for at, length in self.outages]
        return "rate changes: " + ", ".join(text for _, text in sorted(parts))


@dataclass(frozen=True)
class RateTrace:
    """A Mahimahi trace: opportunity milliseconds, sorted; repeats with `period_ms`."""

    path: str
    opportunities_ms: tuple
    window_ms: int

    @property
    def period_ms(self):
        return self.opportunities_ms[-1]

    def opportunities_before(self, ms):
        """Opportunities at instants t + k x period (k >= 0) earlier than `ms`."""
        laps, rest = divmod(ms, self.period_ms)
        count = laps * len(self.opportunities_ms) + bisect.bisect_left(self.opportunities_ms,
                                                                       rest)
        if rest == 0 and laps > 0:
            # The last line's opportunity of lap `laps` falls exactly on `ms`.
            count -= self.opportunities_ms.count(self.period_ms)
        return count

    def mean_rate_bps(self):
        return len(self.opportunities_ms) * OPPORTUNITY_BYTES * 8 / (self.period_ms / 1e3)

    def window_rate_bps(self, index):
        """The rate of window `index`, 0 for a window without opportunities."""
        start = index * self.window_ms
        count = self.opportunities_before(start + self.window_ms) - \
            self.opportunities_before(start)
        return count * OPPORTUNITY_BYTES * 8 / (self.window_ms / 1e3)

    def segments(self, base_rate_bps=None):
        """Endless: the trace repeats; unless its windows come to have one
        rate, when the changes end there (a search for the next would not)."""
        def window(index):
            rate = self.window_rate_bps(index)
            return RateSegment(index * self.window_ms * 1000, rate or None, rate == 0)

        # From the first window after the trace's first period on, the windows
        # repeat after the least common multiple of the two lengths.
        steady = -(-self.period_ms // self.window_ms)
        lap = math.lcm(self.period_ms, self.window_ms) // self.window_ms
        rate = self.window_rate_bps(steady)
        varies = any(self.window_rate_bps(i) != rate for i in range(steady + 1, steady + lap))
        return _changes(map(window, itertools.count() if varies else range(steady + 1)))

    def describe(self):
        return (f"rate trace {Path(self.path).name} (mean {format_rate(self.mean_rate_bps())}, "
                f"period {self.period_ms} ms, {self.window_ms} ms windows)")


def read_trace_file(path):
    """Opportunity milliseconds of a Mahimahi trace, or ValueError saying where."""
    try:
        lines = read_text(path, MAX_TRACE_BYTES).splitlines()
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    times = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            ms = int(line.strip())
        except ValueError:
            raise ValueError(f"{path}, line {number}: {shown(line.strip())} is not a whole "
                             "number of milliseconds") from None
        if not 0 <= ms <= MAX_TRACE_MS:
            raise ValueError(f"{path}, line {number}: {shown(ms)} is out of range; allowed 0 "
                             f"to {MAX_TRACE_MS} ms (a year)")
        if times and ms < times[-1]:
            raise ValueError(f"{path}, line {number}: {ms} comes after {times[-1]}; "
                             "a trace's milliseconds never decrease")
        times.append(ms)
    if not times:
        raise ValueError(f"{path}: empty; a trace needs at least one opportunity")
    if times[-1] == 0:
        raise ValueError(f"{path}: the last opportunity is at 0 ms; a trace repeats after "
                         "its last line, so that must be later than 0")
    return tuple(times)


def _window_ms(value):
    us = parse_time_us(value)
    if us % 1000:
        raise ValueError("expected whole milliseconds, a trace's resolution")
    if us < MIN_WINDOW_MS * 1000:
        raise ValueError(f"too short; at least {MIN_WINDOW_MS}ms, a few P4Runtime writes")
    return us // 1000


window_ms = Kind(_window_ms, f"whole milliseconds, {MIN_WINDOW_MS}ms or more", TIME_JSON)


def read_rate_changes(section):
    """The `rate_changes` list of a direction section, or None if absent."""
    if "rate_changes" not in section.data:
        return None
    entries = section.entries("rate_changes", "expected a list of changes, e.g. "
                              "[{at: 10s, rate: 2Mbit}, {at: 20s, outage: 1s}]")
    if not entries:
        return None
    steps, outages = [], []
    busy_until = -1
    for entry in entries:
        at = entry.field("at")
        step_rate = entry.field("rate")
        length = entry.field("outage")
        entry.reject_unknown()
        if ("rate" in entry.data) == ("outage" in entry.data):
            entry.problems.append(f"{entry.path}: give either rate or outage")
            continue
        if at is None:
            continue
        if at <= busy_until:
            entry.problems.append(f"{entry.path}.at: {format_time_us(at)} is not after the "
                                  "change before it (or that outage's end)")
        if "rate" in entry.data:
            steps.append((at, step_rate))
            busy_until = at
        elif length is not None:
            outages.append((at, length))
            busy_until = at + length - 1
    return RateSteps(tuple(steps), tuple(outages))


def read_rate_trace(section, base_dir):
    """The `rate_trace` section of a direction section, or None if absent."""
    if section is None:
        return None
    file = section.field("file")
    window = section.field("window")
    section.reject_unknown()
    if file is None:
        return None
    path = Path(base_dir) / file
    try:
        opportunities = read_trace_file(path)
    except ValueError as err:
        section.problem(section.sub_path("file"), file, str(err))
        return None
    return RateTrace(str(path), opportunities, window)
