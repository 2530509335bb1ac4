"""What the control plane writes to and reads from the switch, by the
program's names: table entries (their match values ints, Ternary, Range or Lpm),
multicast groups and counter cells."""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Ternary:
    value: int
    mask: int


@dataclass(frozen=True)
class Range:
    low: int
    high: int


@dataclass(frozen=True)
class Lpm:
    value: int
    prefix_len: int


@dataclass(frozen=True)
class TableEntry:
    """A table entry by names; match values are ints, Ternary, Range or Lpm."""

    table: str
    match: dict
    action: str
    params: dict = field(default_factory=dict)
    priority: int = 0


@dataclass(frozen=True)
class MulticastGroup:
    group_id: int
    ports: tuple


@dataclass(frozen=True)
class CounterValue:
    counter: str
    index: int
    packets: int
    bytes: int
