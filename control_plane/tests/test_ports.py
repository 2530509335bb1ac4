"""The port layout, and the PortMap entries and multicast groups it asks for."""

import pytest

from linkemu.program import constants as p4
from linkemu.switch.entities import Ternary
from linkemu.switch.entries.port_map import FLOOD_GROUPS, multicast_groups, port_map_entries
from linkemu.switch.ports import Port, PortLayout


def test_port_parsing():
    assert Port.parse("3") == Port(3)
    assert Port.parse("2@00:00:00:00:00:0a") == Port(2, "00:00:00:00:00:0a")
    for bad in ("x", "1@zz:00:00:00:00:00", "1@00:00"):
        with pytest.raises(ValueError):
            Port.parse(bad)


def test_single_host_sides_forward_everything_to_the_one_port():
    layout = PortLayout(fixed=(Port(1),), mobile=(Port(2),))
    forward = [e for e in port_map_entries(layout) if e.table.endswith("forward")]
    assert {(e.match["dir"], e.params["port"]) for e in forward} == {(0, 2), (1, 1)}
    assert all(e.match["dst_addr"] == Ternary(0, 0) for e in forward)


def test_several_hosts_get_mac_entries_and_a_flood_group():
    layout = PortLayout(fixed=(Port(1, "00:00:00:00:00:01"),),
                        mobile=(Port(2, "00:00:00:00:00:02"), Port(3, "00:00:00:00:00:03")))
    entries = port_map_entries(layout)
    downlink = [e for e in entries if e.table.endswith("forward") and e.match["dir"] == 0]
    assert [(e.action.rsplit(".", 1)[1], e.priority) for e in downlink] == [
        ("to_port", 2), ("to_port", 2), ("flood", 1)]
    groups = {g.group_id: g.ports for g in multicast_groups(layout)}
    dup = p4.DUP_GROUP_BASE
    assert groups == {FLOOD_GROUPS["downlink"]: (2, 3),
                      FLOOD_GROUPS["uplink"]: (1,),
                      dup + 1: (1, 1), dup + 2: (2, 2), dup + 3: (3, 3)}


@pytest.mark.parametrize("fixed, mobile, message", [
    ((), (Port(2),), "fixed side needs at least one port"),
    ((Port(1),), (Port(1),), "listed twice"),
    ((Port(1),), (Port(480),), "higher ports hold packets"),
    ((Port(1),), (Port(2), Port(3, "00:00:00:00:00:03")), "needs each host's MAC"),
])
def test_bad_layouts(fixed, mobile, message):
    with pytest.raises(ValueError, match=message):
        PortLayout(fixed, mobile)
