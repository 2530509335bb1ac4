"""The per-packet event log, and its timing self-check.

Turned on per direction (the event_log table), the data plane reports every
packet that entered the link once, or a random sample of them, by a digest: when it is released at the
far end or dropped by the link (error after ARQ), or on arrival when it is
dropped there (loss model, RED, full router queue). An event carries the
packet's arrival, serialization start, requested release (due) and actual
release (the switch's clock when it let the packet go), all in the switch's
microseconds, with its ARQ retransmissions and flags. The EventRecorder
writes them to a CSV file as they stream in; read_events() reads it back.

The self-check: a released packet's release error is actual - requested; a
packet whose release overshot by more than the threshold is flagged (the
studies' emulator flagged 10 ms and discarded such runs). It is the switch's
own account, and errs one way only: "actual" is the ingress pass that lets
the packet go, stamped with the freshest clock the data plane has there,
before BMv2's output queue and transmit thread, and "requested" runs from the
instant BMv2 took the packet in, after it reached the port. So the wire sees
at least the log's error, and under load several ms more (docs/event-log.md).
against_captures() sets the log beside captures, frame by frame.
"""

import csv
import statistics
import threading
from dataclasses import dataclass

from ..program import constants as p4
from ..switch.codes import DIRECTION_IDS, DIRECTION_NAMES
from ..switch.entries.event_log import event_log_entries
from .fidelity import model_due

DIGEST = "event_digest_t"
OUTCOMES = tuple(p4.EVENT_OUTCOMES)   # by value
FLAGS = p4.EVENT_FLAGS
FIELDS = ("direction", "outcome", "seq", "length", "arrival_us", "start_us", "due_us",
          "event_us", "retx", "flags")
OVERSHOOT_US = 10_000
QUIET_S = 0.5   # after the log is turned off, digests still in the switch's buffers


@dataclass(frozen=True)
class Event:
    direction: str
    outcome: str
    seq: int
    length: int        # L3 bytes
    arrival_us: int
    start_us: int      # 0 when dropped before its start was known
    due_us: int        # requested release
    event_us: int      # actual release, or the drop
    retx: int
    flags: int

    @property
    def released(self):
        return self.outcome == "released"

    @property
    def error_us(self):
        """Actual - requested release, for a released packet."""
        return self.event_us - self.due_us

    def has(self, flag):
        return bool(self.flags & FLAGS[flag])

    def row(self):
        return tuple(getattr(self, name) for name in FIELDS)


def event_from_digest(members):
    """An Event of an event_digest_t digest's members."""
    packed = members["event"]
    values = []
    # The digest sends event_t's members end to end in one field, `event`.
    for bits in reversed(p4.EVENT_FIELD_BITS):
        values.append(packed & ((1 << bits) - 1))
        packed >>= bits
    direction, outcome, *rest = reversed(values)
    return Event(DIRECTION_NAMES[direction], OUTCOMES[outcome], *rest)


def read_events(path):
    """The events of a log file, in the order they were written."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = tuple(next(reader, ()))
        if header != FIELDS:
            raise ValueError(f"{path}: not an event log (header {','.join(header)!r})")
        events = []
        for number, row in enumerate(reader, 2):
            try:
                direction, outcome, *numbers = row
                if direction not in DIRECTION_IDS or outcome not in OUTCOMES:
                    raise ValueError
                events.append(Event(direction, outcome, *map(int, numbers)))
            except (TypeError, ValueError):
                raise ValueError(f"{path}, line {number}: not an event: {row!r}") from None
    return events


class EventRecorder:
    """Turns the log on for `directions` (every packet, or a random `sample`
    of them) and writes every event to `path` until stop(); then turns it
    off (the event_log table: the digest stays enabled) and collects what
    was still buffered.

    Digests go to the primary client only: `switch` must stay primary (the
    link drivers share this connection)."""

    def __init__(self, switch, path, directions=tuple(DIRECTION_IDS), sample=1.0):
        self.switch = switch
        self.path = path
        self.directions = directions
        self.sample = sample
        self.count = 0
        self.error = None
        self.started = threading.Event()
        self.stopping = threading.Event()

    def run(self):
        try:
            self.switch.enable_digest(DIGEST)
            self.switch.sync_table(p4.TABLE_EVENT_LOG,
                                   event_log_entries(self.directions, self.sample))
            self.started.set()
            with open(self.path, "w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(FIELDS)
                while not self.stopping.is_set():
                    self._write(writer, timeout=0.1)
                self.switch.sync_table(p4.TABLE_EVENT_LOG, [])
                while self._write(writer, timeout=QUIET_S):
                    pass
        except Exception as err:
            self.error = err
            raise
        finally:
            self.started.set()

    def _write(self, writer, timeout):
        digests = self.switch.next_digests(DIGEST, timeout)
        for members in digests:
            writer.writerow(event_from_digest(members).row())
        self.count += len(digests)
        return len(digests)

    def stop(self):
        self.stopping.set()


def outcomes(events):
    """{direction: {outcome: packets}}, every outcome present."""
    counts = {d: dict.fromkeys(OUTCOMES, 0) for d in DIRECTION_IDS}
    for event in events:
        counts[event.direction][event.outcome] += 1
    return counts


@dataclass(frozen=True)
class TimingCheck:
    released: int
    p50_us: float | None
    p99_us: float | None
    max_us: int | None
    early: int           # released before they were due (never expected)
    overshoots: tuple    # (direction, seq, error_us) over the threshold
    threshold_us: int
    within: float = 1.0  # the share of released packets the threshold must hold

    @property
    def passed(self):
        allowed = int((1 - self.within) * self.released + 1e-9)
        return len(self.overshoots) <= allowed and not self.early

    def as_dict(self):
        return {"released": self.released, "error_p50_us": self.p50_us,
                "error_p99_us": self.p99_us, "error_max_us": self.max_us,
                "early": self.early, "overshoots": len(self.overshoots),
                "threshold_us": self.threshold_us, "within": self.within,
                "passed": self.passed}


def check_timing(events, threshold_us=OVERSHOOT_US, within=1.0):
    """The release-time error distribution, and every overshoot past the
    threshold: the check passes when no packet was released early and
    `within` of them (all by default) no later than the threshold."""
    released = [e for e in events if e.released]
    errors = sorted(e.error_us for e in released)
    if not errors:
        return TimingCheck(0, None, None, None, 0, (), threshold_us, within)
    return TimingCheck(
        released=len(errors), p50_us=statistics.median(errors),
        p99_us=errors[min(len(errors) - 1, int(0.99 * len(errors)))], max_us=errors[-1],
        early=sum(1 for e in errors if e < 0),
        overshoots=tuple((e.direction, e.seq, e.error_us) for e in released
                         if e.error_us > threshold_us),
        threshold_us=threshold_us, within=within)


# The self-check against captures -------------------------------------------
#
# The log's times are the switch's clock (microseconds since it started, on
# the host's real-time clock); captures on the switch's interfaces are the
# kernel's, the same clock less the switch's start. A frame is captured
# coming in before the switch takes it in, and the log's release comes
# before the frame is captured going out, so the start lies between the
# latest (captured arrival - logged arrival) and the earliest (captured
# departure - logged release).

GAP_COST_S = 3600.0     # a frame of either side left unmatched (see match_arrivals)
EARLY_TOLERANCE_S = 50e-6   # a logged arrival this much before its capture still pairs


def _pick(ordered, p):
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def _align(events, arrivals, offset_s, band):
    """The least-cost monotone pairing of events with captured arrivals, both
    [(L3 length, arrival s)] in arrival order: (cost, [(event index, arrival
    index)]). A pair costs the time the switch took to take the frame in (its
    logged arrival + `offset_s` - its captured arrival); a pair that has the
    switch take the frame in before it came (by more than
    EARLY_TOLERANCE_S), or frames of different lengths, never pair; a frame
    of either side left unmatched costs GAP_COST_S, more than any sum of
    such times in a run: the pairing has as many pairs as any, and of those
    the shortest times to take the frames in."""
    n, m = len(events), len(arrivals)
    band = max(band, abs(n - m)) + 1
    inf = float("inf")
    cost = {(0, 0): 0.0}
    step = {}
    for i in range(n + 1):
        for j in range(max(0, i - band), min(m, i + band) + 1):
            if i == j == 0:
                continue
            best, move = inf, None
            if i and j and events[i - 1][0] == arrivals[j - 1][0]:
                taken = events[i - 1][1] + offset_s - arrivals[j - 1][1]
                if taken >= -EARLY_TOLERANCE_S:
                    best, move = cost.get((i - 1, j - 1), inf) + max(0.0, taken), "pair"
            if i and cost.get((i - 1, j), inf) + GAP_COST_S < best:
                best, move = cost[i - 1, j] + GAP_COST_S, "event"
            if j and cost.get((i, j - 1), inf) + GAP_COST_S < best:
                best, move = cost[i, j - 1] + GAP_COST_S, "arrival"
            if move:
                cost[i, j], step[i, j] = best, move
    pairs, i, j = [], n, m
    while i or j:
        move = step[i, j]
        if move == "pair":
            pairs.append((i - 1, j - 1))
        i -= move != "arrival"
        j -= move != "event"
    return cost[n, m], pairs[::-1]


def match_arrivals(events, arrivals, band=8):
    """Pairs a direction's events with the frames captured entering the
    switch: (pairs [(event, frame)], offset s: the most of captured - logged
    arrival over the pairs, the frame the switch took in soonest).

    Both sides keep arrival order (the switch takes frames in from its
    interface in order), so the pairing is monotone: in order, equal L3
    lengths, with frames of either side left out where the other has none (a
    frame the switch never took in, another host's frame the captures leave
    out). The switch takes a frame in after it came, at once or, when its
    threads wait for the core, tens of ms later; never before. Which offset
    between the clocks that leaves is not known beforehand: each shift of
    the two sides by up to `band` frames proposes some, the pairing is
    worked out for each, and the cheapest kept. (One frame missing from each
    side with none between them pairs the two that remain.)"""
    events = sorted(events, key=lambda e: (e.arrival_us, e.seq))
    frames = sorted(arrivals, key=lambda f: f.ts)
    if not events or not frames:
        return [], None
    ev = [(e.length, e.arrival_us / 1e6) for e in events]
    fr = [(f.length - p4.ETH_HEADER_BYTES, f.ts) for f in frames]
    band = band + abs(len(ev) - len(fr))
    offsets = set()
    for shift in range(-band, band + 1):
        deltas = sorted(fr[i + shift][1] - ev[i][1] for i in range(max(0, -shift), len(ev))
                        if 0 <= i + shift < len(fr) and fr[i + shift][0] == ev[i][0])
        if deltas:
            offsets.update(round(_pick(deltas, p), 6) for p in (50, 90, 100))
    best = min((_align(ev, fr, offset, band) for offset in sorted(offsets)),
               key=lambda result: result[0])
    if not best[1]:
        return [], None
    offset = max(fr[j][1] - ev[i][1] for i, j in best[1])
    pairs = _align(ev, fr, offset, band)[1]
    return [(events[i], frames[j]) for i, j in pairs], offset


@dataclass(frozen=True)
class LoggedFrame:
    """A frame in the log and in the captures: its event, its captured
    arrival and departure (None: it never left), and the model's due for it
    from the captured arrivals (None: the model drops it), all in seconds."""

    event: Event
    arrival_s: float
    departure_s: float | None
    model_due_s: float | None

    @property
    def compared(self):
        return (self.event.released and self.departure_s is not None
                and self.model_due_s is not None)

    @property
    def log_error_s(self):
        return self.event.error_us / 1e6

    @property
    def capture_error_s(self):
        return self.departure_s - self.model_due_s

    @property
    def difference_s(self):
        """The captures' error less the log's: what the log does not see."""
        return self.capture_error_s - self.log_error_s


@dataclass(frozen=True)
class CaptureCheck:
    """The log's self-check against captures, frame by frame on the same frames."""

    frames: tuple          # LoggedFrame, in arrival order
    events: int            # the direction's events
    arrivals: int          # frames captured entering
    offset_s: float | None  # captured - logged arrival of the frame taken in soonest
    threshold_us: int

    @property
    def compared(self):
        return [f for f in self.frames if f.compared]

    def clock_bounds(self):
        """(earliest, latest) switch start on the capture clock that every
        frame allows: taken in after it was captured coming in, released by
        the log before it was captured going out. earliest > latest: the
        log contradicts the captures."""
        earliest = max((f.arrival_s - (f.event.arrival_us + 1) / 1e6 for f in self.frames),
                       default=None)
        released = [f for f in self.frames if f.event.released and f.departure_s is not None]
        latest = min((f.departure_s - f.event.event_us / 1e6 for f in released), default=None)
        return earliest, latest

    def summary(self):
        compared = self.compared
        out = {"events": self.events, "arrivals": self.arrivals, "matched": len(self.frames),
               "compared": len(compared), "threshold_ms": self.threshold_us / 1e3}
        if not compared:
            return out
        ms = lambda values, p: _pick(sorted(values), p) * 1e3  # noqa: E731
        log = [f.log_error_s for f in compared]
        cap = [f.capture_error_s for f in compared]
        diff = [f.difference_s for f in compared]
        limit = self.threshold_us / 1e6
        earliest, latest = self.clock_bounds()
        # On the capture clock placed by the earliest start (the frame taken
        # in soonest after its capture counts as taken in at once): the
        # difference is the way out (logged release to captured departure)
        # plus how much later the switch's due is than the model's.
        taken_in = [f.event.arrival_us / 1e6 + earliest - f.arrival_s for f in compared]
        to_wire = [f.departure_s - (f.event.event_us / 1e6 + earliest) for f in compared]
        due_later = [f.event.due_us / 1e6 + earliest - f.model_due_s for f in compared]
        out.update({
            "log_p50_ms": ms(log, 50), "log_p99_ms": ms(log, 99), "log_max_ms": max(log) * 1e3,
            "capture_p50_ms": ms(cap, 50), "capture_p99_ms": ms(cap, 99),
            "capture_max_ms": max(cap) * 1e3,
            "difference_p1_ms": ms(diff, 1), "difference_p50_ms": ms(diff, 50),
            "difference_p99_ms": ms(diff, 99),
            "abs_difference_p99_ms": ms([abs(d) for d in diff], 99),
            "abs_difference_max_ms": max(abs(d) for d in diff) * 1e3,
            "taken_in_p50_ms": ms(taken_in, 50), "taken_in_p99_ms": ms(taken_in, 99),
            "to_wire_p50_ms": ms(to_wire, 50), "to_wire_p99_ms": ms(to_wire, 99),
            "to_wire_max_ms": max(to_wire) * 1e3,
            "due_later_p1_ms": ms(due_later, 1), "due_later_p50_ms": ms(due_later, 50),
            "due_later_p99_ms": ms(due_later, 99),
            "consistent": latest is None or earliest <= latest,
            "over_threshold": {
                "log": sum(e > limit for e in log), "captures": sum(c > limit for c in cap),
                "both": sum(e > limit and c > limit for e, c in zip(log, cap))}})
        return out


def against_captures(events, arrivals, departures, direction, name="downlink",
                     threshold_us=OVERSHOOT_US):
    """The log's release error beside the captures' on the same frames.

    `events`: the log's (every direction; `name`'s are used); `arrivals` and
    `departures`: fidelity.Frames captured on the switch's interfaces, in and
    out; `direction`: the profile's Direction, whose model gives each
    captured arrival its due (as fidelity.compare does). Departures are
    matched to arrivals by content; contents seen more than once are left
    out (their departure is None)."""
    arrivals = sorted(arrivals, key=lambda f: f.ts)
    dues = dict(zip(map(id, arrivals), model_due(arrivals, direction)))
    seen = {}
    for f in arrivals:
        seen[f.data, f.length] = seen.get((f.data, f.length), 0) + 1
    left = {}
    for f in departures:
        left.setdefault((f.data, f.length), f.ts)
    mine = [e for e in events if e.direction == name]
    pairs, offset = match_arrivals(mine, arrivals)
    frames = tuple(LoggedFrame(e, f.ts, left.get((f.data, f.length))
                               if seen[f.data, f.length] == 1 else None, dues[id(f)])
                   for e, f in pairs)
    return CaptureCheck(frames, len(mine), len(arrivals), offset, threshold_us)
