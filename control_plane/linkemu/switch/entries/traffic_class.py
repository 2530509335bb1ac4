"""TrafficClass: which packets of a direction go to its priority class."""

from ...program import constants as p4
from ..codes import CLASS_IDS, DIRECTION_IDS
from ..entities import TableEntry, Ternary


def _ternary(value, bits):
    return Ternary(0, 0) if value is None else Ternary(value, 2**bits - 1)


def traffic_class_entries(profile):
    entries = []
    for name, direction in profile.directions().items():
        if direction.priority is None:
            continue
        for match in direction.priority.match:
            entries.append(TableEntry(
                p4.TABLE_TRAFFIC_CLASS,
                {"dir": DIRECTION_IDS[name], "is_ip": 1,
                 "dscp": _ternary(match.dscp, 6), "protocol": _ternary(match.protocol, 8),
                 "src_port": _ternary(match.src_port, 16),
                 "dst_port": _ternary(match.dst_port, 16)},
                p4.ACTION_SET_CLASS, {"cls": CLASS_IDS["priority"]},
                priority=1))
    return entries
