"""The benchmark's compiled programs (`make build` writes them) and the
table entries that give a baseline the link of a profile's direction."""

from pathlib import Path

from linkemu.switch.codes import byte_cost_q
from linkemu.switch.entities import TableEntry, Ternary

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
LINKEMU = (BUILD / "linkemu.p4info.txtpb", BUILD / "linkemu.json")
BASELINE = (BUILD / "forward.p4info.txtpb", BUILD / "forward.json")
HOLD_BASELINE = (BUILD / "hold.p4info.txtpb", BUILD / "hold.json")
SHAPE_BASELINE = (BUILD / "shape.p4info.txtpb", BUILD / "shape.json")
LANES_BASELINE = (BUILD / "lanes.p4info.txtpb", BUILD / "lanes.json")
LANES_IN_ORDER_BASELINE = (BUILD / "lanes_in_order.p4info.txtpb", BUILD / "lanes_in_order.json")
MINIMAL_BASELINE = (BUILD / "minimal_link.p4info.txtpb", BUILD / "minimal_link.json")
PLAIN_BASELINE = (BUILD / "plain_arrival.p4info.txtpb", BUILD / "plain_arrival.json")
PROGRAMS = {"linkemu": LINKEMU, "forward": BASELINE, "hold": HOLD_BASELINE,
            "shape": SHAPE_BASELINE, "lanes": LANES_BASELINE,
            "lanes_in_order": LANES_IN_ORDER_BASELINE, "minimal_link": MINIMAL_BASELINE,
            "plain_arrival": PLAIN_BASELINE}
MINIMAL_LINK = "MinimalIngress.link"
PLAIN = "PlainIngress."


def sync_baseline(controller, entries):
    """Makes each table of a baseline's `entries` hold exactly its entries,
    in one batch."""
    tables = {}
    for entry in entries:
        tables.setdefault(entry.table, []).append(entry)
    controller.sync_tables(tables)


def minimal_link_entries(direction):
    """bench/minimal_link.p4's link, both ways, from a profile's direction: its
    rate, delay and queue limit, no errors."""
    params = {"byte_cost_q": byte_cost_q(direction.rate_bps),
              "delay_us": direction.delay_us, "queue_limit": direction.queue_packets,
              "state_change_us": 0, "error_now": 0, "error_next": 0}
    return [TableEntry(MINIMAL_LINK, {"hdr.link.dir": way}, "MinimalIngress.arrive", params)
            for way in (0, 1)]


def plain_arrival_entries(direction):
    """bench/plain_arrival.p4's port map (port 1 <-> port 2, as LAYOUT) and its
    link, both ways, from a profile's direction: its rate, per-frame overhead,
    delay and router queue limits."""
    link = {"byte_cost_q": byte_cost_q(direction.rate_bps),
            "overhead_bytes": direction.overhead_bytes, "delay_us": direction.delay_us,
            "queue_limit": direction.queue_packets,
            "queue_bytes_limit": direction.queue_bytes or 0}
    return [entry for way, (port, far) in enumerate(((1, 2), (2, 1))) for entry in (
        TableEntry(f"{PLAIN}port_map", {"std.ingress_port": port}, f"{PLAIN}set_direction",
                   {"dir": way}),
        TableEntry(f"{PLAIN}forward",
                   {"hdr.link.dir": way, "hdr.ethernet.dst_addr": Ternary(0, 0)},
                   f"{PLAIN}to_port", {"port": far}, priority=1),
        TableEntry(f"{PLAIN}link", {"hdr.link.dir": way}, f"{PLAIN}arrive", link))]
