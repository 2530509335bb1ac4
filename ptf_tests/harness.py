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

from linkemu import dataplane
from linkemu.bmv2 import GET_TOOLS, SimpleSwitchGrpc, free_tcp_port, missing_tools
from linkemu.p4runtime import Switch
from linkemu.veth import VethPair

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUILD = ROOT / "build"
PTF = Path(sys.executable).with_name("ptf")
sys.path.insert(0, str(HERE))
from linkemu_base import IDEAL, HOST_MACS, layout, profile  # noqa: E402


def preconditions():
    """Why the tests cannot run here, or None."""
    missing = missing_tools("simple_switch_grpc", "ethtool", "ip")
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
    reason = preconditions()
    if reason:
        print(f"PTF tests cannot run: {reason}", file=sys.stderr)
        return 2

    tag = f"lp{os.getpid() % 100000}"
    pairs = {port: VethPair(f"{tag}-{port}s", f"{tag}-{port}p") for port in HOST_MACS}
    grpc_port = free_tcp_port()
    switch = SimpleSwitchGrpc({p: v.switch_end for p, v in pairs.items()}, grpc_port=grpc_port)
    try:
        for pair in pairs.values():
            pair.create()
        switch.start()
        with Switch(switch.grpc_address) as controller:
            dataplane.install(controller, BUILD / "linkemu.p4info.txtpb",
                              BUILD / "linkemu.json", layout(), profile(**IDEAL))
        command = [str(PTF), "--test-dir", str(HERE),
                   "--test-params", f"grpc='{switch.grpc_address}'",
                   "--disable-ipv6", "--log-file", str(BUILD / "ptf.log")]
        for port, pair in pairs.items():
            command += ["--interface", f"{port}@{pair.peer}"]
        if args.xunit_dir:
            command += ["--xunit", "--xunit-dir", args.xunit_dir]
        return subprocess.run(command + args.tests).returncode
    finally:
        switch.stop()
        for pair in pairs.values():
            pair.delete()


if __name__ == "__main__":
    sys.exit(main())
