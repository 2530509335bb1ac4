"""A switch on veth pairs, for packet tests and benchmarks without Mininet.

Creates one veth pair per port, starts simple_switch_grpc on the switch ends
(gRPC on a free port of 127.0.0.1), installs the program, a port layout and a
profile, and on exit stops exactly that switch and deletes exactly those pairs.
"""

import os
from contextlib import contextmanager

from ..switch.p4runtime import Switch
from ..switch.push import install, set_hold
from . import leftovers
from .bmv2 import SimpleSwitchGrpc, free_tcp_port
from .veth import VethPair


@contextmanager
def veth_switch(ports, **switch_options):
    """A switch with no program on veth pairs for the port numbers `ports`;
    `switch_options` go to SimpleSwitchGrpc.

    Yields (SimpleSwitchGrpc, {port number: test-side interface name})."""
    leftovers.clean_before_building()
    tag = f"le{os.getpid() % 100000}"
    pairs = {port: VethPair(f"{tag}-{port}s", f"{tag}-{port}p") for port in ports}
    switch = SimpleSwitchGrpc({p: v.switch_end for p, v in pairs.items()},
                              grpc_port=free_tcp_port(), **switch_options)
    try:
        for pair in pairs.values():
            pair.create()
        switch.start()
        yield switch, {port: pair.peer for port, pair in pairs.items()}
    finally:
        switch.stop()
        for pair in pairs.values():
            pair.delete()


@contextmanager
def veth_testbed(layout, profile, p4info_path, bmv2_json_path, **switch_options):
    """linkemu with a port layout and a profile on veth pairs; yields as veth_switch."""
    with veth_switch([p.number for p in layout.fixed + layout.mobile],
                     **switch_options) as (switch, peers):
        with Switch(switch.grpc_address) as controller:
            install(controller, p4info_path, bmv2_json_path, layout, profile)
            set_hold(controller, switch.hold_capacity, switch.timed)
        yield switch, peers
