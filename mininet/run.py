"""Launches hosts around the linkemu switch and opens the Mininet CLI.

    sudo .venv/bin/python mininet/run.py --profile profiles/gprs-optimal.yaml
    sudo .venv/bin/python mininet/run.py --profile P --script commands.txt
    sudo .venv/bin/python mininet/run.py --profile P --fixed 2 --mobile 3

Hosts h1..hN are on the fixed side, the next M on the mobile side. Everything
started is stopped on exit, on Ctrl-C and on error.
"""

import argparse
import os
import sys

from mininet.cli import CLI
from mininet.log import setLogLevel

from linkemu.drivers.state_driver import default_record_path
from linkemu.model.link_states import TimelineError, read_timeline, walk
from linkemu.model.profile import ProfileError, load_profile
from linkemu.testbed import leftovers
from linkemu.testbed.bmv2 import (GET_TOOLS, SWITCH_TOOLS, hold_warnings,
                                  missing_tools)
from linkemu.testbed.emunet import BUILD, emulated_link


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", required=True, help="link profile (YAML)")
    parser.add_argument("--script", help="Mininet CLI commands to run instead of a prompt")
    parser.add_argument("--fixed", type=int, default=1, help="hosts on the fixed side")
    parser.add_argument("--mobile", type=int, default=1, help="hosts on the mobile side")
    parser.add_argument("--seed", type=int, help="link-state seed (overrides the profile's)")
    parser.add_argument("--replay", metavar="TIMELINE", help="replay a recorded state timeline")
    parser.add_argument("--record", metavar="CSV", help="where to record the applied state "
                        "timeline (default timeline-PROFILE-TIME.csv)")
    parser.add_argument("--event-log", metavar="CSV",
                        help="log every packet's fate (linkemu.drivers.event_log) to this file")
    parser.add_argument("--grpc-port", type=int, default=9559,
                        help="P4Runtime port on 127.0.0.1 (default %(default)s)")
    args = parser.parse_args(argv)
    leftovers.exit_on_termination()

    try:
        profile = load_profile(args.profile)
        segments = None
        if profile.states is not None and args.replay:
            segments = read_timeline(args.replay, profile.states)
        elif profile.states is not None and args.seed is not None:
            segments = walk(profile.states, seed=args.seed)
    except (ProfileError, TimelineError) as err:
        print(err, file=sys.stderr)
        return 1
    for warning in hold_warnings(profile):
        print(f"{profile.name}: {warning}", file=sys.stderr)
    if args.script and not os.path.isfile(args.script):
        print(f"{args.script}: no such script", file=sys.stderr)
        return 1
    missing = missing_tools(*SWITCH_TOOLS, "ethtool")
    if missing:
        print(f"missing {', '.join(missing)}; BMv2 comes from {GET_TOOLS}", file=sys.stderr)
        return 1
    if not (BUILD / "linkemu.json").exists():
        print("build/linkemu.json is missing: run 'make build'", file=sys.stderr)
        return 1
    if os.geteuid() != 0:
        print("Mininet needs root", file=sys.stderr)
        return 1

    setLogLevel("info")
    try:
        record = None
        if profile.states is not None:
            record = args.record or default_record_path(profile.name)
            print(f"link-state timeline: {record}")
        rates = None
        if any(d.rate_schedule for d in profile.directions().values()):
            rates = default_record_path(profile.name, "rates")
            print(f"rate changes: {rates}")
        with emulated_link(profile, args.fixed, args.mobile, args.grpc_port,
                           segments, record, rates, args.event_log) as net:
            CLI(net, script=args.script)
    except KeyboardInterrupt:
        return 130
    except (RuntimeError, ValueError, OSError) as err:
        print(f"linkemu: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
