"""A batch's shards: each run in exactly one, the same on every machine; and
their folders merged into the results one machine would have written."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from linkemu.cli import main
from linkemu.experiments import results
from linkemu.experiments.experiment import load_experiment, parse_experiment
from linkemu.experiments.shards import Shard, share

PROFILES = Path(__file__).resolve().parents[2] / "profiles"
TEXT = "the experiment file"


def batch(matrix=None, **more):
    return {"name": "b", "profile_dir": str(PROFILES), "profiles": ["smix1-e0", "smix1-r1"],
            "tcp": {"a": {}, "b": {}}, "workloads": {"w": [{"app": "bulk", "bytes": 100}],
                                                     "v": [{"app": "bulk", "bytes": 200}]},
            "replications": 5, "matrix": matrix or [{}], **more}


def experiment(**options):
    return parse_experiment(batch(**options), "b.yaml")


def ids(runs):
    return [run.run_id for run in runs]


@pytest.mark.parametrize("count", [1, 2, 3, 7, 40, 41])
def test_every_run_is_in_exactly_one_shard(count):
    every = experiment().runs()
    shares = [ids(share(experiment(), Shard(k, count)).runs()) for k in range(1, count + 1)]
    assert sorted(sum(shares, [])) == sorted(ids(every))
    assert max(map(len, shares)) - min(map(len, shares)) <= 1
    for ones in shares:   # each share in the batch's order: a network per profile
        assert ones == [i for i in ids(every) if i in ones]


def test_one_shard_is_the_whole_batch():
    assert share(experiment(), Shard(1, 1)).runs() == experiment().runs()


def test_a_share_depends_on_the_run_ids_alone():
    # Another machine, the matrix written in another order: the same shares.
    reordered = experiment(matrix=[{"profile": ["smix1-r1"]}, {"profile": ["smix1-e0"]}])
    assert ids(reordered.runs()) != ids(experiment().runs())
    for k in range(1, 5):
        assert sorted(ids(share(reordered, Shard(k, 4)).runs())) == \
            sorted(ids(share(experiment(), Shard(k, 4)).runs()))
    # Stable across releases too: run ids sorted, dealt out in turn.
    assert sorted(ids(share(experiment(), Shard(2, 7)).runs()))[:3] == \
        ["smix1-e0_a_v_r01", "smix1-e0_a_w_r03", "smix1-e0_b_w_r00"]


@pytest.mark.parametrize("text, message", [
    ("0/4", "0/4: K must be from 1 to 4 (shards count from 1)"),
    ("5/4", "5/4: K must be from 1 to 4"),
    ("1/0", "1/0: N must be at least 1"),
    ("1-4", "'1-4': expected K/N, shard K of N, e.g. 1/4"),
    (" 1/4", "expected K/N"),
    ("1/4/2", "expected K/N")])
def test_a_bad_shard_is_refused_with_what_is_allowed(capsys, text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Shard.parse(text)
    with pytest.raises(SystemExit) as exit_:
        main(["experiment", "run", "x.yaml", "--shard", text])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def commit(out, run, scalars, status="ok"):
    work = results.partial_dir(out, run)
    work.mkdir(parents=True)
    (work / "queue.csv").write_text(f"queue of {run.run_id}\n")
    results.commit_run(out, run, work, {"status": status, "scalars": scalars})


def elapsed(run):
    """A run's made-up metric, the same whichever folder holds it."""
    return {"flow0.bulk.elapsed_s": 30.0 + run.replication + len(run.workload) / 10}


CHECKED = batch(expect=[{"profile": "smix1-e0", "tcp": "a", "workload": "w",
                         "metric": "flow0.bulk.elapsed_s", "study": 32, "within": "10%"}])


def shard_folders(tmp_path, whole, count, skip=()):
    folders = []
    for k in range(1, count + 1):
        folder = tmp_path / f"shard{k}"
        results.prepare(folder, TEXT)
        part = share(whole, Shard(k, count))
        for run in part.runs():
            if run.run_id not in skip:
                commit(folder, run, elapsed(run))
        results.write_summary(part, folder)
        folders.append(folder)
    return folders


def test_merged_shards_summarise_as_one_folder_does(tmp_path):
    whole = parse_experiment(CHECKED, "b.yaml")
    one = tmp_path / "one"
    results.prepare(one, TEXT)
    for run in whole.runs():
        commit(one, run, elapsed(run))
    results.write_summary(whole, one)

    folders = shard_folders(tmp_path, whole, 3)
    assert "# b, shard 2/3" in (folders[1] / "summary.md").read_text()
    merged = results.merge(whole, TEXT, folders, tmp_path / "out")
    assert (merged.duplicates, merged.strays, merged.missing) == ({}, {}, [])
    for name in ("summary.md", "summary.csv", "expect.csv", "experiment.yaml"):
        assert (tmp_path / "out" / name).read_text() == (one / name).read_text()
    assert "**complete**: 40 of 40 runs done" in (tmp_path / "out" / "summary.md").read_text()
    run = whole.runs()[-1]
    assert (results.run_dir(tmp_path / "out", run) / "queue.csv").read_text() == \
        f"queue of {run.run_id}\n"


def test_missing_runs_are_reported_and_partial_ones_left_out(tmp_path):
    whole = experiment()
    lost = share(whole, Shard(3, 3)).runs()[0]
    folders = shard_folders(tmp_path, whole, 3, skip={lost.run_id})
    (results.partial_dir(folders[2], lost)).mkdir()    # a run cut short
    merged = results.merge(whole, TEXT, folders, tmp_path / "out")
    assert (merged.missing, merged.strays) == ([lost.run_id], {})
    assert "**INCOMPLETE**: 39 of 40 runs done" in \
        (tmp_path / "out" / "summary.md").read_text()


def test_identical_duplicates_are_taken_once(tmp_path):
    whole = experiment()
    folders = shard_folders(tmp_path, whole, 2)
    shutil.copytree(folders[0], tmp_path / "copy")
    merged = results.merge(whole, TEXT, folders + [tmp_path / "copy"], tmp_path / "out")
    first = ids(share(whole, Shard(1, 2)).runs())
    assert merged.duplicates == {i: [folders[0], tmp_path / "copy"] for i in first}
    assert results.count(tmp_path / "out", whole.runs()) == (40, 0)


def test_a_run_that_differs_between_folders_stops_the_merge(tmp_path):
    whole = experiment()
    folders = shard_folders(tmp_path, whole, 2)
    shutil.copytree(folders[0], tmp_path / "again")
    run = share(whole, Shard(1, 2)).runs()[4]
    metrics = results.read_run(tmp_path / "again", run)
    metrics["scalars"]["flow0.bulk.elapsed_s"] += 1
    (results.run_dir(tmp_path / "again", run) / "metrics.json").write_text(json.dumps(metrics))
    with pytest.raises(results.ResultsError,
                       match=f"run {run.run_id} differs between {folders[0]} and "
                             f"{tmp_path / 'again'}"):
        results.merge(whole, TEXT, folders + [tmp_path / "again"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_folders_of_another_experiment_file_are_refused(tmp_path):
    whole = experiment()
    folders = shard_folders(tmp_path, whole, 2)
    results.prepare(tmp_path / "other", "another file")
    with pytest.raises(results.ResultsError) as error:
        results.merge(whole, TEXT, folders + [tmp_path / "other", tmp_path / "none",
                                              folders[0]], folders[1])
    assert str(error.value).splitlines() == [
        f"{folders[1]} is the output folder: merge into another one",
        f"{tmp_path / 'other'} holds results of a different experiment file",
        f"{tmp_path / 'none'}: not a results folder (no experiment.yaml)",
        "a folder is given twice"]


def test_merge_command_reports_what_it_took_and_what_is_missing(capsys, tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump(CHECKED))
    whole = load_experiment(path)
    lost = share(whole, Shard(2, 2)).runs()[0]
    with_text = []
    for k in (1, 2):
        folder = tmp_path / f"shard{k}"
        results.prepare(folder, path.read_text())
        for run in share(whole, Shard(k, 2)).runs():
            if run != lost:
                commit(folder, run, elapsed(run))
        with_text.append(str(folder))
    shutil.copytree(tmp_path / "shard1", tmp_path / "copy")
    out = tmp_path / "out"
    assert main(["experiment", "merge", str(path), *with_text, str(tmp_path / "copy"),
                 "--out", str(out)]) == 1
    printed, err = capsys.readouterr()
    assert f"{out}: 39 of 40 runs complete, 0 failed" in printed
    assert "expect smix1-e0 · a · w: median flow0.bulk.elapsed_s = 32 ± 10 %: linkemu 32" \
        in printed
    assert f"1 runs in no folder: {lost.run_id}\n" in err
    assert "taken once" in err and "run their shards again (they resume)" in err

    commit(tmp_path / "shard2", lost, elapsed(lost))
    assert main(["experiment", "merge", str(path), *with_text, "--out", str(out)]) == 0
