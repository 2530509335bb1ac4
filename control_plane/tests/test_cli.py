"""The CLI reports bad input and unreachable switches clearly, and checks
profiles before it connects to anything."""

from pathlib import Path

import pytest
import yaml
from google.protobuf import text_format

import fake_p4info
from linkemu import cli
from linkemu.cli import main
from linkemu.experiments import results, runner
from linkemu.model import link_states
from linkemu.switch.entities import TableEntry
from linkemu.testbed import bmv2, emunet
from linkemu.testbed.bmv2 import free_tcp_port


def test_check_prints_both_directions(capsys, tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("downlink: {rate: 64kbit, delay: 300ms, queue: 20}\nuplink: {}\n")
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "downlink rate 64kbit, delay 300ms, queue 20 packets" in out


def test_check_says_when_a_busy_link_would_fill_the_hold(capsys, tmp_path, monkeypatch):
    # 100 Mbit/s x 160 ms: 1334 frames of 1500 B in flight, plus the queues;
    # the installed switch holds by recirculation.
    monkeypatch.setattr(bmv2, "installed_timed_departure", lambda: False)
    path = tmp_path / "p.yaml"
    path.write_text("downlink: {rate: 100Mbit, delay: 160ms, queue: 100}\n"
                    "uplink: {rate: 1Mbit, delay: 160ms, queue: 10}\n")
    assert main(["check", str(path)]) == 0
    assert "it would hold 1458 frames of the MTU, more than the 960" in capsys.readouterr().out
    # Nothing listens there: the warning comes before the switch's error.
    assert main(["--switch", f"127.0.0.1:{free_tcp_port()}", "--timeout", "0.5",
                 "push", str(path)]) == 1
    assert "it would hold 1458 frames" in capsys.readouterr().err
    path.write_text("downlink: {rate: 10Mbit, delay: 160ms, queue: 100}\nuplink: {}\n")
    assert main(["check", str(path)]) == 0
    assert "would hold" not in capsys.readouterr().out


def test_check_says_when_a_switch_without_timed_departure_is_imprecise(capsys, tmp_path,
                                                                      monkeypatch):
    # 2 Mbit/s x 20 ms: 4 frames in flight each way, plus queues of 10 and 20.
    path = tmp_path / "p.yaml"
    path.write_text("downlink: {rate: 2Mbit, delay: 20ms, queue: 10}\n"
                    "uplink: {rate: 2Mbit, delay: 20ms, queue: 20}\n")
    monkeypatch.setattr(bmv2, "installed_timed_departure", lambda: False)
    assert main(["check", str(path)]) == 0
    assert "holds up to 38 frames, and this switch (no timed departure" in \
        capsys.readouterr().out
    monkeypatch.setattr(bmv2, "installed_timed_departure", lambda: True)
    assert main(["check", str(path)]) == 0
    assert "holds up to" not in capsys.readouterr().out
    path.write_text("downlink: {rate: 2Mbit, delay: 20ms, queue: 10}\n"
                    "uplink: {rate: 2Mbit, delay: 20ms, queue: 10}\n")
    monkeypatch.setattr(bmv2, "installed_timed_departure", lambda: False)
    assert main(["check", str(path)]) == 0
    assert "holds up to" not in capsys.readouterr().out   # 28 held


def test_a_switch_with_timed_departure_holds_a_busy_100mbit_link(capsys, tmp_path,
                                                                  monkeypatch):
    monkeypatch.setattr(bmv2, "installed_timed_departure", lambda: True)
    path = tmp_path / "p.yaml"
    path.write_text("downlink: {rate: 100Mbit, delay: 160ms, queue: 100}\n"
                    "uplink: {rate: 100Mbit, delay: 160ms, queue: 1000}\n")
    assert main(["check", str(path)]) == 0
    assert "would hold" not in capsys.readouterr().out
    path.write_text("downlink: {rate: 1Gbit, delay: 160ms, queue: 100}\n"
                    "uplink: {rate: 1Gbit, delay: 160ms, queue: 100}\n")
    assert main(["check", str(path)]) == 0
    assert "it would hold 26868 frames of the MTU, more than the 15000" in \
        capsys.readouterr().out


def test_bad_profile_is_rejected_before_connecting(capsys, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("downlink: {rate: 64kbps}\nuplink: {queue: 0}\n")
    # Nothing listens on this port: the error must be the profile's, not the switch's.
    port = free_tcp_port()
    assert main(["--switch", f"127.0.0.1:{port}", "--timeout", "0.5", "push", str(path)]) == 1
    err = capsys.readouterr().err
    assert "downlink.rate: '64kbps'" in err and "uplink.queue: 0" in err
    assert "P4Runtime" not in err


def test_unreachable_switch(capsys):
    port = free_tcp_port()
    assert main(["--switch", f"127.0.0.1:{port}", "--timeout", "0.5", "counters"]) == 1
    assert f"no P4Runtime server at 127.0.0.1:{port}" in capsys.readouterr().err


def test_timeline_needs_link_states(capsys, tmp_path):
    path = tmp_path / "plain.yaml"
    path.write_text("downlink: {}\nuplink: {}\n")
    assert main(["timeline", str(path), "--duration", "10", "-o", str(tmp_path / "t.csv")]) == 1
    assert "defines no link_states" in capsys.readouterr().err


def states_profile(tmp_path):
    profile = tmp_path / "states.yaml"
    profile.write_text("""
downlink: {}
uplink: {}
link_states:
  start: {a: 1}
  states:
    a: {error: 0, duration: {distribution: uniform, min: 1s, max: 2s}, next: {b: 1}}
    b: {error: 1, duration: {distribution: static, value: 1s}, next: {a: 1}}
""")
    return profile


def test_timeline_is_drawn_from_the_seed(tmp_path):
    profile = states_profile(tmp_path)
    first, second = tmp_path / "1.csv", tmp_path / "2.csv"
    assert main(["timeline", str(profile), "--seed", "3", "--duration", "30", "-o", str(first)]) == 0
    assert main(["timeline", str(profile), "--seed", "3", "--duration", "30", "-o", str(second)]) == 0
    assert first.read_text() == second.read_text()
    assert first.read_text().count("\nb,") >= 8


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "1e9", "soon"])
def test_durations_must_be_finite_and_bounded(capsys, tmp_path, value):
    profile = states_profile(tmp_path)
    with pytest.raises(SystemExit):
        main(["timeline", str(profile), "--duration", value, "-o", str(tmp_path / "t.csv")])
    assert f"argument --duration: '{value}': " in capsys.readouterr().err
    assert not (tmp_path / "t.csv").exists()


def test_a_timeline_is_written_as_drawn_and_bounded(capsys, tmp_path, monkeypatch):
    """Microsecond states over an hour: rows are written as they are drawn,
    and a timeline longer than a replay holds is refused, not left half."""
    profile = tmp_path / "us.yaml"
    profile.write_text("downlink: {}\nuplink: {}\nlink_states:\n  start: {a: 1}\n  states:\n"
                       "    a: {error: 0, duration: {distribution: static, value: 1us}, "
                       "next: {a: 1}}\n")
    monkeypatch.setattr(link_states, "MAX_SEGMENTS", 1000)
    drawn = []
    monkeypatch.setattr(cli, "walk", lambda chain, seed: (drawn.append(s) or s
                                                         for s in link_states.walk(chain, seed)))
    out = tmp_path / "t.csv"
    assert main(["timeline", str(profile), "--duration", "3600", "-o", str(out)]) == 1
    assert "more than 1000 segments, the most a replay holds" in capsys.readouterr().err
    assert len(drawn) == 1001 and not out.exists()
    assert main(["timeline", str(profile), "--duration", "0.0005", "-o", str(out)]) == 0
    assert "wrote 500 segments" in capsys.readouterr().out


def test_check_reports_every_bad_file(capsys, tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("downlink: {}\nuplink: {}\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("downlink: {rate: fast}\nuplink: {}\n")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"downlink: {}\nuplink: {}\nname: \xe9\n")
    assert main(["check", str(bad), str(good), str(latin)]) == 1
    out, err = capsys.readouterr()
    assert f"{good}: good: MTU 1500" in out
    assert f"linkemu: {bad}: invalid profile\n  downlink.rate: 'fast'" in err
    assert f"linkemu: {latin}: invalid profile\n  not UTF-8 text: byte 30 is 0xe9" in err
    assert err.endswith("linkemu: 2 of 3 files are invalid\n")
    experiment = tmp_path / "e.yaml"
    experiment.write_text("name: e\n")
    assert main(["experiment", "check", str(experiment), str(experiment)]) == 1
    assert capsys.readouterr().err.count(f"linkemu: {experiment}: invalid experiment") == 2


class PushedSwitch:
    """A switch whose pushed profile draws no link errors."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def read_table(self, table):
        return [TableEntry(table, {"dir": d}, "set_params", {"features": 0})
                for d in (0, 1)]


def test_states_refuses_a_switch_whose_profile_draws_no_errors(capsys, tmp_path, monkeypatch):
    profile = states_profile(tmp_path)
    monkeypatch.setattr(cli, "_connect", lambda args: PushedSwitch())
    assert main(["states", str(profile), "--duration", "1"]) == 1
    err = capsys.readouterr().err
    assert "its link states err the downlink and uplink," in err
    assert f"push this profile first (linkemu push {profile})" in err


PROFILES = Path(__file__).resolve().parents[2] / "profiles"


def checked_experiment(tmp_path):
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump({
        "name": "e", "profile_dir": str(PROFILES), "profiles": ["smix1-e0"], "tcp": {"a": {}},
        "workloads": {"w": [{"app": "bulk", "bytes": 100}]}, "replications": 2,
        "expect": [{"profile": "smix1-e0", "metric": "flow0.bulk.elapsed_s", "study": 32,
                    "within": "10%", "source": "S-MIX1"}]}))
    return path


def test_experiment_check_lists_the_expectations(capsys, tmp_path):
    assert main(["experiment", "check", str(checked_experiment(tmp_path))]) == 0
    assert "  expect smix1-e0 · a · w: median flow0.bulk.elapsed_s = 32 ± 10 % (S-MIX1)\n" \
        in capsys.readouterr().out


def runs_batches_with(run_batch, tmp_path, monkeypatch):
    """`linkemu experiment run` as root with the tools and a compiled
    program (fakes in tmp_path), its batches run by `run_batch`."""
    (tmp_path / "linkemu.json").write_text("{}")
    (tmp_path / "linkemu.p4info.txtpb").write_text(
        text_format.MessageToString(fake_p4info.p4info().message))
    monkeypatch.setattr(emunet, "BUILD", tmp_path)
    monkeypatch.setattr(cli, "missing_tools", lambda *tools: [])
    monkeypatch.setattr(cli.os, "geteuid", lambda: 0)
    monkeypatch.setattr(runner, "run_batch", run_batch)


@pytest.mark.parametrize("elapsed, status, verdict, code, message", [
    ((33.0, 34.0), "ok", "33.5 (n 2), +4.7 %: met", 0, None),
    ((33.0, 40.0), "ok", "36.5 (n 2), +14.1 %: missed", 1, "1 of 1 expectations not met"),
    ((40.0, 30.0), "failed", "40 (n 1), +25.0 %: missed", 1, "some runs did not complete"),
    ((None, None), "ok", None, 1, "1 of 1 expectations not met")])
def test_experiment_run_fails_a_complete_batch_that_misses(capsys, tmp_path, monkeypatch,
                                                           elapsed, status, verdict, code,
                                                           message):
    def run_batch(experiment, out, text, jobs):
        results.prepare(out, text)
        for run, seconds, state in zip(experiment.runs(), elapsed, ("ok", status)):
            work = results.partial_dir(out, run)
            work.mkdir(parents=True)
            scalars = {} if seconds is None else {"flow0.bulk.elapsed_s": seconds}
            results.commit_run(out, run, work, {"status": state, "scalars": scalars})
        results.write_summary(experiment, out)
        return results.count(out, experiment.runs())

    runs_batches_with(run_batch, tmp_path, monkeypatch)
    assert main(["experiment", "run", str(checked_experiment(tmp_path)),
                 "--out", str(tmp_path / "out")]) == code
    out, err = capsys.readouterr()
    line = "expect smix1-e0 · a · w: median flow0.bulk.elapsed_s = 32 ± 10 %: "
    assert line + (f"linkemu {verdict}" if verdict else "no data") + "\n" in out
    assert (message in err) if message else not err


def test_a_complete_shard_passes_and_leaves_the_expectations_to_the_merge(capsys, tmp_path,
                                                                          monkeypatch):
    def run_batch(experiment, out, text, jobs):
        results.prepare(out, text)
        for run in experiment.runs():
            work = results.partial_dir(out, run)
            work.mkdir(parents=True)
            results.commit_run(out, run, work, {"status": "ok", "scalars": {}})
        results.write_summary(experiment, out)

    runs_batches_with(run_batch, tmp_path, monkeypatch)
    monkeypatch.chdir(tmp_path)
    # Its one run has no metric: the whole batch would miss its expectation.
    assert main(["experiment", "run", str(checked_experiment(tmp_path)), "--shard", "2/2"]) == 0
    out = Path("results/e/shards/2-of-2")
    assert f"{out}: 1 of 1 runs of shard 2/2 complete, 0 failed" in capsys.readouterr().out
    assert [p.name for p in (out / "runs").iterdir()] == ["smix1-e0_a_w_r01"]


def test_experiment_run_takes_the_networks_to_run_side_by_side(capsys, tmp_path, monkeypatch):
    asked = []

    def run_batch(experiment, out, text, jobs):
        asked.append(jobs)
        results.prepare(out, text)

    runs_batches_with(run_batch, tmp_path, monkeypatch)
    file = str(checked_experiment(tmp_path))
    for jobs in ([], ["--jobs", "2"], ["--jobs", "64"]):
        main(["experiment", "run", file, "--out", str(tmp_path / "out"), *jobs])
    assert asked == [1, 2, 64]
    for jobs, refusal in (("0", "0: at least 1"), ("65", "65: at most 64 networks at once")):
        with pytest.raises(SystemExit):
            main(["experiment", "run", file, "--out", str(tmp_path / "out"), "--jobs", jobs])
        assert refusal in capsys.readouterr().err
