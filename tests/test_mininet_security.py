"""The switch's servers are the controller's alone: P4Runtime on 127.0.0.1,
and BMv2's Thrift server, which binds every address, behind its guard (an
nftables table that drops any connection to it not over loopback). A
Mininet host is given a route to this machine, and a listener of the
test's own shows that the route works."""

import json
import socket
import subprocess

import pytest

from conftest import environment, mininet
from linkemu.model.profile import load_profile
from linkemu.testbed.bmv2 import free_tcp_port
from test_mininet_tcp import ROOT

pytestmark = environment(mininet("ss", "nft"))

CONNECT = ("python3 -c 'import socket, sys; s = socket.socket(); s.settimeout(2); "
           "print(s.connect_ex((sys.argv[1], int(sys.argv[2]))))'")


@pytest.fixture(scope="module")
def net():
    from linkemu.testbed.emunet import emulated_link
    with emulated_link(load_profile(ROOT / "profiles" / "ethernet.yaml"),
                       grpc_port=free_tcp_port(), drive=False) as net:
        yield net


def listening(pid):
    """(address, port) of every TCP socket process `pid` listens on."""
    out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True).stdout
    sockets = set()
    for line in out.splitlines():
        if f"pid={pid}," in line:
            address, port = line.split()[3].rsplit(":", 1)
            sockets.add((address.strip("[]").removeprefix("::ffff:"), int(port)))
    return sockets


def test_grpc_listens_on_loopback_and_thrift_has_its_guard(net):
    bmv2 = net.get("s1").bmv2
    sockets = listening(bmv2.pid)
    assert ("127.0.0.1", bmv2.grpc_port) in sockets
    assert {port for _, port in sockets} == {bmv2.grpc_port, bmv2.thrift_port}, sockets
    table = subprocess.run(["nft", "-j", "list", "table", "inet", bmv2.guard.table],
                           capture_output=True, text=True)
    assert table.returncode == 0, table.stderr
    assert str(bmv2.thrift_port) in json.dumps(json.loads(table.stdout))
    with bmv2.queues() as queues:   # the controller, over loopback, gets through
        assert queues.elapsed_us() > 0


def this_machines_address():
    out = subprocess.run(["ip", "-o", "-4", "addr", "show", "scope", "global"],
                         capture_output=True, text=True).stdout.split()
    return out[out.index("inet") + 1].split("/")[0] if "inet" in out else None


def a_global_address():
    if this_machines_address() is None:
        return "this machine has no global IPv4 address to aim at"
    return None


@environment(a_global_address)
def test_a_host_with_a_route_here_reaches_neither_server(net):
    address = this_machines_address()
    h1, s1 = net.get("h1", "s1")
    switch_end = s1.connectionsTo(h1)[0][0]
    control = socket.socket()
    control.bind(("0.0.0.0", 0))
    control.listen()
    route_back = ["ip", "route", "add", f"{h1.IP()}/32", "dev", switch_end.name]
    subprocess.run(route_back, check=True)
    try:
        h1.cmd(f"ip route add {address}/32 dev {h1.defaultIntf().name}")
        h1.cmd(f"ip neigh replace {address} lladdr {switch_end.MAC()} "
               f"dev {h1.defaultIntf().name}")

        def connect(port):
            return int(h1.cmd(f"{CONNECT} {address} {port}").strip().splitlines()[-1])

        assert connect(control.getsockname()[1]) == 0, "the host has no way here at all"
        bmv2 = s1.bmv2
        assert connect(bmv2.thrift_port) != 0, "a host reached the switch's Thrift server"
        assert connect(bmv2.grpc_port) != 0, "a host reached the switch's P4Runtime server"
    finally:
        control.close()
        route_back[2] = "del"
        subprocess.run(route_back)
