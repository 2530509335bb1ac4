"""How closely the switch followed the link model, from two captures.

Captures taken on the switch's own interfaces (same clock) give each frame's
arrival at the link and its departure at the far end. Replaying the arrivals
through the model, with the data plane's own fixed-point arithmetic, gives the
instant each frame was due; the difference is the emulator's error.
"""

import statistics
from collections import defaultdict, deque
from dataclasses import dataclass, field

from scapy.utils import RawPcapReader

from ..program import constants as p4
from ..switch.codes import byte_cost_q
from ..switch.entries.cobalt import CobaltParams
from ..switch.entries.link_params import buffer_hold_us
from .aqm_model import CobaltState, ecn_capable, flow_queue_dues

ONE = 1 << p4.TIME_FRAC_BITS


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


def loss_bursts(lost):
    """Lengths of the runs of consecutive losses in a list of booleans."""
    bursts, run = [], 0
    for gone in list(lost) + [False]:
        if gone:
            run += 1
        elif run:
            bursts.append(run)
            run = 0
    return bursts


def _ceil_us(q):
    return -(-q // ONE)


L4_HEADER_BYTES = 8   # l4_h: the ports and one word; a frame cut shorter has no ports


def frame_fields(data):
    """(dscp, protocol, src port, dst port) of an Ethernet frame, as the
    parser sees them; None for what it does not parse."""
    ether_type = int.from_bytes(data[12:14], "big") if len(data) >= 14 else None
    if ether_type == 0x0800 and len(data) >= 34:
        dscp, protocol = data[15] >> 2, data[23]
        plain_first = data[14] & 0x0f == 5 and int.from_bytes(data[20:22], "big") & 0x1fff == 0
        l4 = 34 if plain_first else None
    elif ether_type == 0x86dd and len(data) >= 54:
        dscp, protocol, l4 = ((data[14] & 0x0f) << 2) | (data[15] >> 6), data[20], 54
    else:
        return None, None, None, None
    if l4 is None or protocol not in (6, 17) or len(data) < l4 + L4_HEADER_BYTES:
        return dscp, protocol, None, None
    return (dscp, protocol, int.from_bytes(data[l4:l4 + 2], "big"),
            int.from_bytes(data[l4 + 2:l4 + 4], "big"))


def frame_class(direction, data):
    """"priority" if the frame matches the direction's priority class."""
    if direction.priority is None:
        return "best_effort"
    fields = frame_fields(data)
    if fields[1] is None:
        return "best_effort"
    for match in direction.priority.match:
        wanted = (match.dscp, match.protocol, match.src_port, match.dst_port)
        if all(w is None or w == f for w, f in zip(wanted, fields)):
            return "priority"
    return "best_effort"


class _ClassQueue:
    """One class's router queue in the model."""

    def __init__(self, packets, octets, share, rate_bps):
        self.limit = packets
        self.byte_limit = octets
        self.share_cost = byte_cost_q(rate_bps * share) if share and rate_bps else 0
        self.free = 0        # its rate cap
        self.waiting = deque()  # (leave us, L3 length) of frames that leave it later

    def leave(self, now_us):
        while self.waiting and self.waiting[0][0] <= now_us:
            self.waiting.popleft()

    def full(self, l3_len, deferred):
        count = len(self.waiting) + len(deferred)
        octets = sum(n for _, n in self.waiting) + sum(d[1] for d in deferred)
        return count >= self.limit or (self.byte_limit is not None and
                                       octets + l3_len > self.byte_limit)


def model_due(arrivals, direction, marked=None):
    """Due instant (s) of each arriving frame, or None where the router queue
    drops it; arrivals are (timestamp s, frame) in arrival order. `marked`, a
    list, gets the index of each frame COBALT marks CE.

    A frame leaves its router queue once the link send buffer has room for
    it (link_clock.p4). With a priority class, best effort is non-preemptive
    strict priority: a best-effort frame leaves its queue when the buffer has
    room for it behind what the link and its rate cap still owe and no
    priority frame has claimed the link first."""
    if direction.isolates_flows:
        return flow_queue_dues(arrivals, direction, marked)
    cost = byte_cost_q(direction.rate_bps)
    buffer, hold_q = direction.send_buffer or 0, buffer_hold_us(direction) * ONE

    def leave_start(arrival_q, free, octets):
        leave_q = max(arrival_q, free + hold_q - max(0, buffer - octets) * cost)
        return leave_q, max(free, leave_q)
    priority = direction.priority
    queues = {"best_effort": _ClassQueue(direction.queue_packets, direction.queue_bytes,
                                         priority and priority.best_effort_share,
                                         direction.rate_bps)}
    if priority:
        queues["priority"] = _ClassQueue(priority.queue_packets, priority.queue_bytes,
                                         priority.share, direction.rate_bps)
    best_effort = queues["best_effort"]
    cobalt = direction.cobalt and CobaltState(CobaltParams.of(direction.cobalt, direction.rate_bps,
                                                          direction.overhead_bytes))
    late_drop = None   # (index, leave us, octets): COBALT drops it unless none waits behind
    link_free = 0
    deferred = deque()  # best effort waiting for a start: (arrival q, L3 length, octets, index)
    dues = [None] * len(arrivals)

    def start(queue, start_q, octets, index):
        nonlocal link_free
        link_free = start_q + octets * cost
        queue.free = start_q + octets * queue.share_cost
        dues[index] = (_ceil_us(link_free) + direction.delay_us) / 1e6

    def settle(now_q):
        while deferred:
            arrival_q, _, octets, index = deferred[0]
            leave_q, start_q = leave_start(arrival_q, max(link_free, best_effort.free), octets)
            if leave_q > now_q:
                return
            deferred.popleft()
            start(best_effort, start_q, octets, index)

    def spare(index, octets):
        # Its queue's last packet: it takes the link where the link is free.
        nonlocal link_free
        start_q = link_free
        link_free = start_q + octets * cost
        dues[index] = (_ceil_us(link_free) + direction.delay_us) / 1e6

    for index, frame in enumerate(arrivals):
        now_us = round(frame.ts * 1e6)
        now_q = now_us * ONE
        if late_drop and now_us >= late_drop[1]:
            spare(late_drop[0], late_drop[2])
            late_drop = None
        settle(now_q)
        queue = queues[frame_class(direction, frame.data)]
        for q in queues.values():
            q.leave(now_us)
        l3_len = max(frame.length - p4.ETH_HEADER_BYTES, 0)
        octets = l3_len + direction.overhead_bytes
        leave_q, start_q = leave_start(now_q, max(link_free, queue.free), octets)
        defer = priority is not None and queue is best_effort and (deferred or leave_q > now_q)
        waits = defer or leave_q > now_q
        if waits and queue.full(l3_len, deferred if queue is best_effort else ()):
            if cobalt:
                cobalt.overflow(now_us)
            continue
        if defer:
            deferred.append((now_q, l3_len, octets, index))
            continue
        if cobalt and not queue.waiting:
            cobalt.found_empty(now_us)
        if waits:
            late_drop = None   # one waits behind it now
            queue.waiting.append((_ceil_us(leave_q), l3_len))
        if cobalt:
            verdict = cobalt.leaves(now_us, _ceil_us(leave_q), ecn_capable(frame.data))
            if verdict == "mark" and marked is not None:
                marked.append(index)
            if verdict == "drop" and waits:
                late_drop = (index, _ceil_us(leave_q), octets)
                continue
        start(queue, start_q, octets, index)
    if late_drop:
        spare(late_drop[0], late_drop[2])
    settle(float("inf"))
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
    matched: list = field(default_factory=list)  # the departures of `errors`, in order

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
    errors, matched = [], []
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
            matched.append(frame)
    unexpected_drops = sum(1 for dues_left in pending.values() for d in dues_left
                           if d is not None)
    return Fidelity(errors=errors, delivered=len(errors) + unexpected_deliveries,
                    model_drops=sum(d is None for d in dues),
                    unexpected_drops=unexpected_drops,
                    unexpected_deliveries=unexpected_deliveries,
                    ambiguous=len(ambiguous), matched=matched)
