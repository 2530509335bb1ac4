"""EventLog: which directions report every packet's fate (drivers.event_log
reads the reports)."""

from ...program import constants as p4
from ..codes import DIRECTION_IDS
from ..entities import TableEntry


def event_log_entries(directions):
    """Entries that make `directions` log every packet's fate."""
    return [TableEntry(p4.TABLE_EVENT_LOG, {"dir": DIRECTION_IDS[name]},
                       p4.ACTION_LOG_EVENTS) for name in directions]
