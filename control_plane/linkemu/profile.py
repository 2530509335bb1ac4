"""Link profiles: YAML files validated into a typed model.

A profile describes both directions of the emulated link. Every field is
checked before anything is written to a switch; all problems are reported
together, each with its path, the value found and what is allowed.
"""

from dataclasses import dataclass
from pathlib import Path

import yaml

from .units import UnitError, format_rate, format_time_us, parse_rate, parse_time_us

MIN_RATE_BPS = 1e3
MAX_RATE_BPS = 10e9
MAX_DELAY_US = 60 * 10**6
DEFAULT_QUEUE_PACKETS = 1000  # Linux's default txqueuelen
DIRECTIONS = ("downlink", "uplink")


@dataclass(frozen=True)
class Direction:
    """One direction of the link."""

    rate_bps: float | None  # None: no rate limit
    delay_us: int
    queue_packets: int
    overhead_bytes: int

    def describe(self):
        rate = "unlimited" if self.rate_bps is None else format_rate(self.rate_bps)
        return (f"rate {rate}, delay {format_time_us(self.delay_us)}, "
                f"queue {self.queue_packets} packets, overhead {self.overhead_bytes} B")


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    mtu: int
    downlink: Direction
    uplink: Direction

    def directions(self):
        return {"downlink": self.downlink, "uplink": self.uplink}


class ProfileError(ValueError):
    """A profile that cannot be used; lists every problem found."""

    def __init__(self, source, problems):
        self.source = source
        self.problems = problems
        lines = [f"{source}: invalid profile"] + [f"  {p}" for p in problems]
        super().__init__("\n".join(lines))


class _Section:
    """Reads the fields of one mapping, recording problems with their paths."""

    def __init__(self, data, path, problems):
        self.path = path
        self.problems = problems
        if not isinstance(data, dict):
            self.problem(path or "(top level)", data, "expected a mapping of fields")
            data = {}
        self.data = data
        self.known = set()

    def problem(self, path, value, allowed):
        self.problems.append(f"{path}: {value!r}: {allowed}")

    def field(self, key, convert, default=None, required=False):
        self.known.add(key)
        path = f"{self.path}.{key}" if self.path else key
        if key not in self.data:
            if required:
                self.problems.append(f"{path}: missing; this field is required")
            return default
        value = self.data[key]
        try:
            return convert(value)
        except (UnitError, ValueError, TypeError) as err:
            self.problem(path, value, str(err))
            return default

    def section(self, key):
        self.known.add(key)
        path = f"{self.path}.{key}" if self.path else key
        if key not in self.data:
            self.problems.append(f"{path}: missing; this section is required")
        return _Section(self.data.get(key, {}), path, self.problems)

    def reject_unknown(self):
        for key in self.data:
            if key not in self.known:
                path = f"{self.path}.{key}" if self.path else str(key)
                allowed = ", ".join(sorted(self.known))
                self.problem(path, self.data[key], f"unknown field; allowed: {allowed}")


def _int_in(low, high, what):
    def convert(value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected a whole number of {what} in [{low}, {high}]")
        if not low <= value <= high:
            raise ValueError(f"out of range; allowed {low} to {high} {what}")
        return value
    return convert


def _rate(value):
    if value == "unlimited":
        return None
    bps = parse_rate(value)
    if not MIN_RATE_BPS <= bps <= MAX_RATE_BPS:
        raise ValueError(f"out of range; allowed {format_rate(MIN_RATE_BPS)} to "
                         f"{format_rate(MAX_RATE_BPS)}, or 'unlimited'")
    return bps


def _delay(value):
    us = parse_time_us(value)
    if not 0 <= us <= MAX_DELAY_US:
        raise ValueError(f"out of range; allowed 0s to {format_time_us(MAX_DELAY_US)}")
    return us


def _text(value):
    if not isinstance(value, str):
        raise ValueError("expected text")
    return value


def _direction(section):
    direction = Direction(
        rate_bps=section.field("rate", _rate),
        delay_us=section.field("delay", _delay, default=0),
        queue_packets=section.field("queue", _int_in(1, 100000, "packets"),
                                    default=DEFAULT_QUEUE_PACKETS),
        overhead_bytes=section.field("overhead", _int_in(0, 1000, "bytes"), default=0),
    )
    section.reject_unknown()
    return direction


def parse_profile(data, source="profile", default_name="profile"):
    """Validates parsed YAML into a Profile, or raises ProfileError."""
    problems = []
    top = _Section(data, "", problems)
    name = top.field("name", _text, default=default_name)
    description = top.field("description", _text, default="")
    mtu = top.field("mtu", _int_in(68, 9000, "bytes"), default=1500)
    directions = {d: _direction(top.section(d)) for d in DIRECTIONS}
    top.reject_unknown()
    if problems:
        raise ProfileError(source, problems)
    return Profile(name=name, description=description, mtu=mtu, **directions)


def load_profile(path):
    """Reads and validates a profile file."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise ProfileError(path, [f"cannot read: {err.strerror}"]) from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ProfileError(path, [f"not valid YAML: {err}"]) from err
    return parse_profile(data, source=str(path), default_name=path.stem)
