"""PacketFaults: reorder, duplicate and corrupt probabilities per direction."""

from ...program import constants as p4
from ..codes import DIRECTION_IDS, threshold
from ..entities import TableEntry


def packet_fault_entries(profile):
    return [TableEntry(p4.TABLE_PACKET_FAULTS, {"dir": DIRECTION_IDS[name]},
                       p4.ACTION_SET_FAULTS,
                       {"reorder": threshold(d.reorder), "duplicate": threshold(d.duplicate),
                        "corrupt": threshold(d.corrupt)})
            for name, d in profile.directions().items() if d.reorder or d.duplicate or d.corrupt]
