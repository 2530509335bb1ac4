"""Runs linkemu's PTF tests against a simple_switch_grpc of their own.

Creates one veth pair per switch port, starts the switch, installs the
program with the layout of linkemu_base (port 1 fixed side, 2 and 3 mobile
side), runs PTF, and removes exactly what it created, whatever happens.

    python ptf_tests/harness.py [--xunit-dir DIR] [TEST ...]
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

from linkemu.testbed import leftovers
from linkemu.testbed.bmv2 import GET_TOOLS, SWITCH_TOOLS, missing_tools
from linkemu.testbed.veth_switch import veth_testbed

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUILD = ROOT / "build"
PTF = Path(sys.executable).with_name("ptf")
sys.path.insert(0, str(HERE))
from linkemu_base import IDEAL, layout, profile  # noqa: E402


def preconditions():
    """Why the tests cannot run here, or None."""
    missing = missing_tools(*SWITCH_TOOLS, "ethtool", "ip")
    if not PTF.exists():
        missing.append(f"ptf (in {PTF.parent}: run 'make setup')")
    if missing:
        return f"missing {', '.join(missing)} (BMv2 comes from {GET_TOOLS})"
    if os.geteuid() != 0:
        return "needs root to create veth pairs"
    if not (BUILD / "linkemu.json").exists():
        return "build/linkemu.json is missing: run 'make build' (needs p4c)"
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xunit-dir", help="write xunit results here")
    parser.add_argument("tests", nargs="*", help="test names (default: all)")
    args = parser.parse_args(argv)
    leftovers.exit_on_termination()
    reason = preconditions()
    if reason:
        print(f"PTF tests cannot run: {reason}", file=sys.stderr)
        return 2

    with veth_testbed(layout(), profile(**IDEAL), BUILD / "linkemu.p4info.txtpb",
                      BUILD / "linkemu.json") as (switch, peers):
        command = [str(PTF), "--test-dir", str(HERE), "--qlen", "100000",
                   "--test-params",
                   f"grpc='{switch.grpc_address}';thrift={switch.thrift_port};"
                   f"pid={switch.pid};hold_capacity={switch.hold_capacity};"
                   f"timed={int(switch.timed)}",
                   "--disable-ipv6", "--log-file", str(BUILD / "ptf.log")]
        for port, peer in peers.items():
            command += ["--interface", f"{port}@{peer}"]
        if args.xunit_dir:
            command += ["--xunit", "--xunit-dir", args.xunit_dir]
        return subprocess.run(
            command + args.tests,
            preexec_fn=lambda: os.sched_setaffinity(0, switch.other_cores())).returncode

if __name__ == "__main__":
    sys.exit(main())
