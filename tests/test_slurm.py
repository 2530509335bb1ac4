"""A batch through a real Slurm: a one-node cluster (munged, slurmctld and
slurmd, started and stopped here by PID) runs a short batch as a 4-task
job array and merges it, with this linkemu and in the project's image; the
merged results equal a one-machine run of the same batch."""

import functools
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from conftest import environment, mininet, optional
from linkemu import cli
from linkemu.testbed import leftovers

ROOT = Path(__file__).resolve().parent.parent
SLURM_TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scancel")


def slurm_installed():
    missing = [tool for tool in SLURM_TOOLS if shutil.which(tool) is None]
    if missing:
        return (f"missing {', '.join(missing)} (Debian's munge, slurmctld, slurmd and "
                "slurm-client; 'make setup' installs them)")
    return None


pytestmark = [environment(mininet("tcpdump")), environment(slurm_installed)]

# The error-free optimal GPRS link: a page's time follows from the link alone.
BATCH = {"name": "slurm-batch", "profile_dir": str(ROOT / "profiles"),
         "profiles": ["gprs-optimal"],
         "tcp": {"iw2": {"initcwnd": 2, "timestamps": True, "sack": True,
                         "congestion_control": "reno"}},
         "workloads": {"page": [{"app": "http", "page": "s+2s"}]},
         "replications": 4, "run_timeout": "120s"}
JOB_TIMEOUT_S = 900   # four runs one after another, and the merge
IMAGE = "linkemu"     # make image


@functools.cache
def image_engine():
    """The container engine here that holds the project's image, or None
    (asked once: the check and the test both need it)."""
    for engine in ("podman", "docker"):
        if shutil.which(engine) and subprocess.run(
                [engine, "image", "inspect", IMAGE], capture_output=True).returncode == 0:
            return engine
    return None


def image_built():
    if image_engine() is None:
        return f"no container engine here holds the image {IMAGE!r} ('make image' builds it)"
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slurm_conf(folder, node):
    return "\n".join([
        "ClusterName=linkemu-test",
        f"SlurmctldHost={node}(127.0.0.1)",
        f"SlurmctldPort={free_port()}",
        f"SlurmdPort={free_port()}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={folder}/munge.socket",
        f"StateSaveLocation={folder}/state",
        f"SlurmdSpoolDir={folder}/spool",
        f"SlurmctldPidFile={folder}/slurmctld.pid",
        f"SlurmdPidFile={folder}/slurmd.pid",
        f"SlurmctldLogFile={folder}/slurmctld.log",
        f"SlurmdLogFile={folder}/slurmd.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "SchedulerType=sched/builtin",
        "SelectType=select/linear",
        "ReturnToService=2",
        "JobCompType=jobcomp/none",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none",
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} State=UNKNOWN",
        "PartitionName=linkemu Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""])


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} after {timeout} s")
        time.sleep(0.5)


@pytest.fixture
def cluster():
    """SLURM_CONF of a one-node cluster on this machine, its daemons ours."""
    # munged wants its socket's folders searchable by all: not pytest's tmp.
    folder = Path(tempfile.mkdtemp(prefix="linkemu-slurm-"))
    folder.chmod(0o755)
    for sub in ("state", "spool"):
        (folder / sub).mkdir(mode=0o700)
    key = folder / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = folder / "slurm.conf"
    conf.write_text(slurm_conf(folder, socket.gethostname().split(".")[0]))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    daemons = []
    try:
        for command in (
                ["munged", "--foreground", f"--key-file={key}", f"--socket={folder}/munge.socket",
                 f"--pid-file={folder}/munged.pid", f"--log-file={folder}/munged.log",
                 f"--seed-file={folder}/munged.seed"],
                ["slurmctld", "-D", "-f", str(conf)],
                ["slurmd", "-D", "-f", str(conf)]):
            with open(folder / f"{command[0]}.out", "w") as log:
                daemons.append(subprocess.Popen(command, env=env, stdout=log,
                                                stderr=subprocess.STDOUT))
            if command[0] == "munged":
                wait_for((folder / "munge.socket").exists, 10, "munged made no socket")

        def idle():
            done = subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True,
                                  text=True)
            return done.stdout.strip() == "idle"
        wait_for(idle, 30, "the node is not idle")
        yield env
    finally:
        if daemons:
            subprocess.run(["scancel", "--full", "--user=root"], env=env, capture_output=True)
            for daemon in reversed(daemons):
                leftovers.stop_child(daemon, timeout_s=15)
        shutil.rmtree(folder, ignore_errors=True)


def page_times(out):
    return {path.name: json.loads((path / "metrics.json").read_text())
            ["scalars"]["flow0.http.response_s"]
            for path in (out / "runs").iterdir()}


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """The batch's file, and its page times run on this machine alone."""
    folder = tmp_path_factory.mktemp("batch")
    file = folder / "batch.yaml"
    file.write_text(yaml.safe_dump(BATCH))
    assert cli.main(["experiment", "run", str(file), "--out", str(folder / "alone")]) == 0
    return file, page_times(folder / "alone")


def test_a_job_array_gives_what_one_machine_gives(cluster, batch, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", cluster["SLURM_CONF"])
    check_array(batch, tmp_path / "merged", cluster)


@optional(image_built)
def test_a_job_array_in_the_image_gives_what_one_machine_gives(cluster, batch, tmp_path,
                                                               monkeypatch):
    monkeypatch.setenv("SLURM_CONF", cluster["SLURM_CONF"])
    monkeypatch.chdir(ROOT)   # the profiles' folder is bound from here
    check_array(batch, tmp_path / "merged", cluster,
                "--image", IMAGE, "--engine", image_engine())


def check_array(batch, merged, cluster, *options):
    """Runs the batch as a 4-task array and its merge, and compares."""
    file, expected = batch
    assert cli.main(["experiment", "slurm", str(file), "--shards", "4", "--out", str(merged),
                     "--submit", *options]) == 0

    def finished():
        queued = subprocess.run(["squeue", "-h"], env=cluster, capture_output=True, text=True)
        return queued.returncode == 0 and not queued.stdout.strip()
    wait_for(finished, JOB_TIMEOUT_S, "the jobs did not finish")
    logs = "\n".join(f"{p.name}:\n{p.read_text()}" for p in (merged / "slurm").glob("*.out"))
    summary = merged / "summary.md"
    assert summary.exists(), f"no merged summary; the jobs' logs:\n{logs}"
    assert "**complete**: 4 of 4 runs done" in summary.read_text(), logs
    # Each task ran its own shard, on the node, through the project's command.
    shards = sorted(p.name for p in (merged / "shards").iterdir())
    assert shards == [f"{k}-of-4" for k in range(1, 5)], logs
    for shard in shards:
        assert len(list((merged / "shards" / shard / "runs").iterdir())) == 1

    got = page_times(merged)
    assert set(got) == set(expected) and len(got) == 4
    for run, seconds in expected.items():
        assert abs(got[run] - seconds) <= 0.02 * seconds, (run, got[run], seconds)
