"""The soak: a long run that must change nothing over time.

The S-WWW medium-ARQ link (64 kbit/s, 300 ms, good/bad states, ARQ) in
Mininet with the state driver walking and the event log on, for --minutes:
continuous TCP (iperf3, CUBIC, h1 -> h2: the downlink) and UDP (iperf3,
8 kbit/s of 200-byte datagrams, h2 -> h1: the uplink beside the ACKs).
Every --sample seconds it reads the resident memory of the switch and of
this controller. At the end, with the traffic stopped and the link idle:

- memory at start and end (flat within 10 % is the target);
- the release error of every frame (the event log: release - due) in the
  first and in the last WINDOW of the run: p50, p99, max (no drift);
- the state changes' lateness in each WINDOW: p50, p99, max;
- frames unaccounted for: entered the link, neither left nor dropped by a
  counted cause (counters); and counters against the event log (must be 0);
- the frames each direction released in the first and the last WINDOW: the
  last must be at least half the first (the traffic kept flowing).

    sudo .venv/bin/python bench/soak.py --minutes 30 [--out DIR]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from linkemu.drivers.event_log import outcomes, read_events
from linkemu.drivers.state_driver import StateDriver
from linkemu.model.profile import load_profile
from linkemu.switch.codes import DIRECTION_IDS
from linkemu.switch.counters import in_flight, wait_until_idle
from linkemu.switch.p4runtime import Switch
from linkemu.testbed import leftovers
from linkemu.testbed.bmv2 import free_tcp_port
from linkemu.testbed.emunet import emulated_link

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / "profiles" / "swww-medium-arq.yaml"
WINDOW_S = 300.0     # the first and the last five minutes
FLOWING = 0.5        # the last window carries at least this share of the first's frames
MEMORY_TARGET = 0.10


def resident_kb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise ValueError(f"no VmRSS for pid {pid}")


def spread(values):
    """p50, p99, max of `values`, None where there are none."""
    if not values:
        return {"count": 0}
    ordered = sorted(values)
    return {"count": len(ordered), "p50": statistics.median(ordered),
            "p99": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
            "max": ordered[-1]}


def windows(samples, start, end, window_s):
    """The values of (instant, value) `samples` in the first and the last
    `window_s` of [start, end], as spreads."""
    window_s = min(window_s, (end - start) / 2)
    return {"first": spread([v for t, v in samples if t < start + window_s]),
            "last": spread([v for t, v in samples if t >= end - window_s])}


def analyse(events, counters, applied, memory, start_us, end_us, window_s=WINDOW_S):
    """The soak's report from the event log, the counters at the end, the
    state driver's applied changes [(instant s, latency s)] and memory
    samples [(s, switch kB, controller kB)], all on the run's own clock
    (seconds since its start; events in switch microseconds)."""
    start_s, end_s = start_us / 1e6, end_us / 1e6
    # A frame held behind a retransmitted one is due when that one is out.
    released = [(e.arrival_us / 1e6, e.error_us / 1e3) for e in events
                if e.released and not e.has("held")]
    logged = outcomes(events)
    accounting = {}
    for direction in DIRECTION_IDS:
        entered = counters["link_in"][direction][0]
        accounting[direction] = {
            "entered": entered,
            "unaccounted": in_flight(counters, direction),
            "log_minus_counters": sum(logged[direction].values()) - entered}
    first, last = memory[0], memory[-1]
    growth = {name: (last[i] - first[i]) / first[i]
              for i, name in ((1, "switch"), (2, "controller"))}
    flat = all(abs(g) <= MEMORY_TARGET for g in growth.values())
    # Frames that left the link per window: the traffic must not have stopped.
    carried = {direction: {name: spread["count"] for name, spread in windows(
        [(e.arrival_us / 1e6, 0) for e in events if e.released and e.direction == direction],
        start_s, end_s, window_s).items()} for direction in DIRECTION_IDS}
    flowing = all(c["last"] >= FLOWING * c["first"] for c in carried.values())
    return {
        "minutes": (end_s - start_s) / 60,
        "release_error_ms": windows(released, start_s, end_s, window_s),
        "state_change_latency_ms": windows([(t, lat * 1e3) for t, lat in applied],
                                           0.0, (end_us - start_us) / 1e6, window_s),
        "memory_kb": {"switch": [first[1], last[1]], "controller": [first[2], last[2]],
                      "growth": growth, "flat": flat},
        "frames": accounting,
        "released_per_window": carried,
        "flowing": flowing,
        "events": len(events),
        "passed": flat and flowing and all(a["unaccounted"] == 0 and a["log_minus_counters"] == 0
                               for a in accounting.values())}


def iperf3(host, args, workdir, name):
    """iperf3 on `host`, its report in workdir/iperf3-NAME.txt: a pipe nobody
    reads fills in minutes and stops the process (the TCP receiver, and then
    its flow) with it."""
    with open(workdir / f"iperf3-{name}.txt", "w") as output:
        return host.popen(["iperf3"] + args, stdout=output, stderr=subprocess.STDOUT)


def soak(seconds, sample_s, workdir):
    profile = load_profile(PROFILE)
    events_path = workdir / "events.csv"
    memory = []
    with emulated_link(profile, grpc_port=free_tcp_port(), record_path=workdir / "timeline.csv",
                       events_path=events_path) as net:
        h1, h2, s1 = net.get("h1", "h2", "s1")
        states, = (d for d in net.drivers if isinstance(d, StateDriver))
        h1.cmd("ping -c 2 -i 0.5", h2.IP())   # ARP out of the way
        # Stopped when the time is up, or on the way out whatever happens:
        # a TCP sender's buffer would take minutes to drain over 64 kbit/s.
        processes = []
        try:
            processes += [
                iperf3(h2, ["-s", "-1", "-B", h2.IP(), "-p", "5201"], workdir, "tcp-server"),
                iperf3(h1, ["-s", "-1", "-B", h1.IP(), "-p", "5202"], workdir, "udp-server")]
            time.sleep(1)
            started = time.time()
            processes += [iperf3(h1, ["-c", h2.IP(), "-p", "5201", "-C", "cubic", "-t", "0"],
                                 workdir, "tcp-client"),
                          iperf3(h2, ["-c", h1.IP(), "-p", "5202", "-u", "-b", "8k", "-l", "200",
                                      "-t", "0"], workdir, "udp-client")]
            while True:
                memory.append((time.time() - started, resident_kb(s1.bmv2.pid),
                               resident_kb(os.getpid())))
                left = started + seconds - time.time()
                if left <= 0:
                    break
                time.sleep(min(sample_s, left))
        finally:
            for process in processes:
                process.kill()
                process.wait()
        with Switch(s1.bmv2.grpc_address, primary=False) as controller:
            counters, _ = wait_until_idle(controller, 60, poll_s=1)
        start_us = states.clock.switch_us(started)
        end_us = states.clock.switch_us(started + seconds)
        applied = [(a.applied_unix - a.latency_s - started, a.latency_s)
                   for a in states.applied]
    report = analyse(read_events(events_path), counters, applied, memory, start_us, end_us)
    report["delivered_bps"] = {d: counters["link_out"][d][1] * 8 / seconds
                               for d in DIRECTION_IDS}
    report["memory_samples"] = memory
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--sample", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--out", help="results folder (default results/soak-DATE)")
    args = parser.parse_args(argv)
    leftovers.exit_on_termination()
    out = Path(args.out or ROOT / "results" / f"soak-{time.strftime('%Y%m%d-%H%M%S')}")
    out.mkdir(parents=True, exist_ok=True)
    report = soak(args.minutes * 60, args.sample, out)
    report["date"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
    (out / "report.json").write_text(json.dumps(report, indent=1))
    shown = {k: v for k, v in report.items() if k != "memory_samples"}
    print(json.dumps(shown, indent=1))
    print(f"report in {out / 'report.json'}")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
