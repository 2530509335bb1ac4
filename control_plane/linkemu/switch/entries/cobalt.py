"""Cobalt (Cake's AQM, in the router): each queue's parameters, as Cake
derives them from the profile's target and interval and the link's rate,
and CoDel's control law over the count, which every queue shares."""

import bisect
import functools
import math
from dataclasses import dataclass

from ...program import constants as p4
from ..codes import DIRECTION_IDS
from ..entities import Lpm, Range, TableEntry
from .queue_params import class_queues

Q32 = 1 << 32
EXACT_COUNTS = 128      # counts below it are exact in the law's tables
HOST_LOADS = p4.FQ_SHARE_SIZE // p4.NUM_DIRECTIONS   # bulk flows of a host the shares cover
STEPS_PER_DOUBLING = 8  # above, a count is rounded down to 1 of 8 per power of two
ZETA_HALF = -1.4603545088095868   # zeta(1/2): the sum of 1/sqrt(j) for j <= n,
                                  # 2 sqrt(n) + zeta(1/2) + 1 / (2 sqrt(n)) - ...


@dataclass(frozen=True)
class CobaltParams:
    """One queue's COBALT, in microseconds, as Cake sets it for the link's
    rate: the target is at least 1.5 frames' serialization, the interval grows
    by what the target grew, and a sojourn counts as above target only beyond
    4 frames' serialization too."""

    target_us: int
    interval_us: int
    threshold_us: int
    ecn: bool

    @classmethod
    def of(cls, cobalt, rate_bps, overhead_bytes):
        mtu_time_us = (cobalt.mtu + overhead_bytes) * 8 / rate_bps * 1e6
        target = max(cobalt.target_us, 1.5 * mtu_time_us)
        interval = max(cobalt.interval_us + target - cobalt.target_us, 2 * target)
        return cls(target_us=round(target), interval_us=round(interval),
                   threshold_us=round(max(target, 4 * mtu_time_us)), ecn=cobalt.ecn)

    def per_interval_q32(self):
        return round(Q32 / self.interval_us)


def inv_sqrt_q32(count):
    """1/sqrt(count) in Q.32, as Cake keeps it (counts 0 and 1: just under 1)."""
    return Q32 - 1 if count < 2 else min(Q32 - 1, round(Q32 / math.sqrt(count)))


@functools.cache
def law_sum_q16(count):
    """The sum of 1/sqrt(j) for j < count, in Q.16: how many intervals the
    decay from `count` to 0 takes."""
    if count <= EXACT_COUNTS:
        return sum(inv_sqrt_q32(j) for j in range(count)) >> 16
    n = count - 1
    harmonic = 2 * math.sqrt(n) + ZETA_HALF + 1 / (2 * math.sqrt(n)) - 1 / (24 * n ** 1.5)
    return round((1 + harmonic) * (1 << 16))


@functools.cache
def count_grid():
    """[(count, prefix length)]: the counts the law's tables hold, each
    standing for the counts its prefix covers."""
    grid = [(c, 32) for c in range(EXACT_COUNTS)]
    shift = int(math.log2(STEPS_PER_DOUBLING))
    for k in range(int(math.log2(EXACT_COUNTS)), 32):
        step = 1 << (k - shift)
        grid += [((1 << k) + i * step, 32 - (k - shift)) for i in range(STEPS_PER_DOUBLING)]
    return grid


def grid_count(count):
    """The count the law's tables use for `count`."""
    for value, prefix in reversed(count_grid()):
        if count >> (32 - prefix) == value >> (32 - prefix):
            return value
    raise ValueError(count)


@functools.cache
def _decay_points():
    """([grid count], [its sum]) from the second grid count on."""
    counts = [count for count, _ in count_grid()][1:]
    return counts, [law_sum_q16(count) for count in counts]


def decay_end(left_q16):
    """The count the decay ends at, with `left_q16` of the sum left (the
    largest grid count whose sum lies below it; 0 below the first)."""
    counts, sums = _decay_points()
    i = bisect.bisect_left(sums, left_q16) - 1
    return counts[i] if i >= 0 else 0


# The two COBALTs: on arrival for one FIFO queue, when a flow queue is
# served for flow isolation. (params, law, decay) tables and actions of each.
INSTANCES = (
    ((p4.TABLE_ROUTER_COBALT_COBALT_COBALT_PARAMS, p4.ACTION_ROUTER_COBALT_COBALT_SET_COBALT),
     (p4.TABLE_ROUTER_COBALT_COBALT_COBALT_LAW, p4.ACTION_ROUTER_COBALT_COBALT_LAW),
     (p4.TABLE_ROUTER_COBALT_COBALT_COBALT_DECAY, p4.ACTION_ROUTER_COBALT_COBALT_DECAY_TO)),
    ((p4.TABLE_FLOW_STEP_COBALT_COBALT_PARAMS, p4.ACTION_FLOW_STEP_COBALT_SET_COBALT),
     (p4.TABLE_FLOW_STEP_COBALT_COBALT_LAW, p4.ACTION_FLOW_STEP_COBALT_LAW),
     (p4.TABLE_FLOW_STEP_COBALT_COBALT_DECAY, p4.ACTION_FLOW_STEP_COBALT_DECAY_TO)),
)


def cobalt_law_entries(table, action):
    return [TableEntry(table, {"count": Lpm(count, prefix)}, action,
                       {"prev_inv_sqrt_q32": inv_sqrt_q32(max(count - 1, 0)),
                        "inv_sqrt_q32": inv_sqrt_q32(count),
                        "next_inv_sqrt_q32": inv_sqrt_q32(count + 1),
                        "sum_q16": law_sum_q16(count)})
            for count, prefix in count_grid()]


def cobalt_decay_entries(table, action):
    """Where the decay from a count ends: at the largest grid count whose sum
    lies below what is left (the default, below the first: at rest)."""
    counts, sums = _decay_points()
    uppers = sums[1:] + [2**64 - 1]
    return [TableEntry(table, {"sum_q16": Range(low + 1, high)}, action,
                       {"count": count, "sum_q16": low}, priority=1)
            for count, low, high in zip(counts, sums, uppers)]


def cobalt_queues(profile, flows):
    """[(queue, CobaltParams)] of every router queue COBALT watches, with
    flow isolation or (`flows` false) without."""
    return [(q, CobaltParams.of(d.cobalt, d.rate_bps, d.overhead_bytes))
            for q in class_queues(profile) if q.cls == "best_effort"
            for d in [profile.directions()[q.direction]]
            if d.cobalt and d.isolates_flows == flows]


def cobalt_entries(profile, generation=0):
    """{table: entries} of both COBALTs: the law's tables only where a queue
    has that one. State of another `generation` reads as a new queue's."""
    tables = {}
    for (params, law, decay), flows in zip(INSTANCES, (False, True)):
        entries = [TableEntry(params[0], q.key(), params[1],
                              {"target_us": c.target_us, "threshold_us": c.threshold_us,
                               "interval_us": c.interval_us,
                               "per_interval_q32": c.per_interval_q32(), "ecn": int(c.ecn),
                               "generation": generation})
                   for q, c in cobalt_queues(profile, flows)]
        tables[params[0]] = entries
        tables[law[0]] = cobalt_law_entries(*law) if entries else []
        tables[decay[0]] = cobalt_decay_entries(*decay) if entries else []
    return tables


def share(quantum, load):
    """A flow's quantum shared by its hosts' `load`, as Cake's quantum_div."""
    return (quantum * (65535 // load)) >> 16


def flow_queue_entries(profile):
    """{table: entries} of a direction with flow isolation: its DRR quantum
    (the profile's, or a frame of the MTU on the link) and, for
    triple-isolate, that quantum's
    share by host load in both controls that refill a flow."""
    params, shares = [], []
    for name, d in profile.directions().items():
        if not d.isolates_flows:
            continue
        quantum = d.cobalt.quantum(d.overhead_bytes)
        hosts = d.cobalt.isolation == "triple-isolate"
        params.append(TableEntry(p4.TABLE_FQ_PARAMS, {"dir": DIRECTION_IDS[name]},
                                 p4.ACTION_SET_QUANTUM, {"quantum": quantum, "hosts": int(hosts)}))
        if hosts:
            shares += [({"dir": DIRECTION_IDS[name], "load": load}, share(quantum, load))
                       for load in range(1, HOST_LOADS + 1)]
    tables = {p4.TABLE_FQ_PARAMS: params}
    for table, action in ((p4.TABLE_FLOW_ENQUEUE_HOST_SHARE_FQ_SHARE,
                           p4.ACTION_FLOW_ENQUEUE_HOST_SHARE_SHARE_OF),
                          (p4.TABLE_FLOW_STEP_HOST_SHARE_FQ_SHARE,
                           p4.ACTION_FLOW_STEP_HOST_SHARE_SHARE_OF)):
        tables[table] = [TableEntry(table, key, action, {"share": value})
                         for key, value in shares]
    return tables
