"""A batch as Slurm jobs: an array whose task K runs shard K of N, and a job
that merges the shards once every task has succeeded.

A machine runs one linkemu network at a time (the network lock), so each
task takes its node whole (--exclusive): no two tasks share a node.
"""

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from ..model.fields import shown
from .shards import folder

ARRAY_SCRIPT = "shards.sbatch"
MERGE_SCRIPT = "merge.sbatch"
TASK = "$SLURM_ARRAY_TASK_ID"
SAFE_PATH = re.compile(r"[\w./+@:,=-]+")


def linkemu_command():
    """linkemu as the jobs run it: with this Python, the project's venv's."""
    return [sys.executable, "-m", "linkemu.cli"]


def sbatch_directives(options):
    """#SBATCH lines for sbatch's command-line `options`, an option and
    the value after it (`-p lab`) on one line."""
    lines = []
    for option in options:
        if option.startswith("-") or not lines:
            lines.append(f"#SBATCH {option}")
        else:
            lines[-1] += f" {option}"
    return lines


def scripts(experiment, file, out_dir, count, short=False, options=()):
    """{name: text} of the array's and the merge's batch scripts for a
    batch of `count` shards; `file` and `out_dir` absolute."""
    if not SAFE_PATH.fullmatch(str(out_dir)):
        raise ValueError(f"{shown(str(out_dir))}: the jobs' scripts take a results folder "
                         "named with letters, digits and . / _ + - @ : , = only")
    runs = len(experiment.runs())
    if not 1 <= count <= runs:
        raise ValueError(f"--shards {count}: from 1 to the batch's {runs} runs")
    command = linkemu_command()
    form = ["--short"] if short else []
    logs = Path(out_dir) / "slurm"
    name = f"linkemu-{experiment.name}"
    directives = sbatch_directives(options)
    # The shell fills in the task's number; out_dir needs no quoting.
    run = (shlex.join(command + ["experiment", "run", str(file), *form])
           + f' --shard "{TASK}/{count}" --out "{folder(out_dir, TASK, count)}"')
    merge = shlex.join(command + ["experiment", "merge", str(file), *form,
                                  *(str(folder(out_dir, k, count)) for k in range(1, count + 1)),
                                  "--out", str(out_dir)])
    array = [
        "#!/bin/bash",
        f"# {experiment.name}: task K runs shard K of {count} ({runs} runs in all).",
        "# One linkemu network a machine at a time: a task takes its node whole.",
        f"#SBATCH --job-name={name}",
        f"#SBATCH --array=1-{count}",
        "#SBATCH --exclusive",
        f"#SBATCH --output={logs}/shard-%a-of-{count}.out",
        *directives,
        f"exec {run}", ""]
    merged = [
        "#!/bin/bash",
        f"# {experiment.name}: joins the {count} shards once every task of the array has",
        "# succeeded (submitted with --dependency=afterok:ARRAY_JOB).",
        f"#SBATCH --job-name={name}-merge",
        f"#SBATCH --output={logs}/merge.out",
        *directives,
        f"exec {merge}", ""]
    return {ARRAY_SCRIPT: "\n".join(array), MERGE_SCRIPT: "\n".join(merged)}


def write(out_dir, texts):
    """Writes the scripts into OUT/slurm (where the jobs' logs go too);
    returns their paths, the array's first."""
    logs = Path(out_dir) / "slurm"
    logs.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in texts.items():
        path = logs / name
        path.write_text(text)
        path.chmod(0o755)
        paths.append(path)
    return paths


def submit(array_script, merge_script):
    """Submits the array, then the merge to start after all its tasks
    succeeded; returns both job ids."""
    array_id = _sbatch([str(array_script)])
    return array_id, _sbatch([f"--dependency=afterok:{array_id}", str(merge_script)])


def submit_commands(array_script, merge_script):
    """The shell commands that submit the scripts as submit() does."""
    return (f"job=$(sbatch --parsable {shlex.quote(str(array_script))}) && "
            f"sbatch --dependency=afterok:${{job%%;*}} {shlex.quote(str(merge_script))}")


def _sbatch(args):
    if shutil.which("sbatch") is None:
        raise OSError("sbatch is not installed here: submit from a machine of the "
                      "Slurm cluster")
    done = subprocess.run(["sbatch", "--parsable", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(f"sbatch {' '.join(args)} failed (exit {done.returncode}): "
                      f"{done.stderr.strip()}")
    # --parsable prints "JOB" or "JOB;CLUSTER".
    return done.stdout.strip().split(";")[0]
