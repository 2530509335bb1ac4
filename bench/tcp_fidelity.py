"""Release-time error of every packet of a real TCP flow, and the switch's CPU.

Runs iperf3 from h1 (fixed side) to h2 (mobile side) through a profile,
captures both switch ports in both directions (one clock for all four
captures), and compares each frame's departure with the instant the link
model says it was due. Prints one JSON object per direction.

    sudo .venv/bin/python bench/tcp_fidelity.py --profile profiles/gprs-optimal.yaml
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from linkemu.drivers.fidelity import compare
from linkemu.model.profile import load_profile
from linkemu.switch import dataplane
from linkemu.switch.p4runtime import Switch
from linkemu.testbed import leftovers
from linkemu.testbed.bmv2 import free_tcp_port
from linkemu.testbed.capture import Capture
from linkemu.testbed.emunet import emulated_link


def measure(profile_path, seconds, workdir):
    profile = load_profile(profile_path)
    with emulated_link(profile, grpc_port=free_tcp_port()) as net:
        h1, h2, s1 = net.get("h1", "h2", "s1")
        ports = s1.ports_by_number()
        fixed, mobile = ports[1], ports[2]
        h1.cmd("ping -c 2 -i 0.2", h2.IP())  # ARP out of the way
        captures = {(i, d): Capture(i, d, Path(workdir) / f"{i}-{d}.pcap")
                    for i in (fixed, mobile) for d in ("in", "out")}
        for capture in captures.values():
            capture.start()
        server = h2.popen(["iperf3", "-s", "-1", "-B", h2.IP()])
        time.sleep(0.5)
        cpu_before, wall_before = s1.bmv2.cpu_seconds(), time.monotonic()
        report = json.loads(h1.cmd("iperf3 -c", h2.IP(), f"-t {seconds} -J"))
        cpu = (s1.bmv2.cpu_seconds() - cpu_before) / (time.monotonic() - wall_before)
        server.wait(timeout=10)
        time.sleep(2 + 2 * max(profile.downlink.delay_us, profile.uplink.delay_us) / 1e6)
        for capture in captures.values():
            capture.stop()
        with Switch(s1.bmv2.grpc_address) as controller:
            counters = dataplane.read_counters(controller)
    results = {"profile": profile.name, "tcp_seconds": seconds,
               "goodput_bps": report["end"]["sum_received"]["bits_per_second"],
               "switch_cpu_cores": round(cpu, 3), "counters": counters}
    for name, src, dst, direction in (("downlink", fixed, mobile, profile.downlink),
                                      ("uplink", mobile, fixed, profile.uplink)):
        fidelity = compare(captures[src, "in"].frames(), captures[dst, "out"].frames(),
                           direction)
        results[name] = fidelity.summary()
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", action="append", required=True)
    parser.add_argument("--seconds", type=int, default=20)
    args = parser.parse_args(argv)
    leftovers.exit_on_termination()
    for profile in args.profile:
        with tempfile.TemporaryDirectory() as workdir:
            print(json.dumps(measure(profile, args.seconds, workdir), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
