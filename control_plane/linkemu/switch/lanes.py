"""The hold's sleep lanes (p4src/v1model/include/control/sleep_lanes.p4).

A lane is an interface-less port whose egress queue BMv2 paces to one frame
a period, with a clone session to it: what P4Runtime does not manage, so it
is set over Thrift once the program is on the switch. BMv2 forgets all of
it when it restarts.
"""

import time
from dataclasses import dataclass

from ..program import constants as p4

# Frames a lane's queue takes: BMv2 drops a clone its queue has no room
# for, silently. Past the most the hold admits, so none is ever dropped.
LANE_DEPTH = 4096
assert LANE_DEPTH >= p4.HOLD_CAPACITY


@dataclass(frozen=True)
class Lane:
    port: int
    session: int
    period_us: int

    @property
    def rate(self):
        """Frames a second: BMv2 paces a queue by a whole number of them."""
        return 1_000_000 // self.period_us


def lanes():
    """Every lane, as the P4 program numbers them."""
    periods = [getattr(p4, f"LANE_PERIOD_{k}") for k in range(p4.NUM_LANE_PERIODS)]
    return [Lane(port=p4.LANE_PORT_BASE + 4 * j, session=p4.LANE_SESSION_BASE + j,
                 period_us=periods[j // p4.LANES_PER_PERIOD])
            for j in range(p4.NUM_LANES)]


def configure_lanes(queues):
    """Paces, deepens and mirrors every lane on the switch `queues` (a
    thrift_runtime.SwitchQueues) reaches, and returns once every lane is
    idle as the program sees it: BMv2 makes a queue's previous send the
    instant it creates the queue, the program's record of it starts at 0,
    and a lane boarded before its period has passed would give a frame back
    up to a period later than the program planned (queueing.h)."""
    every = lanes()
    created = time.monotonic()
    for lane in every:
        queues.set_depth(lane.port, LANE_DEPTH)
        queues.set_rate(lane.port, lane.rate)
        queues.add_mirror(lane.session, lane.port)
    time.sleep(max(0.0, created + max(l.period_us for l in every) / 1e6 - time.monotonic()))
