"""Real TCP through a profile: goodput, round trip, switch CPU, release error.

Runs iperf3 from h1 (fixed side) to h2 (mobile side) through a profile in
Mininet, with a named congestion control and the hosts' socket buffers sized
for the path, captures both switch ports in both directions (one clock for
all four captures), and compares each frame's departure with the instant the
link model says it was due. Prints one JSON object per profile. `--program`
runs, instead of linkemu, the least link model (minimal_link:
bench/minimal_link.p4 with the profile's downlink both ways, TCP through the
bare mechanism) or plain forwarding (forward: bench/forward.p4, no link at
all, BMv2's own ceiling; nothing is captured).

    sudo .venv/bin/python bench/tcp_fidelity.py --profile profiles/gprs-optimal.yaml
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from linkemu.drivers.fidelity import compare
from linkemu.experiments.tcp_config import AVAILABLE_CC
from linkemu.model.profile import load_profile
from linkemu.switch.counters import read_counters
from linkemu.switch.p4runtime import Switch
from linkemu.testbed import leftovers
from linkemu.testbed.bmv2 import free_tcp_port
from linkemu.testbed.capture import Capture

from programs import BASELINE, MINIMAL_BASELINE, minimal_link_entries

# Linux's default elsewhere; this machine's kernel defaults to BBR, which
# new namespaces inherit.
CONGESTION = "cubic"


def install_least_link(controller, layout, profile):
    controller.set_pipeline(*MINIMAL_BASELINE)
    entries = minimal_link_entries(profile.downlink)
    controller.sync_table(entries[0].table, entries)


def install_forwarding(controller, layout, profile):
    controller.set_pipeline(*BASELINE)


# How each program (by its name in programs.PROGRAMS) goes on the switch;
# None: linkemu, installed as a user runs it.
INSTALL = {"linkemu": None, "minimal_link": install_least_link, "forward": install_forwarding}


def path_buffer_bytes(profile):
    """The socket buffer TCP needs to fill the path from h1 to h2: the round
    trip's bandwidth-delay product plus a full router queue, twice over
    (Linux gives the window about half of a socket's buffer). None: the
    link has no rate to fill."""
    down, up = profile.downlink, profile.uplink
    if down.rate_bps is None:
        return None
    in_flight = down.rate_bps / 8 * (down.delay_us + up.delay_us) / 1e6
    return int(2 * (in_flight + down.queue_packets * profile.mtu))


def size_buffers(host, size):
    """Raises the most TCP may buffer a socket's way in and out on `host` to
    `size` bytes, where its namespace's default is less."""
    for knob in ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"):
        low, default, most = host.cmd("sysctl -n", knob).split()
        host.cmd("sysctl -q -w", f"{knob}='{low} {default} {max(int(most), size)}'")


def iperf_figures(output):
    """Goodput (bit/s), retransmissions and the sender's round trip (ms) from
    iperf3's JSON; None for a run that never finished (a frozen link)."""
    try:
        end = json.loads(output)["end"]
        sender = end["streams"][0]["sender"]
        return {"goodput_bps": end["sum_received"]["bits_per_second"],
                "retransmits": end["sum_sent"]["retransmits"],
                "rtt_mean_ms": sender["mean_rtt"] / 1e3, "rtt_max_ms": sender["max_rtt"] / 1e3}
    except (ValueError, KeyError, IndexError):
        return {"goodput_bps": None}


def path_times(profile):
    """The profile's round trip, and what the sender's full router queue
    adds to it (frames of the MTU)."""
    way = profile.downlink
    frame_bits = (profile.mtu + way.overhead_bytes) * 8
    return {"round_trip_ms": (profile.downlink.delay_us + profile.uplink.delay_us) / 1e3,
            "queue_ms": way.queue_packets * frame_bits / way.rate_bps * 1e3
            if way.rate_bps else 0.0}


def measure(profile_path, seconds, workdir, program="linkemu", congestion=CONGESTION):
    # Mininet only here: the figures above are read without it.
    from linkemu.testbed.emunet import emulated_link
    profile = load_profile(profile_path)
    buffer_bytes = path_buffer_bytes(profile)
    linked = program != "forward"   # a link model to set departures against
    with emulated_link(profile, grpc_port=free_tcp_port(), install=INSTALL[program]) as net:
        h1, h2, s1 = net.get("h1", "h2", "s1")
        if buffer_bytes:
            for host in (h1, h2):
                size_buffers(host, buffer_bytes)
        ports = s1.ports_by_number()
        fixed, mobile = ports[1], ports[2]
        h1.cmd("ping -c 2 -i 0.2", h2.IP())  # ARP out of the way
        if program == "linkemu":
            with Switch(s1.bmv2.grpc_address) as controller:
                before = read_counters(controller)["link_in"]
        captures = {(i, d): Capture(i, d, Path(workdir) / f"{i}-{d}.pcap")
                    for i in (fixed, mobile) for d in ("in", "out")} if linked else {}
        for capture in captures.values():
            capture.start()
        server = h2.popen(["iperf3", "-s", "-1", "-B", h2.IP()])
        time.sleep(0.5)
        cpu_before, wall_before = s1.bmv2.cpu_seconds(), time.monotonic()
        # Bounded: a link that froze (frames BMv2 dropped, waited for in
        # order) leaves iperf3 waiting for ever.
        output = h1.cmd("timeout", seconds + 30, "iperf3 -c", h2.IP(), f"-t {seconds}",
                        f"-C {congestion} -J")
        cpu = (s1.bmv2.cpu_seconds() - cpu_before) / (time.monotonic() - wall_before)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        if captures:
            time.sleep(2 + 2 * max(profile.downlink.delay_us, profile.uplink.delay_us) / 1e6)
        for capture in captures.values():
            capture.stop()
        counters = taken_in = None
        if program == "linkemu":
            with Switch(s1.bmv2.grpc_address) as controller:
                counters = read_counters(controller)
            taken_in = {d: counters["link_in"][d][0] - before[d][0] for d in before}
    results = {"profile": profile.name, "rate_bps": profile.downlink.rate_bps,
               "program": program, "tcp_seconds": seconds,
               "congestion": congestion, "buffer_bytes": buffer_bytes,
               **path_times(profile), **iperf_figures(output), "switch_cpu_cores": round(cpu, 3),
               "counters": counters}
    if linked:
        for name, src, dst, direction in (("downlink", fixed, mobile, profile.downlink),
                                          ("uplink", mobile, fixed, profile.uplink)):
            arrivals = captures[src, "in"].frames()
            results[name] = compare(arrivals, captures[dst, "out"].frames(),
                                    direction).summary()
            if taken_in:
                # Reached the port, never the program: the switch's capture
                # thread fell behind and the kernel dropped them at its
                # socket's ring (docs/fidelity.md).
                results[name]["not_taken_in"] = len(arrivals) - taken_in[name]
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", action="append", required=True)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--program", choices=INSTALL, default="linkemu")
    parser.add_argument("--congestion", default=CONGESTION,
                        choices=Path(AVAILABLE_CC).read_text().split(),
                        help=f"TCP congestion control (default {CONGESTION})")
    args = parser.parse_args(argv)
    leftovers.exit_on_termination()
    for profile in args.profile:
        with tempfile.TemporaryDirectory() as workdir:
            results = measure(profile, args.seconds, workdir, args.program, args.congestion)
            print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
