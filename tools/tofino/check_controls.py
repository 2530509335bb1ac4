"""Which architecture-neutral controls bf-p4c compiles for Tofino as they are.

Compiles each control of p4src/include/control alone in a TNA shell
(neutral_shell.p4), for Tofino 1 and Tofino 2, and prints a Markdown table:
per control and chip, the stages it takes, or the compiler's first error.

    python3 tools/tofino/check_controls.py [--bf-p4c /opt/bf-p4c/bin/bf-p4c]
"""

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONTROLS = HERE.parent.parent / "p4src" / "include" / "control"
DEFAULT_BF_P4C = "/opt/bf-p4c/bin/bf-p4c"
CHIPS = {"tofino": "tna", "tofino2": "t2na"}
TIMEOUT_S = 900

# (control, its file, how the shell applies it to its metadata)
CHECKS = [
    ("PortMap", "port_map.p4", "c.apply(ig_intr_md.ingress_port, hdr.ethernet, meta.link);"),
    ("LinkParams", "link_params.p4", "c.apply(meta.link);"),
    ("QueueParams", "router_queue.p4", "c.apply(meta.link);"),
    ("SetTimes", "link_clock.p4", "c.apply(meta.q1, meta.q2, meta.link);"),
    ("LinkClock", "link_clock.p4",
     "c.apply(meta.u1, meta.b1, meta.f1, meta.b2, meta.b3, meta.link, meta.q1, meta.q2, "
     "meta.b4, meta.b1, meta.u2, meta.q3, meta.q4, meta.q5, meta.q6);"),
    ("BestEffortStart", "best_effort.p4",
     "c.apply(meta.u1, meta.params, meta.q1, meta.q2, meta.u2, meta.b1, meta.q3, meta.b2, "
     "meta.b3, meta.u3, meta.f1, meta.q4, meta.u1, meta.q5);"),
    ("Cobalt", "cobalt.p4",
     "c.apply(meta.u1, meta.u2, meta.f1, meta.f2, meta.f3, meta.f4, meta.b1, meta.link, "
     "meta.cs, meta.cw, meta.v2);"),
    ("Red", "red.p4",
     "c.apply(meta.b1, meta.b2, meta.u1, meta.r1, meta.link, meta.rs, meta.rw, meta.v2, "
     "meta.f1);"),
    ("SojournRamp", "sojourn_ramp.p4", "c.apply(meta.u1, meta.r1, meta.link, meta.f1);"),
    ("LossModel", "loss_model.p4",
     "c.apply(meta.r1, meta.r2, meta.bit1, meta.link, meta.bit2, meta.f1);"),
    ("LinkErrors", "link_errors.p4", "c.apply(meta.r1, meta.link);"),
    ("DelayVariation", "delay_variation.p4", "c.apply(meta.r10, meta.r1, meta.link);"),
    ("PacketFaults", "packet_faults.p4",
     "c.apply(meta.r1, meta.r2, meta.r3, meta.r5, hdr.l4, meta.link, meta.f1);"),
    ("Release", "release.p4", "c.apply(meta.u1, meta.seq, meta.link);"),
    ("TrafficClass", "traffic_class.p4",
     "c.apply(hdr.ipv4, hdr.ipv6, hdr.l4, meta.link, meta.ck);"),
    ("EcnCapable", "ecn_mark.p4", "c.apply(hdr.ipv4, hdr.ipv6, meta.f1, meta.f2);"),
    ("EcnMark", "ecn_mark.p4", "c.apply(hdr.ipv4, hdr.ipv6);"),
    ("EventLog", "event_log.p4", "c.apply(meta.u1, meta.r1, meta.link);"),
]


ERROR = re.compile(r"\): (\[--Werror=[^\]]*\] )?error:|^error:|Compiler Bug")


def first_error(log):
    """The compiler's first error and the line after it, on one line,
    without the file's path."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if ERROR.search(line):
            text = " ".join(part.strip() for part in lines[i:i + 2] if part.strip())
            return re.sub(r"\S*/p4src/include/control/", "", text)[:200]
    return "failed without an error message"


def stages(context):
    """The MAU stages the ingress tables take."""
    used = [stage["stage_number"] for table in context["tables"]
            if table["direction"] == "ingress"
            for stage in table.get("match_attributes", {}).get("stage_tables", [])
            if stage.get("stage_number", -1) >= 0]
    return max(used) + 1 if used else 0


def check(bf_p4c, control, file, apply, chip, workdir):
    """(compiled, stages or the first error) of one control on one chip."""
    shell = (HERE / "neutral_shell.p4").read_text()
    program = (shell.replace("#include CONTROL_FILE", f'#include "{CONTROLS / file}"')
               .replace("PROBE_DECL", f"{control}() c;").replace("PROBE_APPLY", apply)
               .replace('"../../p4src/include/headers.p4"',
                        f'"{CONTROLS.parent / "headers.p4"}"'))
    source = Path(workdir) / f"{control}-{chip}.p4"
    source.write_text(program)
    out = Path(workdir) / f"{control}-{chip}"
    done = subprocess.run([bf_p4c, "--target", chip, "--arch", CHIPS[chip], "-o", str(out),
                           str(source)], capture_output=True, text=True, timeout=TIMEOUT_S)
    if done.returncode != 0:
        return False, first_error(done.stdout + done.stderr)
    context = json.loads((out / "pipe" / "context.json").read_text())
    used = stages(context)
    return True, f"{used} stage{'' if used == 1 else 's'}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bf-p4c", default=shutil.which("bf-p4c") or DEFAULT_BF_P4C)
    args = parser.parse_args(argv)
    if not Path(args.bf_p4c).exists():
        print(f"{args.bf_p4c}: not found; 'make bf-p4c' builds it", file=sys.stderr)
        return 2
    print("| control | " + " | ".join(CHIPS) + " |")
    print("|---|" + "---|" * len(CHIPS))
    with tempfile.TemporaryDirectory() as workdir:
        for control, file, apply in CHECKS:
            cells = []
            for chip in CHIPS:
                compiled, what = check(args.bf_p4c, control, file, apply, chip, workdir)
                cells.append(what if compiled else f"no: {what}")
            print(f"| {control} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
