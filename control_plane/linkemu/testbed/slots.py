"""Network slots: several linkemu networks on one machine at once.

Every network runs in a slot, slot 0 unless told otherwise. What the
machine's own namespace sees of a network is its slot's alone: the switch's
name and so its interfaces (Mininet names them SWITCH-ethN) and log, the
network lock (network_lock), the switch's P4Runtime and Thrift ports and its
core; its records for `linkemu clean` are its process's (leftovers). Slot 0
has the names a single network has always had: s1, s1-eth1, ...; slot k
prefixes them: nks1, nks1-eth1, .... The hosts keep h1, h2, ... in every
slot: a host's name and its interface (h1-eth0) exist only in its own
namespace, where Mininet makes them.
"""

import os
from dataclasses import dataclass

MAX_SLOTS = 64   # keeps the slots' P4Runtime and Thrift ports apart
P4RUNTIME_PORT = 9559
THRIFT_PORT = 9090


def _cores():
    return sorted(os.sched_getaffinity(0))


@dataclass(frozen=True)
class NetworkSlot:
    number: int = 0
    count: int = 1   # the slots in use side by side, this one among them

    def __post_init__(self):
        if not 0 <= self.number < self.count <= MAX_SLOTS:
            raise ValueError(f"network slot {self.number} of {self.count}: slots are numbered "
                             f"from 0, at most {MAX_SLOTS} of them")

    @property
    def switch_name(self):
        return "s1" if self.number == 0 else f"n{self.number}s1"

    def interface(self, port):
        """The switch's interface of port `port`, as Mininet names it."""
        return f"{self.switch_name}-eth{port}"

    @property
    def grpc_port(self):
        return P4RUNTIME_PORT + self.number

    @property
    def thrift_port(self):
        return THRIFT_PORT + self.number

    def switch_core(self):
        """The core the switch is pinned to: the last for slot 0, then
        downwards; slots beyond the cores share them, round again."""
        cores = _cores()
        return cores[-1 - self.number % len(cores)]

    def host_cores(self):
        """The cores for the hosts' programs: those of no slot's switch, or,
        with a switch on every core, all but this slot's switch's."""
        cores = set(_cores())
        switches = {NetworkSlot(k, self.count).switch_core() for k in range(self.count)}
        return cores - switches or cores - {self.switch_core()} or cores


def shared_cores_warning(count):
    """Why `count` networks side by side would not keep a core per switch
    on this machine; None when they do."""
    cores = len(_cores())
    if count <= cores:
        return None
    return (f"{count} networks side by side, and this machine gives them {cores} cores: "
            "switches share cores, and a run's timing figures may then differ from its "
            f"figures with fewer networks (at most {cores} keep a core per switch)")
