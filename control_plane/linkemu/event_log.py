"""The per-packet event log, and its timing self-check.

Turned on per direction (the event_log table), the data plane reports every
packet that entered the link once, by a digest: when it is released at the
far end or dropped by the link (error after ARQ), or on arrival when it is
dropped there (loss model, RED, full router queue). An event carries the
packet's arrival, serialization start, requested release (due) and actual
release (the switch's clock when it let the packet go), all in the switch's
microseconds, with its ARQ retransmissions and flags. The EventRecorder
writes them to a CSV file as they stream in; read_events() reads it back.

The self-check: a released packet's release error is actual - requested; a
packet whose release overshot by more than the threshold is flagged (the
studies' emulator flagged 10 ms and discarded such runs).
"""

import csv
import statistics
import threading
from dataclasses import dataclass

from . import dataplane

DIGEST = "event_digest_t"
OUTCOMES = ("released", "drop_queue", "drop_aqm", "drop_loss_model", "drop_link_error")
FLAGS = {"marked": 1, "held": 2, "ahead": 4, "duplicate": 8, "corrupted": 16}
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


# event_t's member widths in FIELDS order (p4src/include/headers.p4): the
# digest sends the members end to end in one field, `event`.
FIELD_BITS = (32, 8, 32, 16, 48, 48, 48, 48, 8, 8)


def event_from_digest(members):
    """An Event of an event_digest_t digest's members."""
    packed = members["event"]
    values = []
    for bits in reversed(FIELD_BITS):
        values.append(packed & ((1 << bits) - 1))
        packed >>= bits
    direction, outcome, *rest = reversed(values)
    return Event(dataplane.DIRECTION_NAMES[direction], OUTCOMES[outcome], *rest)


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
                if direction not in dataplane.DIRECTION_IDS or outcome not in OUTCOMES:
                    raise ValueError
                events.append(Event(direction, outcome, *map(int, numbers)))
            except (TypeError, ValueError):
                raise ValueError(f"{path}, line {number}: not an event: {row!r}") from None
    return events


class EventRecorder:
    """Turns the log on for `directions` and writes every event to `path`
    until stop(); then turns it off and collects what was still buffered.

    Digests go to the primary client only: `switch` must stay primary (the
    link drivers share this connection)."""

    def __init__(self, switch, path, directions=tuple(dataplane.DIRECTION_IDS)):
        self.switch = switch
        self.path = path
        self.directions = directions
        self.count = 0
        self.error = None
        self.started = threading.Event()
        self.stopping = threading.Event()

    def run(self):
        try:
            self.switch.enable_digest(DIGEST)
            self.switch.sync_table(dataplane.EVENT_LOG,
                                   dataplane.event_log_entries(self.directions))
            self.started.set()
            with open(self.path, "w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(FIELDS)
                while not self.stopping.is_set():
                    self._write(writer, timeout=0.1)
                self.switch.sync_table(dataplane.EVENT_LOG, [])
                while self._write(writer, timeout=QUIET_S):
                    pass
            self.switch.disable_digest(DIGEST)
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
    counts = {d: dict.fromkeys(OUTCOMES, 0) for d in dataplane.DIRECTION_IDS}
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

    @property
    def passed(self):
        return not self.overshoots and not self.early

    def as_dict(self):
        return {"released": self.released, "error_p50_us": self.p50_us,
                "error_p99_us": self.p99_us, "error_max_us": self.max_us,
                "early": self.early, "overshoots": len(self.overshoots),
                "threshold_us": self.threshold_us, "passed": self.passed}


def check_timing(events, threshold_us=OVERSHOOT_US):
    """The release-time error distribution, and every overshoot past the threshold."""
    released = [e for e in events if e.released]
    errors = sorted(e.error_us for e in released)
    if not errors:
        return TimingCheck(0, None, None, None, 0, (), threshold_us)
    return TimingCheck(
        released=len(errors), p50_us=statistics.median(errors),
        p99_us=errors[min(len(errors) - 1, int(0.99 * len(errors)))], max_us=errors[-1],
        early=sum(1 for e in errors if e < 0),
        overshoots=tuple((e.direction, e.seq, e.error_us) for e in released
                         if e.error_us > threshold_us),
        threshold_us=threshold_us)
