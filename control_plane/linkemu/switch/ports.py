"""The port layout: which switch ports face the fixed side and which the
mobile side, as the command line gives them."""

from dataclasses import dataclass

from ..program import constants as p4

# The hold ports (+1: each one's turn lane): never attach.
HOLD_PORTS = range(p4.HOLD_PORT_BASE, p4.HOLD_PORT_BASE + 4 * (p4.HOLD_PORT_MASK + 1), 4)


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
