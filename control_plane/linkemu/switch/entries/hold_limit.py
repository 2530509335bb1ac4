"""LinkPass's hold_limit: how many packets the switch holds at once. More
than the program's HOLD_CAPACITY only on a switch with timed departure,
where a held packet sleeps in its hold port's queue instead of going round."""

from ...program import constants as p4
from ..codes import DIRECTION_IDS
from ..entities import TableEntry


def hold_limit_entries(frames):
    """Arrivals past `frames` held packets are refused (drop_hold); none
    for the program's own HOLD_CAPACITY."""
    if frames == p4.HOLD_CAPACITY:
        return []
    return [TableEntry(p4.TABLE_HOLD_LIMIT, {"dir": dir_id}, p4.ACTION_COUNT_HELD,
                       {"capacity": frames})
            for dir_id in DIRECTION_IDS.values()]
