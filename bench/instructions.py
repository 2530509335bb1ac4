"""Instructions BMv2 spends on a frame, per program and per linkemu feature.

callgrind counts instructions: for the same binary, program and frames the
count agrees within a fraction of a percent from run to run, whatever else
the machine does, where the benchmark's rates vary by several percent
(docs/bmv2-costs.md). A change to p4src that should cost BMv2 nothing is
checked here.

Each program runs on a switch of its own under valgrind's callgrind, with
counting off. After a warm-up, counting is on while FRAMES frames of 64 B
cross a zero-delay link, slowly enough that the switch is never behind,
twice, and over as long a time with no frame: the difference, over all of
the switch's threads, divided by the frames that left, is a frame's cost.
linkemu runs on a 1 Gbit/s link, plain and then with one feature at a time
(the benchmark's feature costs).

    python3 bench/instructions.py [--frames N] [--out FILE]
"""

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from linkemu.switch.p4runtime import Switch
from linkemu.switch.push import push_profile
from linkemu.testbed import leftovers
from linkemu.testbed.veth_switch import veth_switch, veth_testbed

from benchmark import FEATURES, LAYOUT, build_info, link, machine
from programs import BASELINE, LINKEMU, PLAIN_BASELINE, plain_arrival_entries, sync_baseline
from traffic import paced

FRAMES = 200
SPACING_S = 0.02   # under callgrind a linkemu frame takes a few milliseconds
WARM_UP = 50
START_TIMEOUT_S = 120.0   # BMv2 under valgrind starts and loads a program slowly
TOTALS = re.compile(r"^(?:totals|summary):\s+(\d+)", re.MULTILINE)


def callgrind_totals(text):
    """The instruction count of a callgrind dump."""
    found = TOTALS.findall(text)
    if not found:
        raise ValueError("no totals or summary line: not a callgrind dump")
    return int(found[-1])


class Counting:
    """callgrind's counting in a running switch: `measure` returns the
    instructions its threads ran while `work` did."""

    def __init__(self, pid, dumps):
        self.pid, self.dumps = pid, dumps

    def control(self, *options):
        subprocess.run(["callgrind_control", *options, str(self.pid)], check=True,
                       capture_output=True, timeout=60)

    def measure(self, work):
        before = set(self.dumps.iterdir())
        self.control("--zero")
        self.control("--instr=on")
        try:
            result = work()
        finally:
            self.control("--instr=off")
            self.control("--dump")
        (dump,) = set(self.dumps.iterdir()) - before
        return callgrind_totals(dump.read_text(errors="replace")), result


def frame_cost(switch, peers, counting, frames):
    """Instructions per frame delivered, the fewer of two runs, and the
    frames entered and delivered: now and then a switch thread does work of
    its own, once, inside a run (measured: a plain link 133 400 and
    117 700 instructions a frame in two runs, right after the switch
    started)."""
    schedule = [(i * SPACING_S, 64) for i in range(frames)]
    wait = 1.0
    paced(switch, peers, schedule[:WARM_UP], wait)
    runs = [counting.measure(lambda: paced(switch, peers, schedule, wait)) for _ in range(2)]
    idle, _ = counting.measure(lambda: time.sleep(frames * SPACING_S + wait + 0.6))
    costs = [(busy - idle) / max(1, len(run.departures)) for busy, run in runs]
    return {"instructions_per_frame": round(min(costs)), "runs": [round(c) for c in costs],
            "entered": [len(run.arrivals) for _, run in runs],
            "delivered": [len(run.departures) for _, run in runs], "idle": idle}


def under_callgrind(dumps):
    return {"wrapper": ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                        f"--callgrind-out-file={dumps}/callgrind.out"],
            "start_timeout": START_TIMEOUT_S}


def baseline(program, entries, frames):
    with tempfile.TemporaryDirectory() as dumps, \
            veth_switch([1, 2], **under_callgrind(dumps)) as (switch, peers):
        with Switch(switch.grpc_address, timeout=START_TIMEOUT_S) as controller:
            controller.set_pipeline(*program)
            sync_baseline(controller, entries)
        return frame_cost(switch, peers, Counting(switch.pid, Path(dumps)), frames)


def linkemu(frames):
    rows = {}
    with tempfile.TemporaryDirectory() as dumps, \
            veth_testbed(LAYOUT, link(), *LINKEMU, **under_callgrind(dumps)) as (switch, peers):
        counting = Counting(switch.pid, Path(dumps))
        with Switch(switch.grpc_address, timeout=START_TIMEOUT_S) as controller:
            for name, extra in FEATURES:
                push_profile(controller, link(rate="1Gbit", **extra))
                rows[name] = frame_cost(switch, peers, counting, frames)
    return rows


def frame_count(text):
    count = int(text)
    if count < 1:
        raise argparse.ArgumentTypeError(f"{text}: at least one frame")
    return count


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=frame_count, default=FRAMES,
                        help=f"frames counted in each run (default {FRAMES})")
    parser.add_argument("--out", type=Path, help="write the results here as JSON")
    args = parser.parse_args(argv)
    missing = [tool for tool in ("valgrind", "callgrind_control") if not shutil.which(tool)]
    if missing:
        print(f"{', '.join(missing)} missing: 'make setup' installs valgrind", file=sys.stderr)
        return 2
    for path in (*BASELINE, *PLAIN_BASELINE, *LINKEMU):
        if not path.exists():
            print(f"{path} is missing: run 'make build'", file=sys.stderr)
            return 2
    leftovers.exit_on_termination()
    plain = link().downlink
    results = {"machine": machine(), "build": build_info(), "frames": args.frames,
               "forward": baseline(BASELINE, [], args.frames),
               "plain_arrival": baseline(PLAIN_BASELINE, plain_arrival_entries(plain),
                                         args.frames),
               "linkemu": linkemu(args.frames)}
    print(f"{'program':34} instructions per frame")
    for name in ("forward", "plain_arrival"):
        print(f"{name:34} {results[name]['instructions_per_frame']:>10}")
    for feature, row in results["linkemu"].items():
        print(f"{'linkemu, ' + feature:34} {row['instructions_per_frame']:>10}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
