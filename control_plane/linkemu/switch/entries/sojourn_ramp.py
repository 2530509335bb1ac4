"""SojournRamp: ECT(1) packets marked CE with a probability rising with
their sojourn in the router queue."""

from ...program import constants as p4
from ..codes import DIRECTION_IDS, Q16
from ..entities import Range, TableEntry

SOJOURN_RAMP_STEPS = 32


def sojourn_ramp(target_us):
    """[(low_us, high_us, p)]: 0 below target/2, rising to 1 at the target."""
    half = target_us / 2
    width = half / SOJOURN_RAMP_STEPS
    rows = [(round(half + i * width), round(half + (i + 1) * width) - 1,
             (i + 0.5) / SOJOURN_RAMP_STEPS) for i in range(SOJOURN_RAMP_STEPS)]
    rows = [r for r in rows if r[1] >= r[0]]
    return rows + [(round(target_us), 2**48 - 1, 1.0)]


def sojourn_ramp_entries(profile):
    return [TableEntry(p4.TABLE_SOJOURN_RAMP,
                       {"dir": DIRECTION_IDS[name], "sojourn_us": Range(low, high)},
                       p4.ACTION_MARK_WITH, {"p_q16": round(p * Q16)},
                       priority=1)
            for name, direction in profile.directions().items() if direction.sojourn_target_us
            for low, high, p in sojourn_ramp(direction.sojourn_target_us)]
