"""EventLog: which directions report their packets' fate (drivers.event_log
reads the reports)."""

from ...program import constants as p4
from ..codes import DIRECTION_IDS
from ..entities import Range, TableEntry


def skip_q16(sample):
    """The share of packets not logged, of 65536, for a `sample` in (0, 1]."""
    return min(0xffff, round((1 - sample) * 65536))


def event_log_entries(directions, sample=1.0):
    """Entries that make `directions` log each packet's fate, or a random
    `sample` of them: those whose 16-bit draw is at least skip_q16."""
    return [TableEntry(p4.TABLE_EVENT_LOG,
                       {"dir": DIRECTION_IDS[name], "rand": Range(skip_q16(sample), 0xffff)},
                       p4.ACTION_LOG_EVENTS, priority=1)
            for name in directions]
