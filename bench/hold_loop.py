"""Release-time error of synthetic traffic through the switch, and its CPU use.

Sends `count` frames of `size` bytes, `interval` seconds apart, from the fixed
side, captures them where they enter and leave the switch (kernel timestamps,
one clock) and compares each departure with the instant the link model says it
was due. Without Mininet: veth pairs only.

    sudo .venv/bin/python bench/hold_loop.py --profile profiles/gprs-optimal.yaml
"""

import argparse
import json
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path

from linkemu.dataplane import Port, PortLayout
from linkemu.capture import Capture
from linkemu.fidelity import compare
from linkemu.profile import load_profile
from linkemu.testbed import veth_testbed

BUILD = Path(__file__).resolve().parent.parent / "build"


def frames(count, size):
    head = bytes.fromhex("000000000002" "000000000001" "88b5")  # local experimental type
    return [head + struct.pack("!I", i) + bytes(size - len(head) - 4) for i in range(count)]


def measure(profile_path, count, interval, size):
    profile = load_profile(profile_path)
    layout = PortLayout(fixed=(Port(1),), mobile=(Port(2),))
    with tempfile.TemporaryDirectory() as workdir, \
            veth_testbed(layout, profile, BUILD / "linkemu.p4info.txtpb",
                         BUILD / "linkemu.json") as (switch, peers):
        arrivals = Capture(switch.ports[1], "in", Path(workdir) / "in.pcap")
        departures = Capture(switch.ports[2], "out", Path(workdir) / "out.pcap")
        arrivals.start()
        departures.start()
        sender = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        sender.bind((peers[1], 0))
        payloads = frames(count, size)
        cpu_before, start = switch.cpu_seconds(), time.monotonic()
        for i, payload in enumerate(payloads):
            pause = start + i * interval - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            sender.send(payload)
        held = profile.downlink.delay_us / 1e6 + 1 + count * size * 8 / (
            profile.downlink.rate_bps or 1e12)
        time.sleep(held)
        cpu = (switch.cpu_seconds() - cpu_before) / (time.monotonic() - start)
        arrivals.stop()
        departures.stop()
        fidelity = compare(arrivals.frames(), departures.frames(), profile.downlink)
    return {"profile": profile.name, "count": count, "interval_s": interval, "size": size,
            "switch_cpu_cores": round(cpu, 3), **fidelity.summary()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", required=True)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--interval", type=float, default=0.01, help="seconds between frames")
    parser.add_argument("--size", type=int, default=500, help="frame bytes")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.profile, args.count, args.interval, args.size)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
