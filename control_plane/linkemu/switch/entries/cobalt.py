"""Cobalt (Cake's AQM, in the router): each queue's parameters, as Cake
derives them from the profile's target and interval and the link's rate,
and CoDel's control law over the count, which every queue shares."""

import bisect
import functools
import math
from dataclasses import dataclass

from ...program import constants as p4
from ..entities import Lpm, Range, TableEntry
from .queue_params import class_queues

Q32 = 1 << 32
EXACT_COUNTS = 128      # counts below it are exact in the law's tables
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


def cobalt_law_entries():
    return [TableEntry(p4.TABLE_COBALT_LAW, {"count": Lpm(count, prefix)}, p4.ACTION_LAW,
                       {"inv_sqrt_q32": inv_sqrt_q32(count),
                        "next_inv_sqrt_q32": inv_sqrt_q32(count + 1),
                        "sum_q16": law_sum_q16(count)})
            for count, prefix in count_grid()]


def cobalt_decay_entries():
    """Where the decay from a count ends: at the largest grid count whose sum
    lies below what is left (the default, below the first: at rest)."""
    counts, sums = _decay_points()
    uppers = sums[1:] + [2**64 - 1]
    return [TableEntry(p4.TABLE_COBALT_DECAY, {"sum_q16": Range(low + 1, high)},
                       p4.ACTION_DECAY_TO, {"count": count, "sum_q16": low}, priority=1)
            for count, low, high in zip(counts, sums, uppers)]


def cobalt_queues(profile):
    """[(queue, CobaltParams)] of every router queue COBALT watches."""
    return [(q, CobaltParams.of(d.cobalt, d.rate_bps, d.overhead_bytes))
            for q in class_queues(profile) if q.cls == "best_effort"
            for d in [profile.directions()[q.direction]] if d.cobalt]


def cobalt_entries(profile):
    """{table: entries}: the law's tables only where a queue has COBALT."""
    params = [TableEntry(p4.TABLE_COBALT_PARAMS, q.key(), p4.ACTION_SET_COBALT,
                         {"target_us": c.target_us, "threshold_us": c.threshold_us,
                          "interval_us": c.interval_us,
                          "per_interval_q32": c.per_interval_q32(), "ecn": int(c.ecn)})
              for q, c in cobalt_queues(profile)]
    return {p4.TABLE_COBALT_PARAMS: params,
            p4.TABLE_COBALT_LAW: cobalt_law_entries() if params else [],
            p4.TABLE_COBALT_DECAY: cobalt_decay_entries() if params else []}
