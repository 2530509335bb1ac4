"""The Slurm scripts of a batch: an exclusive array whose task K runs shard K
of N with this linkemu, a merge of exactly those shards' folders, and its
submission after the array (with a stand-in sbatch)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from linkemu import cli
from linkemu.cli import main
from linkemu.experiments import slurm
from linkemu.experiments.shards import Shard

PROFILES = Path(__file__).resolve().parents[2] / "profiles"


@pytest.fixture
def file(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump({
        "name": "b", "profile_dir": str(PROFILES), "profiles": ["smix1-e0"], "tcp": {"a": {}},
        "workloads": {"w": [{"app": "bulk", "bytes": 100}]}, "replications": 6,
        "short": {"replications": 3}}))
    return path


def written(tmp_path, file, *options):
    out = tmp_path / "out"
    assert main(["experiment", "slurm", str(file), "--shards", "3", "--out", str(out),
                 *options]) == 0
    return out, (out / "slurm" / slurm.ARRAY_SCRIPT).read_text(), \
        (out / "slurm" / slurm.MERGE_SCRIPT).read_text()


def executed(script, task=None):
    """The command line the script's last line runs, as bash expands it for
    array task `task`."""
    last = script.rstrip().splitlines()[-1]
    assert last.startswith("exec ")
    environment = {**os.environ, "SLURM_ARRAY_TASK_ID": str(task)} if task else None
    shown = subprocess.run(["bash", "-c", "printf '%s\\n' " + last[len("exec "):]],
                           env=environment, capture_output=True, text=True, check=True)
    return shown.stdout.splitlines()


def directives(script):
    return [line for line in script.splitlines() if line.startswith("#SBATCH")]


def test_each_task_runs_its_shard_with_this_linkemu(tmp_path, file):
    out, array, merge = written(tmp_path, file, "--short", "--", "-p", "lab", "--time=1:00:00")
    assert directives(array) == [
        "#SBATCH --job-name=linkemu-b", "#SBATCH --array=1-3", "#SBATCH --exclusive",
        f"#SBATCH --output={out}/slurm/shard-%a-of-3.out", "#SBATCH -p lab",
        "#SBATCH --time=1:00:00"]
    for name in (slurm.ARRAY_SCRIPT, slurm.MERGE_SCRIPT):
        subprocess.run(["bash", "-n", str(out / "slurm" / name)], check=True)
        assert os.access(out / "slurm" / name, os.X_OK)
    tasks = []
    for task in (1, 2, 3):
        command = executed(array, task)
        assert command[:3] == [sys.executable, "-m", "linkemu.cli"]
        args = cli.build_parser().parse_args(command[3:])
        assert args.run is cli._experiment_run
        assert (args.file, args.short, args.shard) == (str(file), True, Shard(task, 3))
        tasks.append(args.out)
    assert tasks == [f"{out}/shards/{k}-of-3" for k in (1, 2, 3)]

    assert directives(merge) == [
        "#SBATCH --job-name=linkemu-b-merge", f"#SBATCH --output={out}/slurm/merge.out",
        "#SBATCH -p lab", "#SBATCH --time=1:00:00"]
    command = executed(merge)
    assert command[:3] == [sys.executable, "-m", "linkemu.cli"]
    args = cli.build_parser().parse_args(command[3:])
    assert args.run is cli._experiment_merge
    assert (args.file, args.short, args.folders, args.out) == (str(file), True, tasks, str(out))


def test_the_scripts_need_a_plain_folder_and_at_most_a_shard_a_run(capsys, tmp_path, file):
    assert main(["experiment", "slurm", str(file), "--shards", "7",
                 "--out", str(tmp_path / "out")]) == 1
    assert "--shards 7: from 1 to the batch's 6 runs" in capsys.readouterr().err
    assert main(["experiment", "slurm", str(file), "--shards", "2",
                 "--out", str(tmp_path / "my results")]) == 1
    assert "the jobs' scripts take a results folder named with letters" in \
        capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["experiment", "slurm", str(file), "--shards", "0"])
    assert "0: at least 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["experiment", "check", str(file), "--", "-p", "lab"])
    assert "only 'experiment slurm' takes options after --" in capsys.readouterr().err


@pytest.fixture
def sbatch(tmp_path, monkeypatch):
    """A stand-in sbatch on PATH: records its arguments, prints a job id as
    --parsable does (with a cluster name, as a federation's does)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "sbatch.log"
    fake = folder / "sbatch"
    fake.write_text(f"""#!/bin/bash
echo "$*" >> {log}
[ -n "$FAIL" ] && {{ echo "sbatch: error: invalid partition" >&2; exit 1; }}
echo "$((100 + $(wc -l < {log})));lab"
""")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    return log


def test_submit_makes_the_merge_wait_for_the_whole_array(capsys, tmp_path, file, sbatch):
    out, _, _ = written(tmp_path, file, "--submit")
    scripts = out / "slurm"
    assert sbatch.read_text().splitlines() == [
        f"--parsable {scripts / slurm.ARRAY_SCRIPT}",
        f"--parsable --dependency=afterok:101 {scripts / slurm.MERGE_SCRIPT}"]
    assert f"submitted array job 101 and merge job 102 after it; results in {out}" in \
        capsys.readouterr().out


def test_the_printed_commands_submit_as_submit_does(capsys, tmp_path, file, sbatch):
    out, _, _ = written(tmp_path, file)
    commands = capsys.readouterr().out.splitlines()[-1].strip()
    subprocess.run(["bash", "-c", commands], check=True, capture_output=True)
    scripts = out / "slurm"
    assert sbatch.read_text().splitlines() == [
        f"--parsable {scripts / slurm.ARRAY_SCRIPT}",
        f"--dependency=afterok:101 {scripts / slurm.MERGE_SCRIPT}"]


def test_a_refused_submission_says_why(capsys, tmp_path, file, sbatch, monkeypatch):
    monkeypatch.setenv("FAIL", "1")
    assert main(["experiment", "slurm", str(file), "--shards", "2",
                 "--out", str(tmp_path / "out"), "--submit"]) == 1
    assert "failed (exit 1): sbatch: error: invalid partition" in capsys.readouterr().err
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert main(["experiment", "slurm", str(file), "--shards", "2",
                 "--out", str(tmp_path / "out"), "--submit"]) == 1
    assert "sbatch is not installed here" in capsys.readouterr().err


def test_with_an_image_each_task_runs_its_shard_in_a_container(tmp_path, file, monkeypatch):
    project, profiles = tmp_path / "project", tmp_path / "profiles"
    project.mkdir()
    profiles.mkdir()
    monkeypatch.chdir(project)
    out, array, merge = written(tmp_path, file, "--image", "lab/linkemu:1", "--engine", "podman",
                                "--bind", str(profiles), "--engine-option=--cpu-rt-runtime=1000")
    for task in (1, 3):
        command = executed(array, task)
        engine_args = command[:command.index("lab/linkemu:1")]
        assert engine_args == [
            "podman", "run", "--rm", "--privileged", "--network", "none",
            "--cpu-rt-runtime=1000", "-v", f"{project}:{project}:ro", "-v", f"{tmp_path}:{tmp_path}:ro",
            "-v", f"{profiles}:{profiles}:ro", "-v", f"{out}:{out}", "-w", str(project)]
        linkemu = command[len(engine_args) + 1:]
        assert linkemu[:3] == slurm.IMAGE_LINKEMU
        args = cli.build_parser().parse_args(linkemu[3:])
        assert args.run is cli._experiment_run
        assert (args.file, args.shard, args.out) == \
            (str(file), Shard(task, 3), f"{out}/shards/{task}-of-3")
    command = executed(merge)
    assert command[:2] == ["podman", "run"] and "lab/linkemu:1" in command
    args = cli.build_parser().parse_args(command[command.index("lab/linkemu:1") + 4:])
    assert args.run is cli._experiment_merge and args.out == str(out)


def test_an_image_takes_docker_by_default_and_binds_only_plain_folders(
        capsys, tmp_path, file, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, array, _ = written(tmp_path, file, "--image", "linkemu")
    assert executed(array, 1)[:2] == ["docker", "run"]
    odd = tmp_path / "a:b"
    odd.mkdir()
    for options, error in (
            (["--image", "linkemu", "--bind", str(odd)], "a folder the container binds is named"),
            (["--image", "linkemu", "--bind", str(tmp_path / "gone")],
             f"--bind {tmp_path / 'gone'}: no such folder"),
            (["--bind", str(tmp_path)], "--bind go with --image"),
            (["--engine-option=--cpus=1"], "--bind go with --image"),
            (["--engine", "podman"], "--bind go with --image")):
        assert main(["experiment", "slurm", str(file), "--shards", "2",
                     "--out", str(tmp_path / "out"), *options]) == 1
        assert error in capsys.readouterr().err, options
    with pytest.raises(SystemExit):
        main(["experiment", "slurm", str(file), "--shards", "2", "--image", "x",
              "--engine", "lxc"])
    assert "invalid choice: 'lxc'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["experiment", "slurm", str(file), "--shards", "2", "--image", "x",
              "--engine-option", "cpus"])
    assert "'cpus': expected an option" in capsys.readouterr().err
