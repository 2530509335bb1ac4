"""The P4 program's side of the contract: its tables, groups and counters.

Everything that knows a table, action or counter name of p4src/ lives here;
the rest of the control plane speaks in profiles and port layouts.
"""

from dataclasses import dataclass

from .p4runtime import MulticastGroup, TableEntry, Ternary, mac_to_int

DIRECTION_IDS = {"downlink": 0, "uplink": 1}
TIME_FRAC_BITS = 20           # p4src/include/defines.p4
HOLD_PORTS = range(480, 496)  # p4src/v1model/linkemu.p4: never attach these
FLOOD_GROUPS = {"downlink": 1, "uplink": 2}
# A packet waits at most this long past its due instant for a predecessor
# that vanished from the hold loop (it can only vanish on a pipeline change).
STALL_US = 1_000_000

# Counter (its P4Info alias) -> what it counts, per direction.
COUNTERS = {
    "link_in": "packets entering the link",
    "link_out": "packets delivered at the far end",
    "drop_queue": "dropped: router queue full",
    "drop_malformed": "dropped: not an Ethernet frame",
    "release_stalls": "released out of order after a lost predecessor",
}


def byte_cost_q(rate_bps):
    """Serialization time of one byte in microseconds, Q.20 fixed point."""
    if rate_bps is None:
        return 0
    return round(8e6 / rate_bps * (1 << TIME_FRAC_BITS))


def link_params_entries(profile):
    entries = []
    for name, direction in profile.directions().items():
        entries.append(TableEntry(
            table="LinkemuIngress.link_params.link_params",
            match={"m.dir": DIRECTION_IDS[name]},
            action="LinkemuIngress.link_params.set_params",
            params={
                "byte_cost_q": byte_cost_q(direction.rate_bps),
                "overhead_bytes": direction.overhead_bytes,
                "delay_us": direction.delay_us,
                "queue_limit": direction.queue_packets,
                "stall_us": STALL_US,
            }))
    return entries


@dataclass(frozen=True)
class Port:
    """A switch port and, when its side has several hosts, the host's MAC."""

    number: int
    mac: str | None = None

    @classmethod
    def parse(cls, text):
        """PORT or PORT@MAC, as given on the command line."""
        number, _, mac = text.partition("@")
        try:
            port = cls(int(number), mac or None)
        except ValueError:
            raise ValueError(f"{text!r}: expected PORT or PORT@MAC, e.g. 1@00:00:00:00:00:01")
        if port.mac is not None:
            parts = port.mac.split(":")
            if len(parts) != 6 or not all(len(p) == 2 and _is_hex(p) for p in parts):
                raise ValueError(f"{text!r}: {port.mac!r} is not a MAC address")
        return port


def _is_hex(text):
    try:
        int(text, 16)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class PortLayout:
    """Which switch ports face the fixed side and which the mobile side."""

    fixed: tuple
    mobile: tuple

    def __post_init__(self):
        sides = {"fixed": self.fixed, "mobile": self.mobile}
        for side, ports in sides.items():
            if not ports:
                raise ValueError(f"the {side} side needs at least one port")
            for port in ports:
                if not 1 <= port.number < HOLD_PORTS.start:
                    raise ValueError(f"{side} port {port.number}: allowed 1 to "
                                     f"{HOLD_PORTS.start - 1} (higher ports hold packets)")
                if len(ports) > 1 and port.mac is None:
                    raise ValueError(f"{side} port {port.number}: a side with several "
                                     "ports needs each host's MAC (PORT@MAC)")
        numbers = [p.number for p in self.fixed + self.mobile]
        if len(set(numbers)) != len(numbers):
            raise ValueError(f"a port is listed twice: {sorted(numbers)}")

    def table_entries(self):
        entries = [TableEntry("LinkemuIngress.port_map.port_map", {"ingress_port": p.number},
                              "LinkemuIngress.port_map.set_direction",
                              {"dir": DIRECTION_IDS[direction]})
                   for direction, ports in (("downlink", self.fixed), ("uplink", self.mobile))
                   for p in ports]
        for direction, far in (("downlink", self.mobile), ("uplink", self.fixed)):
            dir_id = DIRECTION_IDS[direction]
            if len(far) == 1:
                entries.append(self._forward(dir_id, Ternary(0, 0), 1,
                                             "to_port", {"port": far[0].number}))
                continue
            for port in far:
                entries.append(self._forward(dir_id, Ternary(mac_to_int(port.mac), 2**48 - 1),
                                             2, "to_port", {"port": port.number}))
            entries.append(self._forward(dir_id, Ternary(0, 0), 1, "flood",
                                         {"group": FLOOD_GROUPS[direction]}))
        return entries

    @staticmethod
    def _forward(dir_id, dst, priority, action, params):
        return TableEntry("LinkemuIngress.port_map.forward",
                          {"m.dir": dir_id, "hdr.ethernet.dst_addr": dst},
                          f"LinkemuIngress.port_map.{action}", params, priority)

    def multicast_groups(self):
        return [MulticastGroup(FLOOD_GROUPS["downlink"], tuple(p.number for p in self.mobile)),
                MulticastGroup(FLOOD_GROUPS["uplink"], tuple(p.number for p in self.fixed))]


def install(switch, p4info_path, bmv2_json_path, layout, profile):
    """Loads the program, then the port layout, then the profile."""
    switch.set_pipeline(p4info_path, bmv2_json_path)
    switch.write_multicast_groups(layout.multicast_groups())
    switch.write_table(layout.table_entries())
    push_profile(switch, profile)


def push_profile(switch, profile):
    """Changes the link live; packets already held keep their release times."""
    if switch.p4info is None:
        switch.load_p4info()
    switch.write_table(link_params_entries(profile))


def read_counters(switch):
    """{counter: {direction: (packets, bytes)}} for every counter of the program."""
    if switch.p4info is None:
        switch.load_p4info()
    names = {v: k for k, v in DIRECTION_IDS.items()}
    return {name: {names[c.index]: (c.packets, c.bytes)
                   for c in switch.read_counter(name) if c.index in names}
            for name in COUNTERS}
