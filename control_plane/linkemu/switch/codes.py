"""How the program numbers and scales what profiles name: directions,
traffic classes and their router queues, rates as Q.20 byte costs and
probabilities as thresholds on its 16-bit random numbers."""

from ..program import constants as p4

DIRECTION_IDS = {"downlink": p4.DIR_DOWNLINK, "uplink": p4.DIR_UPLINK}
DIRECTION_NAMES = {v: k for k, v in DIRECTION_IDS.items()}
CLASS_IDS = {"best_effort": 0, "priority": 1}
PROBABILITY_ONE = 1 << 16   # probabilities are thresholds on a 16-bit random
Q16 = 1 << 16


def queue_index(direction, cls):
    """The index of a class's router queue in per-class registers and counters
    (a direction's best effort has its direction's)."""
    return CLASS_IDS[cls] * 2 + DIRECTION_IDS[direction]


def byte_cost_q(rate_bps):
    """Serialization time of one byte in microseconds, Q.20 fixed point."""
    if rate_bps is None:
        return 0
    return round(8e6 / rate_bps * (1 << p4.TIME_FRAC_BITS))


def threshold(probability):
    """A probability as a threshold on the data plane's 16-bit random numbers."""
    return round(probability * PROBABILITY_ONE)


def draws_below(probability):
    """The 16-bit random numbers below a probability's threshold, as a range
    key's (low, high), or None when the probability rounds to none."""
    below = min(threshold(probability), PROBABILITY_ONE)
    return (0, below - 1) if below > 0 else None
