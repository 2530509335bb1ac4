"""A run's wait for the switch to empty, on counters made by hand, and the
command lines it gives the clients."""

from contextlib import contextmanager, nullcontext
from types import SimpleNamespace

import pytest

from linkemu.experiments import apps, runner
from linkemu.experiments.experiment import Flow
from linkemu.experiments.tcp_config import HostTcp
from linkemu.program import constants as p4
from linkemu.switch import counters as switch_counters
from linkemu.switch.codes import DIRECTION_IDS


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


def test_each_network_has_the_bpf_congestion_controls_of_the_pending_runs(monkeypatch,
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
    assert events == [needed, ("network", "P"), needed, ("network", "Q")]
    # A batch whose runs left name only the kernel's controls registers none.
    monkeypatch.setattr(runner.results, "is_complete", lambda out, run: run.tcp == "classic")
    events.clear()
    runner.run_batch(experiment, tmp_path, "")
    assert events == [("registered", {}), ("network", "P"), ("registered", {}), ("network", "Q")]
