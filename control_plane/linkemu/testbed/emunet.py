"""The emulation network: hosts on the fixed and mobile sides of one linkemu switch.

    h1 .. hN  (fixed side)  ──  s1 (linkemu, BMv2)  ──  hN+1 .. hN+M  (mobile side)

With one host a side this is h1 (fixed) - s1 - h2 (mobile). Every host is a
Mininet host (its own network namespace) in 10.0.0.0/8, with checksum
offload off and the profile's MTU. The switch is s1 in network slot 0, and
its slot's name in another (linkemu.testbed.slots).
"""

import os
import shlex
import signal
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from mininet.net import Mininet
from mininet.topo import Topo

from ..drivers.event_log import EventRecorder
from ..drivers.queue_monitor import QueueMonitor
from ..drivers.state_driver import RateDriver, StateDriver, running
from ..model.link_states import walk
from ..model.profile import parse_profile
from ..program import constants as p4
from ..switch.counters import wait_until_idle
from ..switch.p4runtime import Switch
from ..switch.ports import Port, PortLayout
from ..switch.push import install, push_profile, set_hold
from . import leftovers
from .network_lock import only_network
from .p4switch import LinkemuSwitch
from .slots import NetworkSlot
from .veth import host_interface_commands

# The compiled program of this checkout (the package is installed editable).
BUILD = Path(__file__).resolve().parents[3] / "build"

# BMv2 makes a packet header vector (about 78 KB for linkemu's) whenever
# more packets are inside it than ever before (src/bm_sim/phv_source.cpp),
# and a run that first holds that many is late by up to about 100 ms more
# (docs/benchmark.md). So a new switch first holds WARM_UP_FRAMES at once,
# h1 to the first mobile host on a link of its own, in frames of an
# EtherType no host stack answers; then the profile goes in and the
# counters start from zero.
WARM_UP_FRAMES = p4.HOLD_CAPACITY - 60   # 900: under the hold's capacity, all admitted
WARM_UP_LINK = parse_profile({"downlink": {"delay": "200ms", "queue": 1000}, "uplink": {}},
                             source="the warm-up link")
WARM_UP_SEND = ("import socket, sys; s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); "
                "s.bind((sys.argv[1], 0)); frame = bytes.fromhex(sys.argv[2]) + bytes(46); "
                "[s.send(frame) for _ in range(int(sys.argv[3]))]")
WARM_UP_TIMEOUT_S = 10


class LinkTopo(Topo):
    def build(self, fixed=1, mobile=1, switch="s1"):
        switch = self.addSwitch(switch)
        for i in range(1, fixed + mobile + 1):
            host = self.addHost(f"h{i}", ip=f"10.0.0.{i}/8", mac=f"00:00:00:00:00:{i:02x}")
            self.addLink(host, switch, port2=i)


def linkemu_switch(net):
    """The network's one switch (LinkemuSwitch)."""
    return net.switches[0]


def port_layout(net, fixed):
    s1 = linkemu_switch(net)

    def port(host):
        return Port(s1.ports[s1.connectionsTo(host)[0][0]], host.MAC())

    hosts = sorted(net.hosts, key=lambda h: int(h.name[1:]))
    return PortLayout(fixed=tuple(port(h) for h in hosts[:fixed]),
                      mobile=tuple(port(h) for h in hosts[fixed:]))


class SwitchDied(RuntimeError):
    """The network's switch process exited while the network was up."""


_deaths = []   # what the watch found, for the main thread's SIGUSR1 handler


def _raise_switch_died(signum, frame):
    if _deaths:
        raise SwitchDied(_deaths.pop())


@contextmanager
def watched(bmv2, interval_s=0.2):
    """Within `interval_s` of the switch process exiting, SwitchDied is raised
    in the main thread, whatever it waits on (a signal interrupts it), so the
    network comes down at once. Only the main thread takes signals: from any
    other, nothing is watched."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    signal.signal(signal.SIGUSR1, _raise_switch_died)
    process, stop = bmv2.process, threading.Event()

    def watch():
        while not stop.wait(interval_s):
            code = process.poll()
            if code is not None:
                death = (f"the switch (simple_switch_grpc, pid {process.pid}) exited with "
                         f"code {code}; its log: {bmv2.log_path}")
                print(f"*** {death}: stopping the network", file=sys.stderr, flush=True)
                _deaths.append(death)
                signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)
                return

    thread = threading.Thread(target=watch, name="switch-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        _deaths.clear()


@contextmanager
def emulated_link(profile, fixed=1, mobile=1, grpc_port=9559, segments=None,
                  record_path=None, rates_path=None, events_path=None, drive=True,
                  install=None, slot=NetworkSlot(), thrift_port=None):
    """Starts the network with `profile` installed, its link-state timeline
    walking (drawn from the profile's seed, or `segments` when given,
    recorded to `record_path`), its rate changing over time (recorded to
    `rates_path`) and, with `events_path`, every packet's fate logged there;
    stops all of it on exit, and on SwitchDied (see watched). The drivers are
    `net.drivers` (none when `drive` is false and the caller drives with
    link_drivers()). `install(controller, layout, profile)` puts another
    program on the switch instead of linkemu (a benchmark's baseline; it
    takes no drivers). The network takes network slot `slot`, whose switch
    name and cores it has; the switch's Thrift port is `thrift_port`, or
    any free one."""
    if fixed < 1 or mobile < 1 or fixed + mobile > 254:
        raise ValueError("need at least one host on each side and at most 254 hosts")
    with only_network(slot.number):
        leftovers.clean_before_building(prefix="*** ")
        yield from _emulated_link(profile, fixed, mobile, grpc_port, thrift_port, slot,
                                  segments, record_path, rates_path, events_path,
                                  drive and install is None, install)


def _install_linkemu(controller, net, fixed, profile):
    """linkemu with `profile` on a switch warmed up first; returns how many
    frames the warm-up put through."""
    install(controller, BUILD / "linkemu.p4info.txtpb", BUILD / "linkemu.json",
            port_layout(net, fixed), WARM_UP_LINK)
    bmv2 = linkemu_switch(net).bmv2
    set_hold(controller, bmv2.hold_capacity, bmv2.timed)
    warmed = warm_up(controller, net, fixed)
    push_profile(controller, profile)
    controller.clear_counters()
    return warmed


def _emulated_link(profile, fixed, mobile, grpc_port, thrift_port, slot, segments,
                   record_path, rates_path, events_path, drive, install):
    def switch(name, **params):
        return LinkemuSwitch(name, grpc_port=grpc_port, mtu=profile.mtu,
                             thrift_port=thrift_port, cpu=slot.switch_core(), **params)

    net = Mininet(topo=LinkTopo(fixed=fixed, mobile=mobile, switch=slot.switch_name),
                  controller=None, switch=switch, autoSetMacs=False, build=False)
    made = []
    try:
        net.build()
        made = _note_network(net)
        for host in net.hosts:
            quiet_host(host, profile.mtu)
        net.start()
        s1 = linkemu_switch(net)
        for host in net.hosts:
            # Commands a host runs inherit its shell's cores: keep them off the switches'.
            os.sched_setaffinity(host.pid, slot.host_cores())
        with Switch(f"127.0.0.1:{grpc_port}") as controller:
            if install:
                install(controller, port_layout(net, fixed), profile)
            else:
                net.warmed_up = _install_linkemu(controller, net, fixed, profile)
        with watched(s1.bmv2):
            if not drive:
                net.drivers = []
                yield net
                return
            with link_drivers(profile, grpc_port, segments, record_path, rates_path,
                              events_path) as net.drivers:
                yield net
    finally:
        # A host command the network's end cut short (a dead switch) leaves
        # its shell waiting, and Mininet's teardown would stop at that host.
        for host in net.hosts:
            if host.shell and host.waiting:
                host.sendInt()
                host.waitOutput()
        net.stop()
        for kind, key in made:
            leftovers.forget(kind, **key)


def warm_up(controller, net, fixed):
    """Holds WARM_UP_FRAMES at once on the switch's WARM_UP_LINK and waits
    until they are out; returns how many went through."""
    sender, receiver = net.get("h1", f"h{fixed + 1}")   # LinkTopo: the fixed side first
    header = (receiver.MAC() + sender.MAC()).replace(":", "") + "88b5"   # local experimental
    sender.cmd(shlex.quote(sys.executable), "-c", shlex.quote(WARM_UP_SEND),
               sender.defaultIntf().name, header, WARM_UP_FRAMES)
    time.sleep(WARM_UP_LINK.downlink.delay_us / 1e6)
    counters, inside = wait_until_idle(controller, WARM_UP_TIMEOUT_S)
    if inside:
        found = ", ".join(f"{d} {n}" for d, n in inside.items())
        raise RuntimeError(f"the switch's warm-up: frames neither out nor dropped after "
                           f"{WARM_UP_TIMEOUT_S} s ({found}): lost inside BMv2")
    return counters["link_out"]["downlink"][0]


def _note_network(net):
    """Records the nodes' shells (a host's holds its namespace) and the
    switch's interfaces (simple_switch_grpc records itself); returns their
    keys to forget them by."""
    made = []
    for node in net.hosts + net.switches:
        leftovers.note_process(node.shell, node.name)
        made.append(("processes", {"pid": node.pid}))
    for name in linkemu_switch(net).intfNames():
        if name != "lo":
            leftovers.note_interface(name)
            made.append(("interfaces", {"name": name}))
    return made


@contextmanager
def link_drivers(profile, grpc_port, segments, record_path, rates_path=None,
                 events_path=None, event_sample=1.0, queue_path=None):
    """Walks the profile's link states, steps its varying rate, records the
    event log (with `events_path`, of every packet or a random
    `event_sample` of them) and samples the router queues (with
    `queue_path`), each in a thread, over one P4Runtime connection: the
    primary, to which the switch sends the log's digests and the probes'
    answers. Yields the drivers running, the log already on; with nothing
    to drive, none, and no connection that would take the switch's primacy."""
    states = profile.states is not None
    rates = any(d.rate_schedule for d in profile.directions().values())
    if not (states or rates or events_path or queue_path):
        yield []
        return
    with Switch(f"127.0.0.1:{grpc_port}") as controller:
        drivers = []
        if states:
            drivers.append(StateDriver(controller, profile.states,
                                       segments if segments is not None
                                       else walk(profile.states), record_path))
        if rates:
            drivers.append(RateDriver(controller, profile, rates_path))
        if events_path is not None:
            drivers.append(EventRecorder(controller, events_path, sample=event_sample))
        if queue_path is not None:
            drivers.append(QueueMonitor(controller, queue_path))
        with running(*drivers):
            yield drivers


def quiet_host(host, mtu):
    """Readies the host's interface from inside its namespace, without the
    kernel's IPv6 chatter (solicitations, MLD), which would cross the link
    at random instants of an experiment."""
    host.cmd("sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
    for command in host_interface_commands(host.defaultIntf().name, mtu):
        host.cmd(*command)
