"""LinkPass's hold_limit: how many packets the switch holds at once, and
whether it has timed departure. A switch without holds the program's
HOLD_CAPACITY, as every held packet goes round; one with takes more, as a
held packet sleeps in its hold port's queue, and releases a packet ahead of
its due instant once it is settled, to sleep in its output port's queue."""

from ...program import constants as p4
from ..codes import DIRECTION_IDS
from ..entities import TableEntry


def hold_limit_entries(capacity, timed):
    """Arrivals past `capacity` held packets are refused (drop_hold); none
    for the program's default, a switch without timed departure."""
    if capacity == p4.HOLD_CAPACITY and not timed:
        return []
    return [TableEntry(p4.TABLE_HOLD_LIMIT, {"dir": dir_id}, p4.ACTION_COUNT_HELD,
                       {"capacity": capacity, "timed": int(timed)})
            for dir_id in DIRECTION_IDS.values()]
