"""Two networks on one machine at once (`experiment run --jobs 2`): each its
own switch process on a core of its own, names, ports and records, and the
results one network gives."""

import csv
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from conftest import environment, mininet
from linkemu.testbed import leftovers

ROOT = Path(__file__).resolve().parent.parent
pytestmark = environment(mininet("tcpdump"))

# An error-free link whose transfer time follows from its rate: a queue
# that never fills, a window that never limits the server.
CLEAN = {"name": "clean-2mbit", "mtu": 1500,
         "downlink": {"rate": "2Mbit", "delay": "20ms", "queue": 1000},
         "uplink": {"rate": "2Mbit", "delay": "20ms", "queue": 1000}}
EXPERIMENT = {
    "name": "side-by-side", "profile_dir": ".", "profiles": ["clean.yaml"],
    "tcp": {"open": {"initcwnd": 100, "initrwnd": 100, "congestion_control": "reno"}},
    "workloads": {"bulk": [{"app": "bulk", "bytes": 1_000_000}]},
    "replications": 2, "run_timeout": "120s"}
RUNS = ["clean-2mbit_open_bulk_r00", "clean-2mbit_open_bulk_r01"]


def run(file, out, jobs, seen=None):
    """`linkemu experiment run` as a user runs it; with `seen`, the
    networks' records it shows while it runs are added to that list."""
    batch = subprocess.Popen([sys.executable, "-m", "linkemu.cli", "experiment", "run",
                              str(file), "--out", str(out), "--jobs", str(jobs)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watching = threading.Thread(target=watch, args=(batch, seen if seen is not None else []))
    watching.start()
    out_text, err_text = batch.communicate(timeout=600)
    watching.join()
    assert batch.returncode == 0, err_text
    return err_text


def watch(batch, seen):
    """Every 0.1 s while `batch` runs: its slots' processes' records of what
    they made (leftovers), with each switch's cores and command line."""
    while batch.poll() is None:
        networks = []
        for path in leftovers.RECORDS_DIR.glob("made-*.json"):
            try:
                record = json.loads(path.read_text())
                stat = Path(f"/proc/{record['maker']['pid']}/stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) != batch.pid:
                    continue   # not one of its slots' processes
                switches = [p["pid"] for p in record["processes"]
                            if p["name"] == "simple_switch_grpc"]
                networks.append({
                    "maker": record["maker"]["pid"],
                    "interfaces": sorted(i["name"] for i in record["interfaces"]),
                    "switches": [(_cores(pid), _command(pid)) for pid in switches]})
            except (OSError, ValueError, KeyError):
                continue   # a record being written, a process just gone
        seen.append(networks)
        time.sleep(0.1)


def _cores(pid):
    status = Path(f"/proc/{pid}/status").read_text()
    return next(line.split()[1] for line in status.splitlines()
                if line.startswith("Cpus_allowed_list:"))


def _command(pid):
    return Path(f"/proc/{pid}/cmdline").read_text().split("\0")


@pytest.fixture(scope="module")
def batches(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jobs")
    (folder / "clean.yaml").write_text(yaml.safe_dump(CLEAN))
    file = folder / "side-by-side.yaml"
    file.write_text(yaml.safe_dump({**EXPERIMENT, "profile_dir": str(folder)}))
    seen = []
    err = run(file, folder / "two", 2, seen)
    run(file, folder / "one", 1)
    return file, folder, seen, err


def metrics(out):
    return {name: json.loads((out / "runs" / name / "metrics.json").read_text())
            for name in RUNS}


def test_both_networks_ran_at_once_with_names_ports_and_cores_of_their_own(batches):
    _, folder, seen, err = batches
    both = [networks for networks in seen if len(networks) == 2 and
            all(n["switches"] and "--thrift-port" in n["switches"][0][1] for n in networks)]
    assert both, f"never two networks up at once: {seen}"
    first, second = sorted(both[-1], key=lambda n: n["interfaces"])
    assert first["interfaces"] == ["n1s1-eth1", "n1s1-eth2"]
    assert second["interfaces"] == ["s1-eth1", "s1-eth2"]
    (cores_1, command_1), = first["switches"]
    (cores_0, command_0), = second["switches"]
    assert {cores_0, cores_1} == {"0", "1"}, "the switches share a core"
    assert "127.0.0.1:9559" in command_0 and "127.0.0.1:9560" in command_1
    assert command_0[command_0.index("--thrift-port") + 1] == "9090"
    assert command_1[command_1.index("--thrift-port") + 1] == "9091"
    assert "network slot 1: switch n1s1 on core 0, P4Runtime 127.0.0.1:9560, Thrift 9091" in err
    runs = metrics(folder / "two")
    (a, b) = runs.values()
    assert a["start_unix"] < b["end_unix"] and b["start_unix"] < a["end_unix"], \
        "the two runs did not run at once"


def test_results_are_those_of_one_network_at_a_time(batches):
    _, folder, _, _ = batches
    two, one = metrics(folder / "two"), metrics(folder / "one")
    for name in RUNS:
        assert two[name]["status"] == one[name]["status"] == "ok", two[name].get("error")
        side, alone = (runs[name]["scalars"]["flow0.bulk.elapsed_s"] for runs in (two, one))
        assert abs(side - alone) <= 0.02 * alone, \
            f"{name}: {side:.3f} s beside another network, {alone:.3f} s alone"
        assert sorted(p.name for p in (folder / "two" / "runs" / name).iterdir()) == \
            sorted(p.name for p in (folder / "one" / "runs" / name).iterdir())

    def rows(out):
        with open(out / "summary.csv") as table:
            return [row[:4] for row in csv.reader(table)]

    assert rows(folder / "two") == rows(folder / "one")
    assert "**complete**: 2 of 2 runs done" in (folder / "two" / "summary.md").read_text()


def test_a_batch_side_by_side_resumes_without_redoing_finished_runs(batches):
    file, folder, _, _ = batches
    before = metrics(folder / "two")
    assert "all 2 runs are done" in run(file, folder / "two", 2)
    assert metrics(folder / "two") == before
