"""Latency from a link state's scheduled instant to the switch applying it.

Walks a two-state chain that changes every `--interval` for `--seconds` on a
switch of its own, and prints the latency distribution of the changes.

    sudo .venv/bin/python bench/state_latency.py --interval 0.05 --seconds 20
"""

import argparse
import json
import sys
from pathlib import Path

from linkemu.dataplane import Port, PortLayout
from linkemu.link_states import walk
from linkemu.p4runtime import Switch
from linkemu.profile import parse_profile
from linkemu.state_driver import StateDriver
from linkemu.testbed import veth_testbed

BUILD = Path(__file__).resolve().parent.parent / "build"


def measure(interval, seconds):
    static = {"distribution": "static", "value": f"{interval * 1e3:g}ms"}
    profile = parse_profile({"downlink": {}, "uplink": {}, "link_states": {
        "start": {"good": 1}, "states": {
            "good": {"error": 0, "duration": static, "next": {"bad": 1}},
            "bad": {"error": 0.5, "duration": static, "next": {"good": 1}}}}})
    layout = PortLayout(fixed=(Port(1),), mobile=(Port(2),))
    with veth_testbed(layout, profile, BUILD / "linkemu.p4info.txtpb",
                      BUILD / "linkemu.json") as (switch, _):
        with Switch(switch.grpc_address) as controller:
            driver = StateDriver(controller, profile.states, walk(profile.states))
            driver.run(duration_s=seconds)
    return {"interval_s": interval, **driver.latency_summary()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=0.05, help="seconds per state")
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.interval, args.seconds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
