"""A batch as Slurm jobs: an array whose task K runs shard K of N, and a job
that merges the shards once every task has succeeded.

A machine runs one linkemu network at a time (the network lock), so each
task takes its node whole (--exclusive): no two tasks share a node. The jobs
run this linkemu, or with an image the project's image (Dockerfile) in a
container engine, for nodes that have no P4 tools of their own.
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
# A folder bound into a container: -v takes SRC:DST:MODE, so no ":" or ",".
BINDABLE = re.compile(r"[\w./+@=-]+")
DEFAULT_ENGINE = "docker"
# linkemu in the image: the Dockerfile's WORKDIR, and make setup's venv there.
IMAGE_LINKEMU = ["/linkemu/.venv/bin/python", "-m", "linkemu.cli"]


def linkemu_command():
    """linkemu as the jobs run it: with this Python, the project's venv's."""
    return [sys.executable, "-m", "linkemu.cli"]


def container_command(engine, image, read_only, options, writable):
    """linkemu in `image` through `engine` (docker, podman) run with
    `options` of its own, the folders bound at their own paths: `read_only`
    (the first is the working folder), and `writable` (the results).
    Privileged, as Mininet, BMv2's raised capture thread and BPF congestion
    controls need; in a network namespace of its own (none but loopback),
    where the run makes its network, so a node's interfaces are never
    touched; removed when the run ends, with whatever the run left in it."""
    writable, read_only = str(writable), [str(f) for f in read_only]
    for folder in (writable, *read_only):
        if not BINDABLE.fullmatch(folder):
            raise ValueError(f"{shown(folder)}: a folder the container binds is named with "
                             "letters, digits and . / _ + - @ = only")
    binds = [arg for f in dict.fromkeys(read_only) if f != writable
             for arg in ("-v", f"{f}:{f}:ro")]
    return [engine, "run", "--rm", "--privileged", "--network", "none", *options, *binds,
            "-v", f"{writable}:{writable}", "-w", read_only[0], image, *IMAGE_LINKEMU]


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


def scripts(experiment, file, out_dir, count, short=False, options=(), container=None):
    """{name: text} of the array's and the merge's batch scripts for a
    batch of `count` shards; `file` and `out_dir` absolute. `container`:
    (engine, image, folders to bind read-only, the engine's options) to run
    linkemu in the image."""
    if not SAFE_PATH.fullmatch(str(out_dir)):
        raise ValueError(f"{shown(str(out_dir))}: the jobs' scripts take a results folder "
                         "named with letters, digits and . / _ + - @ : , = only")
    runs = len(experiment.runs())
    if not 1 <= count <= runs:
        raise ValueError(f"--shards {count}: from 1 to the batch's {runs} runs")
    command = (container_command(*container, out_dir) if container is not None
               else linkemu_command())
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
