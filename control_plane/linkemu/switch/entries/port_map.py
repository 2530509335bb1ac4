"""PortMap: a port's direction, and where a frame leaving the link goes
(one host a side, or by MAC with flooding), with the multicast groups that
flood and duplicate."""

from ...program import constants as p4
from ..codes import DIRECTION_IDS
from ..encoding import mac_to_int
from ..entities import MulticastGroup, TableEntry, Ternary

FLOOD_GROUPS = {"downlink": 1, "uplink": 2}


def port_map_entries(layout):
    """The port_map and forward entries of a PortLayout."""
    entries = [TableEntry(p4.TABLE_PORT_MAP, {"ingress_port": p.number},
                          p4.ACTION_SET_DIRECTION,
                          {"dir": DIRECTION_IDS[direction]})
               for direction, ports in (("downlink", layout.fixed), ("uplink", layout.mobile))
               for p in ports]
    for direction, far in (("downlink", layout.mobile), ("uplink", layout.fixed)):
        dir_id = DIRECTION_IDS[direction]
        if len(far) == 1:
            entries.append(_forward(dir_id, Ternary(0, 0), 1,
                                    p4.ACTION_TO_PORT, {"port": far[0].number}))
            continue
        for port in far:
            entries.append(_forward(dir_id, Ternary(mac_to_int(port.mac), 2**48 - 1),
                                    2, p4.ACTION_TO_PORT, {"port": port.number}))
        entries.append(_forward(dir_id, Ternary(0, 0), 1, p4.ACTION_FLOOD,
                                {"group": FLOOD_GROUPS[direction]}))
    return entries


def _forward(dir_id, dst, priority, action, params):
    return TableEntry(p4.TABLE_FORWARD, {"dir": dir_id, "dst_addr": dst},
                      action, params, priority)


def multicast_groups(layout):
    """Flooding to each side, and each port twice (duplicates)."""
    return [MulticastGroup(FLOOD_GROUPS["downlink"], tuple(p.number for p in layout.mobile)),
            MulticastGroup(FLOOD_GROUPS["uplink"], tuple(p.number for p in layout.fixed))] + [
        MulticastGroup(p4.DUP_GROUP_BASE + p.number, (p.number, p.number))
        for p in layout.fixed + layout.mobile]
