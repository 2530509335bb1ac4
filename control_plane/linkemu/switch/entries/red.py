"""Red (in the router's AQM): RED's parameters, its drop curve on the
average queue and the average's decay while the queue is idle, for each
router queue with RED."""

import math

from ...program import constants as p4
from ..codes import Q16
from ..entities import Range, TableEntry
from .queue_params import class_queues

RED_CURVE_STEPS = 32         # steps of p_b between min_th and max_th
RED_DECAY_STEP = 0.98        # the idle decay factor changes by at most 2 % a step
RED_DECAY_FLOOR = 1e-4       # beyond this, the average restarts from 0


def red_curve(red):
    """[(low, high, p_b)] on the average in Q.16, p_b None meaning drop all.

    Steps of p_b = max_p (avg - min) / (max - min), each at its midpoint; with
    gentle, max_p .. 1 between max and 2 max; everything is dropped above."""
    low, high = red.min_th, red.max_th
    steps = []
    width = (high - low) / RED_CURVE_STEPS
    for i in range(RED_CURVE_STEPS):
        mid = low + (i + 0.5) * width
        steps.append((low + i * width, low + (i + 1) * width,
                      red.max_p * (mid - low) / (high - low)))
    end = high
    if red.gentle:
        width = high / RED_CURVE_STEPS
        for i in range(RED_CURVE_STEPS):
            mid = high + (i + 0.5) * width
            steps.append((high + i * width, high + (i + 1) * width,
                          red.max_p + (1 - red.max_p) * (mid - high) / high))
        end = 2 * high
    rows = [(round(a * Q16), round(b * Q16) - 1, p) for a, b, p in steps]
    rows.append((round(end * Q16), 2**64 - 1, None))
    return rows


def red_decay(red, rate_bps):
    """[(low_us, high_us, factor)]: (1 - w)^m for m idle mean-packet times."""
    tx_us = red.mean_packet_bytes * 8 / rate_bps * 1e6
    step_us = math.log(RED_DECAY_STEP) / math.log(1 - red.weight) * tx_us

    def factor(idle_us):
        return (1 - red.weight) ** (idle_us / tx_us)

    edges = [0.0] + [step_us / 2**j for j in range(6, 0, -1)]
    k = 1
    while factor(k * step_us) > RED_DECAY_FLOOR:
        edges.append(k * step_us)
        k += 1
    bounds = sorted({round(e) for e in edges})
    return [(a, b - 1, factor((a + b) / 2)) for a, b in zip(bounds, bounds[1:]) if b > a]


def red_entries(profile, generation=0):
    """Entries of the three RED tables, for the queues with RED. State of
    another `generation` reads as a new queue's."""
    entries = {p4.TABLE_RED_PARAMS: [], p4.TABLE_RED_CURVE: [], p4.TABLE_RED_DECAY: []}
    for queue in class_queues(profile):
        red = queue.red
        if red is None:
            continue
        key = queue.key()
        weight_q24 = round(red.weight * 2**24)
        if weight_q24 == 0:
            raise ValueError(f"RED weight {red.weight:g} is below the data plane's 2^-24")
        entries[p4.TABLE_RED_PARAMS].append(TableEntry(
            p4.TABLE_RED_PARAMS, key, p4.ACTION_SET_RED,
            {"bytes": int(red.mode == "bytes"), "weight_q24": weight_q24,
             "use_ecn": int(red.ecn), "generation": generation}))
        for low, high, p_b in red_curve(red):
            action, params = ((p4.ACTION_DROP_ALL, {}) if p_b is None else
                              (p4.ACTION_SIGNAL_WITH,
                               {"p_b_q16": max(1, round(p_b * Q16))}))
            entries[p4.TABLE_RED_CURVE].append(TableEntry(
                p4.TABLE_RED_CURVE, {**key, "avg": Range(low, high)}, action, params, priority=1))
        for low, high, factor in red_decay(red, queue.rate_bps):
            entries[p4.TABLE_RED_DECAY].append(TableEntry(
                p4.TABLE_RED_DECAY, {**key, "idle_us": Range(low, high)},
                p4.ACTION_DECAY, {"factor_q16": round(factor * Q16)}, priority=1))
    return entries
