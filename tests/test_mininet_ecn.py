"""Real Linux TCP with ECN through RED: receivers see CE marks, and RED
drops no ECN-capable data (it marks instead)."""

import json
import time

from scapy.layers.inet import IP, TCP
from scapy.utils import PcapReader

from conftest import environment, mininet
from linkemu.model.profile import parse_profile
from linkemu.switch.counters import read_counters
from linkemu.switch.p4runtime import Switch
from linkemu.testbed.bmv2 import free_tcp_port

pytestmark = environment(mininet("iperf3", "tcpdump"))

LINK = {"rate": "2Mbit", "delay": "20ms", "queue": 100,
        "red": {"min": 5, "max": 40, "max_p": 0.2, "weight": 0.02, "ecn": True}}


def test_two_ecn_flows_are_marked_not_dropped(tmp_path):
    from linkemu.testbed.emunet import emulated_link
    profile = parse_profile({"downlink": LINK, "uplink": {"rate": "2Mbit", "delay": "20ms"}})
    pcap = tmp_path / "receiver.pcap"
    port = free_tcp_port()
    with emulated_link(profile, grpc_port=port) as net:
        h1, h2 = net.get("h1", "h2")
        for host in (h1, h2):
            host.cmd("sysctl -q -w net.ipv4.tcp_ecn=1")
            assert host.cmd("sysctl -n net.ipv4.tcp_ecn").strip() == "1"
        capture = h2.popen(["tcpdump", "-i", h2.defaultIntf().name, "-Q", "in", "-s", "128",
                            "-w", str(pcap), "tcp"])
        server = h2.popen(["iperf3", "-s", "-1", "-B", h2.IP()])
        time.sleep(1)
        report = json.loads(h1.cmd("iperf3 -c", h2.IP(), "-P 2 -t 10 -J"))
        server.wait(timeout=30)
        time.sleep(0.5)
        capture.terminate()
        capture.wait()
        with Switch(f"127.0.0.1:{port}") as controller:
            counters = read_counters(controller)
    assert report["end"]["sum_received"]["bytes"] > 0
    data = [p for p in PcapReader(str(pcap)) if IP in p and TCP in p and p[TCP].payload]
    ce = [p for p in data if p[IP].tos & 3 == 3]
    assert ce, "no CE-marked data reached the receiver"
    assert counters["ecn_marks"]["downlink"][0] >= len(ce)
    assert counters["drop_aqm_ect"]["downlink"][0] == 0, counters
    print(f"{len(ce)} of {len(data)} data packets arrived CE-marked; counters {counters}")
