"""How closely the switch followed the link model, from two captures.

Captures taken on the switch's own interfaces (same clock) give each frame's
arrival at the link and its departure at the far end. Replaying the arrivals
through the model, with the data plane's own fixed-point arithmetic, gives the
instant each frame was due; the difference is the emulator's error.
"""

import statistics
from collections import defaultdict, deque
from dataclasses import dataclass

from scapy.utils import RawPcapReader

from .dataplane import ETH_HEADER_BYTES, TIME_FRAC_BITS, byte_cost_q

ONE = 1 << TIME_FRAC_BITS


@dataclass(frozen=True)
class Frame:
    """A captured frame: when, its captured bytes (which identify it), its
    length on the wire."""

    ts: float
    data: bytes
    length: int


def read_frames(path):
    """The frames of a pcap file, in capture order."""
    return [Frame(meta.sec + meta.usec / 1e6, bytes(data), meta.wirelen)
            for data, meta in RawPcapReader(str(path))]


def _ceil_us(q):
    return -(-q // ONE)


def model_due(arrivals, direction):
    """Due instant (s) of each arriving frame, or None where the router queue
    drops it; arrivals are (timestamp s, frame) in arrival order."""
    cost = byte_cost_q(direction.rate_bps)
    free = 0
    waiting = deque()  # start instants (us) of queued frames
    dues = []
    for frame in arrivals:
        now_us = round(frame.ts * 1e6)
        now_q = now_us * ONE
        while waiting and waiting[0] <= now_us:
            waiting.popleft()
        start = max(now_q, free)
        if start > now_q and len(waiting) >= direction.queue_packets:
            dues.append(None)
            continue
        l3_len = max(frame.length - ETH_HEADER_BYTES, 0)
        free = start + (l3_len + direction.overhead_bytes) * cost
        if start > now_q:
            waiting.append(_ceil_us(start))
        dues.append((_ceil_us(free) + direction.delay_us) / 1e6)
    return dues


@dataclass
class Fidelity:
    """Release errors (actual - due, seconds) of the frames of one direction."""

    errors: list
    delivered: int
    model_drops: int
    unexpected_drops: int  # the model delivers them, the switch did not
    unexpected_deliveries: int  # the model drops them, the switch did not
    ambiguous: int = 0  # distinct contents seen more than once, left out

    def percentile(self, p):
        ordered = sorted(self.errors)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]

    def summary(self):
        if not self.errors:
            return {"delivered": 0}
        return {
            "delivered": self.delivered,
            "p50_ms": self.percentile(50) * 1e3,
            "p99_ms": self.percentile(99) * 1e3,
            "max_ms": max(self.errors) * 1e3,
            "min_ms": min(self.errors) * 1e3,
            "mean_ms": statistics.mean(self.errors) * 1e3,
            "model_drops": self.model_drops,
            "unexpected_drops": self.unexpected_drops,
            "unexpected_deliveries": self.unexpected_deliveries,
            "ambiguous": self.ambiguous,
        }


def compare(arrivals, departures, direction):
    """Matches departures to arrivals by content and measures each delivered
    frame's error against the model. Frames whose content arrived more than
    once (e.g. repeated IPv6 solicitations) cannot be matched and are left out."""
    dues = model_due(arrivals, direction)
    pending = defaultdict(deque)
    for frame, due in zip(arrivals, dues):
        pending[frame.data, frame.length].append(due)
    ambiguous = {key for key, queue in pending.items() if len(queue) > 1}
    for key in ambiguous:
        del pending[key]
    errors = []
    unexpected_deliveries = 0
    for frame in departures:
        queue = pending.get((frame.data, frame.length))
        if not queue:
            continue  # ambiguous, or not from these arrivals (e.g. before the capture)
        due = queue.popleft()
        if due is None:
            unexpected_deliveries += 1
        else:
            errors.append(frame.ts - due)
    unexpected_drops = sum(1 for dues_left in pending.values() for d in dues_left
                           if d is not None)
    return Fidelity(errors=errors, delivered=len(errors) + unexpected_deliveries,
                    model_drops=sum(d is None for d in dues),
                    unexpected_drops=unexpected_drops,
                    unexpected_deliveries=unexpected_deliveries,
                    ambiguous=len(ambiguous))
