"""An experiment's results folder.

    OUT/experiment.yaml        the file the batch was made from
    OUT/runs/RUN/metrics.json  one run: status, metrics, scalars
    OUT/runs/RUN/...           its queue and link-state samples, client logs,
                               plots (first replication), captures if kept
    OUT/summary.csv, summary.md  every scalar over the replications of a cell
    OUT/expect.csv             the experiment's expectations against the study

A run is built in runs/.RUN.partial and renamed once complete; summaries are
written to a temporary file and renamed. Nothing half-written looks finished,
and a summary says how many runs it covers. merge() joins the folders of a
batch's shards into one.
"""

import csv
import filecmp
import io
import json
import os
import shutil
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from .flows import summary

STATISTICS = ("n", "min", "q1", "median", "q3", "max", "mean")
EXPECT_COLUMNS = ("profile", "tcp", "workload", "metric", "statistic", "study", "linkemu", "n",
                  "difference_percent", "within_percent", "result", "source")


class ResultsError(ValueError):
    pass


def write_atomic(path, text):
    path = Path(path)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def prepare(out_dir, source_text):
    """Creates OUT, or checks that it was made from the same experiment file
    (so a resumed batch never mixes two experiments)."""
    out_dir = Path(out_dir)
    copy = out_dir / "experiment.yaml"
    if copy.exists() and copy.read_text() != source_text:
        raise ResultsError(f"{out_dir} holds results of a different experiment file; "
                           "use another --out, or remove it to start over")
    (out_dir / "runs").mkdir(parents=True, exist_ok=True)
    if not copy.exists():
        write_atomic(copy, source_text)


def run_dir(out_dir, run):
    return Path(out_dir) / "runs" / run.run_id


def partial_dir(out_dir, run):
    return Path(out_dir) / "runs" / f".{run.run_id}.partial"


def read_run(out_dir, run):
    path = run_dir(out_dir, run) / "metrics.json"
    return json.loads(path.read_text()) if path.exists() else None


def is_complete(out_dir, run):
    metrics = read_run(out_dir, run)
    return metrics is not None and metrics["status"] == "ok"


def commit_run(out_dir, run, work, metrics):
    """Moves a finished run's folder in place (a failed run too, so that its
    error is kept; a resumed batch runs it again)."""
    (Path(work) / "metrics.json").write_text(json.dumps(metrics, indent=1))
    _place(out_dir, run, work)


def copy_run(out_dir, run, source):
    """Copies a run's folder from another results folder (a shard's)."""
    work = partial_dir(out_dir, run)
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(source, work)
    _place(out_dir, run, work)


def _place(out_dir, run, work):
    final = run_dir(out_dir, run)
    if final.exists():
        shutil.rmtree(final)
    os.replace(work, final)


def count(out_dir, runs):
    """(complete, failed) among `runs`."""
    states = [read_run(out_dir, r) for r in runs]
    return (sum(1 for m in states if m and m["status"] == "ok"),
            sum(1 for m in states if m and m["status"] != "ok"))


def cell_statistics(experiment, out_dir):
    """{cell: (runs ok, [why each failed run failed], {scalar: summary})} in
    matrix order."""
    cells = {}
    grouped = defaultdict(list)
    for run in experiment.runs():
        grouped[run.cell].append(read_run(out_dir, run))
    for cell, runs in grouped.items():
        ok = [m for m in runs if m and m["status"] == "ok"]
        values = defaultdict(list)
        for metrics in ok:
            for name, value in metrics["scalars"].items():
                values[name].append(value)
        failed = [m.get("error", "no reason recorded") for m in runs
                  if m and m["status"] != "ok"]
        cells[cell] = (len(ok), failed, {n: summary(v) for n, v in values.items()})
    return cells


@dataclass(frozen=True)
class Verdict:
    """An expectation against its statistic over a cell's completed runs."""

    expectation: object     # experiment.Expectation
    n: int                  # runs with the metric
    value: float | None     # None: no run has the metric

    @property
    def difference(self):
        """(linkemu - study) / |study|."""
        e = self.expectation
        return None if self.value is None else (self.value - e.study) / abs(e.study)

    @property
    def result(self):
        if self.value is None:
            return "no data"
        # The margin keeps a value exactly at the tolerance (26 drops against
        # 20 within 30 %) from missing by a rounding error.
        return "met" if abs(self.difference) <= self.expectation.within + 1e-9 else "missed"

    def describe(self):
        if self.value is None:
            return f"{self.expectation.describe()}: no data"
        return (f"{self.expectation.describe()}: linkemu {_format(self.value)} (n {self.n}), "
                f"{100 * self.difference:+.1f} %: {self.result}")


def against_study(experiment, cells):
    """A Verdict per expectation; `cells` from cell_statistics."""
    verdicts = []
    for e in experiment.expectations:
        stats = cells[e.cell][2].get(e.metric, {"n": 0})
        verdicts.append(Verdict(e, stats["n"], stats.get(e.statistic)))
    return verdicts


def _format(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def write_summary(experiment, out_dir):
    out_dir = Path(out_dir)
    runs = experiment.runs()
    complete, failed = count(out_dir, runs)
    cells = cell_statistics(experiment, out_dir)

    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(("profile", "tcp", "workload", "metric") + STATISTICS)
    for cell, (_, _, statistics) in cells.items():
        for name, stats in statistics.items():
            writer.writerow(cell + (name,) + tuple(_format(stats.get(s)) for s in STATISTICS))
    write_atomic(out_dir / "summary.csv", table.getvalue())

    shard = f", shard {experiment.shard}" if experiment.shard else ""
    lines = [f"# {experiment.name}{shard}", ""]
    if experiment.description:
        lines += [experiment.description, ""]
    state = "complete" if complete == len(runs) else "INCOMPLETE"
    lines += [f"**{state}**: {complete} of {len(runs)} runs done"
              f"{f', {failed} failed (see runs/*/metrics.json)' if failed else ''}.",
              "", "Response time of a page: at the client, from its first SYN to the ACK "
              "of its last FIN (S-WWW); `response_server_fin_s`: to the last server FIN "
              "(S-MIX2). Statistics over the replications of each cell: quartiles by "
              "linear interpolation.", ""]
    lines += _against_study(out_dir, against_study(experiment, cells))
    for (profile, tcp, workload), (ok, failed_runs, statistics) in cells.items():
        lines += [f"## {profile} · {tcp} · {workload}", "",
                  f"{ok} runs{f', {len(failed_runs)} failed' if failed_runs else ''}", ""]
        # A failed run reports no figure, only why.
        lines += [f"- failed: {error}" for error in dict.fromkeys(failed_runs)]
        lines += [""] if failed_runs else []
        if not statistics:
            continue
        lines += ["| metric | " + " | ".join(STATISTICS) + " |",
                  "|---|" + "---:|" * len(STATISTICS)]
        for name, stats in statistics.items():
            lines.append(f"| {name} | " + " | ".join(_format(stats.get(s)) for s in STATISTICS)
                         + " |")
        lines.append("")
    write_atomic(out_dir / "summary.md", "\n".join(lines))


def _against_study(out_dir, verdicts):
    """Writes expect.csv; returns the lines of summary.md's section."""
    if not verdicts:
        return []
    rows = []
    for v in verdicts:
        e = v.expectation
        difference = None if v.value is None else 100 * v.difference
        rows.append(e.cell + (e.metric, e.statistic, e.study, v.value, v.n, difference,
                              100 * e.within, v.result, e.source))
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(EXPECT_COLUMNS)
    writer.writerows(tuple(_format(x) for x in row) for row in rows)
    write_atomic(out_dir / "expect.csv", table.getvalue())
    lines = ["## Against the study", "",
             "Each expectation's statistic over the cell's completed runs against the "
             "study's figure; difference = (linkemu − study) / study.", "",
             "| cell | metric | statistic | study | linkemu | n | difference % | within % "
             "| result | source |", "|---|---|---|---:|---:|---:|---:|---:|---|---|"]
    for row in rows:
        cell = " · ".join(row[:3])
        lines.append(f"| {cell} | " + " | ".join(_format(x) for x in row[3:]) + " |")
    return lines + [""]


@dataclass(frozen=True)
class Merged:
    """What a merge found besides the runs it took."""

    duplicates: dict   # run id -> the folders holding identical copies (the first taken)
    strays: dict       # folder -> run ids that are not runs of the batch (left out)
    missing: list      # run ids of the batch in no folder and not in the output


def merge(experiment, source_text, folders, out_dir):
    """Copies the runs of `experiment` found in the results `folders` (made
    from `source_text`) into `out_dir` and writes its summary; nothing is
    written when a folder is of another experiment file or a run differs
    between two folders."""
    folders = [Path(f) for f in folders]
    out_dir = Path(out_dir)
    problems = []
    for path in folders:
        copy = path / "experiment.yaml"
        if not copy.is_file():
            problems.append(f"{path}: not a results folder (no experiment.yaml)")
        elif copy.read_text() != source_text:
            problems.append(f"{path} holds results of a different experiment file")
        if path.resolve() == out_dir.resolve():
            problems.append(f"{path} is the output folder: merge into another one")
    if len({path.resolve() for path in folders}) < len(folders):
        problems.append("a folder is given twice")
    if problems:
        raise ResultsError("\n".join(problems))

    batch = {run.run_id: run for run in experiment.runs()}
    found, strays = defaultdict(list), defaultdict(list)
    for path in folders:
        # Hidden entries are runs cut short (.RUN.partial): a resumed shard redoes them.
        for run in sorted(p for p in (path / "runs").glob("[!.]*") if p.is_dir()):
            if run.name in batch:
                found[run.name].append(run)
            else:
                strays[path].append(run.name)
    duplicates = {}
    for run_id, copies in found.items():
        differ = [c.parent.parent for c in copies[1:] if not _same_files(copies[0], c)]
        if differ:
            problems.append(f"run {run_id} differs between {copies[0].parent.parent} and "
                            f"{', '.join(map(str, differ))}: remove the copy that is wrong")
        elif len(copies) > 1:
            duplicates[run_id] = [c.parent.parent for c in copies]
    if problems:
        raise ResultsError("\n".join(problems))

    prepare(out_dir, source_text)
    for run_id, copies in found.items():
        copy_run(out_dir, batch[run_id], copies[0])
    write_summary(experiment, out_dir)
    missing = [run_id for run_id, run in batch.items()
               if read_run(out_dir, run) is None]
    return Merged(duplicates, dict(strays), missing)


def _same_files(a, b):
    """Whether folders `a` and `b` hold the same files with the same bytes."""
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    if files != sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file()):
        return False
    return all(filecmp.cmp(a / f, b / f, shallow=False) for f in files)
