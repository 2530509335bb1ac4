"""How many packets the switch holds at once (LinkPass's hold_limit): more
than the program's HOLD_CAPACITY only on a switch with timed departure,
where a held packet sleeps in its hold port's queue instead of going round."""

from ..program import constants as p4
from .codes import DIRECTION_IDS
from .entities import TableEntry


def hold_limit_entries(frames):
    return [TableEntry(p4.TABLE_HOLD_LIMIT, {"dir": dir_id}, p4.ACTION_COUNT_HELD,
                       {"capacity": frames})
            for dir_id in DIRECTION_IDS.values()]


def set_hold_capacity(switch, frames):
    """Arrivals past `frames` held packets are refused (drop_hold); the
    program's own HOLD_CAPACITY for a switch whose held packets go round."""
    entries = [] if frames == p4.HOLD_CAPACITY else hold_limit_entries(frames)
    switch.sync_table(p4.TABLE_HOLD_LIMIT, entries)
