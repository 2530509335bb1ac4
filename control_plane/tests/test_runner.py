"""A run's wait for the switch to empty, on counters made by hand, the
command lines it gives the clients, and batches in networks side by side,
on fake networks and runs."""

import json
import os
import re
import signal
import subprocess
import time
from contextlib import contextmanager, nullcontext
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace

import pytest

from linkemu.experiments import apps, results, runner
from linkemu.experiments.experiment import Flow, parse_experiment
from linkemu.experiments.tcp_config import HostTcp
from linkemu.program import constants as p4
from linkemu.switch import counters as switch_counters
from linkemu.switch.codes import DIRECTION_IDS
from linkemu.testbed import leftovers, slots

PROFILES = Path(__file__).resolve().parents[2] / "profiles"


def test_frames_that_never_leave_are_counted_and_given_their_likely_cause(monkeypatch):
    counters = {name: {d: (0, 0) for d in DIRECTION_IDS} for name in p4.COUNTERS}
    counters["link_in"]["downlink"] = (7, 0)
    counters["link_out"]["downlink"] = (4, 0)
    monkeypatch.setattr(switch_counters, "read_counters", lambda switch: counters)
    monkeypatch.setattr(runner, "IDLE_TIMEOUT_S", 0.0)
    run = runner.RunOnce.__new__(runner.RunOnce)
    run.switch = None
    with pytest.raises(runner.RunError, match=r"after 0 s \(downlink 3\): lost inside BMv2"):
        run._wait_idle()
    counters["link_out"]["downlink"] = (7, 0)
    run._wait_idle()   # nothing inside: returns at once


def test_http_client_is_given_the_flows_page_settings(tmp_path):
    run = runner.RunOnce.__new__(runner.RunOnce)
    run.work = tmp_path
    run.experiment = SimpleNamespace(run_timeout_s=300.0)
    flow = Flow(app="http", server="h1", client="h2", start_s=0.0, page="m+8m", http="1.0",
                inline="main-complete", parallel=3)
    args, _ = run._client_args(0, flow, "10.0.0.1")
    parsed = apps.build_parser().parse_args(args[len(runner.APPS):])
    assert (parsed.page, parsed.http, parsed.parallel, parsed.inline, parsed.port) == \
        ("m+8m", "1.0", 3, "main-complete", runner.FIRST_PORT)


def test_a_dead_switch_fails_its_run_and_the_batch_goes_on_with_a_new_one(monkeypatch,
                                                                            tmp_path):
    runs = [SimpleNamespace(profile="p", run_id=f"r{i}", tcp="t") for i in range(4)]
    experiment = SimpleNamespace(runs=lambda: runs, profiles={"p": None}, fixed=1, mobile=1,
                                 tcp={"t": {"h1": HostTcp()}})
    networks, done, failed = [], [], []

    @contextmanager
    def network(*args, **kwargs):
        networks.append(args)
        yield SimpleNamespace(staticArp=lambda: None)

    class Once:
        def __init__(self, experiment, run, net, switch, grpc_port, out_dir):
            self.run = run

        def execute(self):
            if self.run.run_id == "r1" and len(networks) == 1:
                raise runner.SwitchDied("the switch exited with code -9")
            done.append(self.run.run_id)
            return True

        def fail(self, error):
            failed.append((self.run.run_id, error))

    monkeypatch.setattr(runner, "emulated_link", network)
    monkeypatch.setattr(runner, "Switch", lambda address, **options: nullcontext())
    monkeypatch.setattr(runner, "RunOnce", Once)
    for name in ("prepare", "write_summary"):
        monkeypatch.setattr(runner.results, name, lambda *args: None)
    monkeypatch.setattr(runner.results, "is_complete", lambda out, run: False)
    monkeypatch.setattr(runner.results, "count", lambda out, runs: (len(done), len(failed)))
    assert runner.run_batch(experiment, tmp_path, "") == (3, 1)
    assert failed == [("r1", "the switch exited with code -9")]
    assert done == ["r0", "r2", "r3"]
    assert len(networks) == 2   # a new switch for the runs after the dead one


def test_the_batch_holds_the_bpf_congestion_controls_of_the_pending_runs(monkeypatch,
                                                                         tmp_path):
    classic, kernel = HostTcp(congestion_control="reno_classic"), HostTcp(congestion_control="reno")
    runs = [SimpleNamespace(profile=p, run_id=f"{p}-{t}", tcp=t)
            for p in ("p", "q") for t in ("classic", "kernel")]
    experiment = SimpleNamespace(runs=lambda: runs, profiles={"p": "P", "q": "Q"}, fixed=1,
                                 mobile=1, tcp={"classic": {"h1": kernel, "h2": classic},
                                                "kernel": {"h1": kernel, "h2": kernel}})
    events = []

    @contextmanager
    def registered(users):
        events.append(("registered", users))
        yield {}
        events.append("released")

    @contextmanager
    def network(profile, *args, **kwargs):
        events.append(("network", profile))
        yield SimpleNamespace(staticArp=lambda: None)

    monkeypatch.setattr(runner.bpf_cc, "registered", registered)
    monkeypatch.setattr(runner, "emulated_link", network)
    monkeypatch.setattr(runner, "Switch", lambda address, **options: nullcontext())
    monkeypatch.setattr(runner, "RunOnce", lambda experiment, run, *args: SimpleNamespace(
        run=run, execute=lambda: True))
    for name in ("prepare", "write_summary"):
        monkeypatch.setattr(runner.results, name, lambda *args: None)
    monkeypatch.setattr(runner.results, "count", lambda out, runs: (len(runs), 0))
    monkeypatch.setattr(runner.results, "is_complete", lambda out, run: False)
    runner.run_batch(experiment, tmp_path, "")
    needed = ("registered", {"reno_classic": "tcp config classic"})
    assert events == [needed, ("network", "P"), ("network", "Q"), "released"]
    # A batch whose runs left name only the kernel's controls registers none.
    monkeypatch.setattr(runner.results, "is_complete", lambda out, run: run.tcp == "classic")
    events.clear()
    runner.run_batch(experiment, tmp_path, "")
    assert events == [("registered", {}), ("network", "P"), ("network", "Q"), "released"]


# -- several networks side by side, on fake networks and runs

def fake_batch(replications=3):
    """Two profiles, `replications` runs each."""
    return parse_experiment({
        "name": "b", "profile_dir": str(PROFILES), "profiles": ["smix1-e0", "smix1-r1"],
        "tcp": {"a": {}}, "workloads": {"w": [{"app": "bulk", "bytes": 100}]},
        "replications": replications}, "b.yaml")


def fake_networks(monkeypatch, log, run_s=0.3, execute=None):
    """Networks and runs that only write down, in `log` (shared by the
    slots' processes), when and where each run ran; a run's metrics depend
    on the run alone. `execute(run, net)` first, when given."""
    def write(**entry):
        with open(log, "a") as out:
            out.write(json.dumps(entry) + "\n")

    @contextmanager
    def network(profile, fixed, mobile, grpc_port, slot, thrift_port, **options):
        write(network=profile.name, slot=slot.number, count=slot.count, pid=os.getpid(),
              ports=[grpc_port, thrift_port])
        yield SimpleNamespace(staticArp=lambda: None, slot=slot)

    class Once:
        def __init__(self, experiment, run, net, switch, grpc_port, out_dir):
            self.run, self.net, self.out_dir = run, net, out_dir

        def execute(self):
            start = time.time()
            if execute:
                execute(self.run, self.net)
            time.sleep(run_s)
            work = results.partial_dir(self.out_dir, self.run)
            work.mkdir(parents=True)
            results.commit_run(self.out_dir, self.run, work, {
                "run": asdict(self.run), "status": "ok",
                "scalars": {"x": self.run.replication + (self.run.profile == "smix1-r1")}})
            write(run=self.run.run_id, slot=self.net.slot.number, start=start, end=time.time())
            return True

        def fail(self, error):
            runner.fail_run(self.out_dir, self.run, error)

    monkeypatch.setattr(runner, "emulated_link", network)
    monkeypatch.setattr(runner, "Switch", lambda address, **options: nullcontext())
    monkeypatch.setattr(runner, "RunOnce", Once)


def read_log(log):
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return ([e for e in entries if "network" in e], [e for e in entries if "run" in e])


def test_n_networks_run_side_by_side_with_the_results_of_one(monkeypatch, tmp_path):
    experiment = fake_batch()
    fake_networks(monkeypatch, tmp_path / "one.log")
    assert runner.run_batch(experiment, tmp_path / "one", "text") == (6, 0)
    fake_networks(monkeypatch, tmp_path / "two.log")
    assert runner.run_batch(experiment, tmp_path / "two", "text", jobs=2) == (6, 0)

    networks, runs = read_log(tmp_path / "two.log")
    assert sorted(r["run"] for r in runs) == [r.run_id for r in experiment.runs()]
    assert {(n["slot"], n["count"]) for n in networks} == {(0, 2), (1, 2)}
    assert {tuple(n["ports"]) for n in networks} == {(9559, 9090), (9560, 9091)}
    assert len({n["pid"] for n in networks}) == 2   # a process each
    # A network serves its profile's runs in a row: none is built twice in a slot.
    assert len({(n["slot"], n["network"]) for n in networks}) == len(networks) <= 4
    on = {slot: [r for r in runs if r["slot"] == slot] for slot in (0, 1)}
    assert any(a["start"] < b["end"] and b["start"] < a["end"] for a in on[0] for b in on[1]), \
        "no two runs of the two networks at once"
    for one in (tmp_path / "one" / "runs").iterdir():
        assert (one / "metrics.json").read_text() == \
            (tmp_path / "two" / "runs" / one.name / "metrics.json").read_text()
    for name in ("summary.md", "summary.csv"):   # in run order, however they completed
        assert (tmp_path / "one" / name).read_text() == (tmp_path / "two" / name).read_text()


def test_a_resumed_batch_runs_only_what_is_left_side_by_side(monkeypatch, tmp_path, capsys):
    experiment = fake_batch()
    fake_networks(monkeypatch, tmp_path / "log")
    monkeypatch.setattr(runner.results, "is_complete",
                        lambda out, run: run.replication != 1)   # two left
    runner.run_batch(experiment, tmp_path / "out", "text", jobs=4)
    _, runs = read_log(tmp_path / "log")
    assert sorted(r["run"] for r in runs) == ["smix1-e0_a_w_r01", "smix1-r1_a_w_r01"]
    assert "network slot 2" not in capsys.readouterr().err   # as many networks as runs left


def test_a_killed_network_process_fails_its_run_and_its_slot_is_cleaned(monkeypatch,
                                                                        tmp_path):
    monkeypatch.setattr(leftovers, "RECORDS_DIR", tmp_path / "records")
    experiment = fake_batch()
    sleepers = tmp_path / "sleepers"

    def killed_once(run, net):
        if run.run_id == "smix1-r1_a_w_r00" and not sleepers.exists():
            # Made as a switch is: outliving its maker, and recorded.
            sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
            leftovers.note_process(sleeper, "sleep")
            sleepers.write_text(str(sleeper.pid))
            os.kill(os.getpid(), signal.SIGKILL)

    fake_networks(monkeypatch, tmp_path / "log", execute=killed_once)
    assert runner.run_batch(experiment, tmp_path / "out", "text", jobs=2) == (5, 1)
    failed = results.read_run(tmp_path / "out", experiment.runs()[3])
    assert failed["status"] == "failed"
    assert re.fullmatch(r"network slot \d's process \(pid \d+\) was killed by signal 9",
                        failed["error"])
    assert leftovers.started(int(sleepers.read_text())) is None, "the dead slot's leftover"
    networks, runs = read_log(tmp_path / "log")
    assert len(runs) == 5 and len({n["pid"] for n in networks}) == 3   # a new process
    assert not list((tmp_path / "records").glob("made-*.json"))


def test_a_failing_slot_stops_the_batch_after_the_others_runs(monkeypatch, tmp_path):
    experiment = fake_batch()

    def refused(run, net):
        if net.slot.number == 1:
            raise RuntimeError("linkemu network slot 1 is already up (pid 1)")

    fake_networks(monkeypatch, tmp_path / "log", execute=refused)
    with pytest.raises(RuntimeError, match=r"^network slot 1: RuntimeError: linkemu network "
                                           r"slot 1 is already up \(pid 1\)$"):
        runner.run_batch(experiment, tmp_path / "out", "text", jobs=2)
    _, runs = read_log(tmp_path / "log")
    assert 1 <= len(runs) < 6 and {r["slot"] for r in runs} == {0}


def test_runs_are_handed_out_a_network_at_a_time():
    experiment = fake_batch(replications=2)
    runs = experiment.runs()
    e0, r1 = runs[:2], runs[2:]
    batch = runner.Batch(experiment, None, [r1[0], e0[0], r1[1], e0[1]],
                         SimpleNamespace(update=lambda *args: None))
    assert batch.next(None) == r1[0]              # no network: the first left
    assert batch.next("smix1-e0") == e0[0]        # its network's profile first
    assert batch.next("smix1-e0") == e0[1]
    assert batch.next("smix1-e0") == r1[1]        # then whatever is left
    assert batch.next("smix1-r1") is None


def test_more_networks_than_cores_are_warned_of(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(slots.os, "sched_getaffinity", lambda pid: {0})
    fake_networks(monkeypatch, tmp_path / "log", run_s=0)
    runner.run_batch(fake_batch(), tmp_path / "out", "text", jobs=2)
    assert ("linkemu: warning: 2 networks side by side, and this machine gives them 1 cores"
            in capsys.readouterr().err)
