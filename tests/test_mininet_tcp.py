"""Real Linux TCP through the emulated link, in Mininet."""

import json
import re
import time
from pathlib import Path

import pytest

from conftest import environment, mininet
from linkemu.model.profile import load_profile
from linkemu.testbed.bmv2 import free_tcp_port

ROOT = Path(__file__).resolve().parent.parent


pytestmark = environment(mininet("iperf3", "ping"))


@pytest.fixture(scope="module")
def link_1mbit_50ms():
    from linkemu.testbed.emunet import emulated_link
    profile = load_profile(ROOT / "profiles" / "1mbit-50ms.yaml")
    with emulated_link(profile, grpc_port=free_tcp_port()) as net:
        yield net


def test_a_new_switch_is_warmed_up_and_counts_from_zero(link_1mbit_50ms):
    # First in this module: the tests after it send frames.
    from linkemu.switch.counters import read_counters
    from linkemu.switch.p4runtime import Switch
    from linkemu.testbed.emunet import WARM_UP_FRAMES
    assert link_1mbit_50ms.warmed_up >= 0.9 * WARM_UP_FRAMES
    with Switch(link_1mbit_50ms.get("s1").bmv2.grpc_address, primary=False) as switch:
        counters = read_counters(switch)
    assert all(packets == 0 for cells in counters.values() for packets, _ in cells.values()), \
        counters


def test_ping_rtt_is_twice_the_delay_plus_serialization(link_1mbit_50ms):
    h1, h2 = link_1mbit_50ms.get("h1", "h2")
    output = h1.cmd("ping -n -c 30 -i 0.2 -s 56", h2.IP())
    readings = re.findall(r"time=([0-9.]+) ms", output)
    assert len(readings) >= 29, output  # the first may wait for ARP
    # ping prints three significant digits, cut off, not rounded: "101"
    # stands for 101.0 up to 102.0 ms.
    rtts = [float(x) for x in readings]
    resolution = [10.0 ** -len(x.partition(".")[2]) for x in readings]
    # 84-byte IP packets: 0.672 ms of serialization each way at 1 Mbit/s.
    expected = 2 * 50 + 2 * 84 * 8 / 1e6 * 1e3
    steady = sorted(zip(rtts[1:], resolution[1:]))
    median = steady[len(steady) // 2][0]
    assert min(rtt + step for rtt, step in steady) >= expected - 0.3, f"RTTs {rtts}"
    assert abs(median - expected) <= 2.0, f"RTTs {rtts}, expected {expected:.3f} ms"


def test_iperf3_goodput_is_90_to_97_percent_of_the_rate(link_1mbit_50ms):
    h1, h2 = link_1mbit_50ms.get("h1", "h2")
    server = h2.popen(["iperf3", "-s", "-1", "-B", h2.IP()])
    try:
        deadline = time.monotonic() + 5
        while ":5201" not in h2.cmd("ss -ltn") and time.monotonic() < deadline:
            time.sleep(0.1)
        output = h1.cmd("iperf3 -c", h2.IP(), "-t 20 -O 3 -J")
    finally:
        server.terminate()
        server.wait()
    report = json.loads(output)
    goodput = report["end"]["sum_received"]["bits_per_second"]
    assert 0.90e6 <= goodput <= 0.97e6, f"goodput {goodput / 1e3:.1f} kbit/s"
