"""A run's figures beside other networks: one network at a time against N
side by side (`experiment run --jobs N`).

Runs a batch of the S-WWW page s+2s over the error-free optimal GPRS link,
with every packet's fate logged, once with --jobs 1 and once with --jobs N
(N: the machine's cores, at least 2), each as a user runs it, and gives per
setting each run's page time and release error (its event log: p99 and
max). Prints one JSON object.

    sudo .venv/bin/python bench/side_by_side.py --replications 4
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
PAGE = "flow0.http.response_s"
BATCH = {"name": "side-by-side", "profile_dir": str(ROOT / "profiles"),
         "profiles": ["gprs-optimal"],
         "tcp": {"iw2": {"initcwnd": 2, "timestamps": True, "sack": True,
                         "congestion_control": "reno"}},
         "workloads": {"page": [{"app": "http", "page": "s+2s"}]},
         "run_timeout": "120s", "event_log": {"threshold": "10ms"}}


def networks():
    """N: a switch a core, at least 2."""
    return max(2, len(os.sched_getaffinity(0)))


def run_batch(replications, jobs, workdir):
    """{run id: {page_s, release_error_p99_ms, release_error_max_ms}} of the
    batch run with `jobs` networks at once."""
    file = Path(workdir) / f"batch-{jobs}.yaml"
    file.write_text(yaml.safe_dump({**BATCH, "replications": replications}))
    out = Path(workdir) / f"results-{jobs}"
    done = subprocess.run([sys.executable, "-m", "linkemu.cli", "experiment", "run", str(file),
                           "--out", str(out), "--jobs", str(jobs)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"experiment run --jobs {jobs} failed: {done.stderr[-2000:]}")
    runs = {}
    for folder in sorted((out / "runs").iterdir()):
        scalars = json.loads((folder / "metrics.json").read_text())["scalars"]
        runs[folder.name] = {"page_s": scalars[PAGE],
                             "release_error_p99_ms": scalars.get("release_error_p99_ms"),
                             "release_error_max_ms": scalars.get("release_error_max_ms")}
    return runs


def measure(replications):
    """Both settings' runs, one network at a time first."""
    count = networks()
    with tempfile.TemporaryDirectory() as workdir:
        return {"networks": count, "cores": len(os.sched_getaffinity(0)),
                "replications": replications,
                "alone": run_batch(replications, 1, workdir),
                "side_by_side": run_batch(replications, count, workdir)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=4)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.replications), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
