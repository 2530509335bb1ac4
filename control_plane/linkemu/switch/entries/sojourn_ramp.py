"""SojournRamp: ECT(1) packets marked CE with a probability rising with
their sojourn in the router queue, or in their flow queue."""

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


# The two ramps: on arrival for one FIFO queue, when a flow queue is served
# for flow isolation.
INSTANCES = ((p4.TABLE_ADMISSION_SOJOURN_RAMP_SOJOURN_RAMP,
              p4.ACTION_ADMISSION_SOJOURN_RAMP_MARK_WITH, False),
             (p4.TABLE_FLOW_STEP_SOJOURN_RAMP_SOJOURN_RAMP,
              p4.ACTION_FLOW_STEP_SOJOURN_RAMP_MARK_WITH, True))


def sojourn_ramp_entries(profile):
    """{table: entries} of both ramps, each direction's in the one its
    queue has."""
    return {table: [TableEntry(table, {"dir": DIRECTION_IDS[name],
                                       "sojourn_us": Range(low, high)},
                               action, {"p_q16": round(p * Q16)}, priority=1)
                    for name, direction in profile.directions().items()
                    if direction.sojourn_target_us and direction.isolates_flows == flows
                    for low, high, p in sojourn_ramp(direction.sojourn_target_us)]
            for table, action, flows in INSTANCES}
