"""Release-time error of every packet of a real TCP flow, and the switch's CPU.

Runs iperf3 from h1 (fixed side) to h2 (mobile side) through a profile,
captures both switch ports in both directions (one clock for all four
captures), and compares each frame's departure with the instant the link
model says it was due. Prints one JSON object per direction. With
--least-link the switch runs bench/minimal_link.p4 instead, the least a link
model does (the profile's downlink both ways): TCP through the bare mechanism.

    sudo .venv/bin/python bench/tcp_fidelity.py --profile profiles/gprs-optimal.yaml
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmark import MINIMAL_BASELINE, minimal_link_entries
from linkemu.drivers.fidelity import compare
from linkemu.model.profile import load_profile
from linkemu.switch import dataplane
from linkemu.switch.p4runtime import Switch
from linkemu.testbed import leftovers
from linkemu.testbed.bmv2 import free_tcp_port
from linkemu.testbed.capture import Capture
from linkemu.testbed.emunet import emulated_link


def install_least_link(controller, layout, profile):
    controller.set_pipeline(*MINIMAL_BASELINE)
    entries = minimal_link_entries(profile.downlink)
    controller.sync_table(entries[0].table, entries)


def measure(profile_path, seconds, workdir, least_link=False):
    profile = load_profile(profile_path)
    with emulated_link(profile, grpc_port=free_tcp_port(),
                       install=install_least_link if least_link else None) as net:
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
        # Bounded: a link that froze (frames BMv2 dropped, waited for in
        # order) leaves iperf3 waiting for ever.
        output = h1.cmd("timeout", seconds + 30, "iperf3 -c", h2.IP(), f"-t {seconds} -J")
        cpu = (s1.bmv2.cpu_seconds() - cpu_before) / (time.monotonic() - wall_before)
        try:
            goodput = json.loads(output)["end"]["sum_received"]["bits_per_second"]
        except (ValueError, KeyError):
            goodput = None
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        time.sleep(2 + 2 * max(profile.downlink.delay_us, profile.uplink.delay_us) / 1e6)
        for capture in captures.values():
            capture.stop()
        counters = None
        if not least_link:
            with Switch(s1.bmv2.grpc_address) as controller:
                counters = dataplane.read_counters(controller)
    results = {"profile": profile.name,
               "program": "least link model" if least_link else "linkemu",
               "tcp_seconds": seconds,
               "goodput_bps": goodput,   # None: iperf3 never finished
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
    parser.add_argument("--least-link", action="store_true",
                        help="through bench/minimal_link.p4, not linkemu")
    args = parser.parse_args(argv)
    leftovers.exit_on_termination()
    for profile in args.profile:
        with tempfile.TemporaryDirectory() as workdir:
            print(json.dumps(measure(profile, args.seconds, workdir, args.least_link),
                             indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
