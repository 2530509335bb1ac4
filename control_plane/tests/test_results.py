import json
from dataclasses import replace
from pathlib import Path

import pytest

from linkemu.experiments import results, run_metrics
from linkemu.experiments.experiment import parse_experiment
from linkemu.experiments.flows import Connection, DataStats

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def experiment():
    return parse_experiment({
        "name": "x", "profiles": ["gprs-optimal"], "tcp": {"a": {}},
        "workloads": {"w": [{"app": "bulk", "bytes": 100},
                            {"app": "bulk", "bytes": 100}]},
        "replications": 3}, "x.yaml", ROOT / "experiments")


def commit(out, run, status="ok", scalars=None):
    work = results.partial_dir(out, run)
    work.mkdir(parents=True)
    results.commit_run(out, run, work, {"status": status, "scalars": scalars or {}})


def test_runs_commit_atomically_and_count(experiment, tmp_path):
    results.prepare(tmp_path, "text")
    first, second, third = experiment.runs()
    commit(tmp_path, first, scalars={"t": 1.0})
    commit(tmp_path, second, status="failed")
    assert results.is_complete(tmp_path, first) and not results.is_complete(tmp_path, second)
    assert results.count(tmp_path, experiment.runs()) == (1, 1)
    commit(tmp_path, second, scalars={"t": 3.0})  # a retried run replaces the failed one
    assert results.count(tmp_path, experiment.runs()) == (2, 0)
    assert not list((tmp_path / "runs").glob(".*"))


def test_summary_says_what_it_covers(experiment, tmp_path):
    results.prepare(tmp_path, "text")
    first, second, _ = experiment.runs()
    commit(tmp_path, first, scalars={"t": 1.0})
    commit(tmp_path, second, scalars={"t": 3.0})
    results.write_summary(experiment, tmp_path)
    markdown = (tmp_path / "summary.md").read_text()
    assert "**INCOMPLETE**: 2 of 3 runs done" in markdown
    assert "| t | 2 | 1 | 1.5 | 2 | 2.5 | 3 | 2 |" in markdown
    assert (tmp_path / "summary.csv").read_text().splitlines()[1] == \
        "gprs-optimal,a,w,t,2,1,1.5,2,2.5,3,2"


def test_summary_gives_why_a_run_failed_instead_of_its_figures(experiment, tmp_path):
    results.prepare(tmp_path, "text")
    first, second, third = experiment.runs()
    commit(tmp_path, first, scalars={"t": 1.0})
    for run in (second, third):
        work = results.partial_dir(tmp_path, run)
        work.mkdir(parents=True)
        results.commit_run(tmp_path, run, work, {
            "status": "failed", "scalars": {"t": 9.0},
            "error": "event log: the switch did not keep up"})
    results.write_summary(experiment, tmp_path)
    markdown = (tmp_path / "summary.md").read_text()
    assert "1 runs, 2 failed\n\n- failed: event log: the switch did not keep up\n" in markdown
    assert "| t | 1 | 1 |" in markdown


def checked(statistic="median"):
    return parse_experiment({
        "name": "x", "profiles": ["gprs-optimal"], "tcp": {"a": {}},
        "workloads": {"w": [{"app": "bulk", "bytes": 100}]}, "replications": 3,
        "expect": [
            {"profile": "gprs-optimal", "metric": "flow0.bulk.elapsed_s", "study": 30,
             "within": "10%", "statistic": statistic, "source": "S-MIX1"},
            {"profile": "gprs-optimal", "metric": "drops.downlink.queue", "study": 20,
             "within": "30%"},
            {"profile": "gprs-optimal", "metric": "flow0.bulk.lost", "study": 18,
             "within": "30%"}]}, "x.yaml", ROOT / "experiments")


def test_summary_compares_the_study_figures(tmp_path):
    experiment = checked()
    results.prepare(tmp_path, "text")
    for run, elapsed, drops in zip(experiment.runs(), (31.0, 34.0, 40.0), (10, 26, 30)):
        commit(tmp_path, run, scalars={"flow0.bulk.elapsed_s": elapsed,
                                       "drops.downlink.queue": drops})
    results.write_summary(experiment, tmp_path)
    markdown = (tmp_path / "summary.md").read_text()
    assert "## Against the study" in markdown
    assert "| gprs-optimal · a · w | flow0.bulk.elapsed_s | median | 30 | 34 | 3 | 13.3333 " \
           "| 10 | missed | S-MIX1 |" in markdown
    # 26 against 20 is exactly 30 % off: met.
    assert "| drops.downlink.queue | median | 20 | 26 | 3 | 30 | 30 | met |" in markdown
    assert "| flow0.bulk.lost | median | 18 |  | 0 |  | 30 | no data |" in markdown
    rows = (tmp_path / "expect.csv").read_text().splitlines()
    assert rows[0] == ",".join(results.EXPECT_COLUMNS)
    assert rows[2] == "gprs-optimal,a,w,drops.downlink.queue,median,20,26,3,30,30,met,"
    verdicts = results.against_study(checked("mean"), results.cell_statistics(experiment, tmp_path))
    assert [v.result for v in verdicts] == ["missed", "met", "no data"]
    assert verdicts[0].describe() == ("gprs-optimal · a · w: mean flow0.bulk.elapsed_s = "
                                      "30 ± 10 %: linkemu 35 (n 3), +16.7 %: missed")
    assert verdicts[2].describe().endswith("flow0.bulk.lost = 18 ± 30 %: no data")


def test_a_different_experiment_file_is_refused(tmp_path):
    results.prepare(tmp_path, "one")
    results.prepare(tmp_path, "one")
    with pytest.raises(results.ResultsError, match="different experiment file"):
        results.prepare(tmp_path, "two")


def connection(syn, fin_ack, down_bytes, port):
    return Connection(client=("10.0.0.2", port), server=("10.0.0.1", 5001), syn_unix=syn,
                      server_fin_unix=fin_ack - 0.5, fin_ack_unix=fin_ack,
                      down=DataStats(bytes=down_bytes, retransmissions=1),
                      up=DataStats(bytes=350, dup_acks=2))


def test_page_response_time_and_ranks():
    scalars = {}
    page = run_metrics._page([connection(10.0, 12.0, 6288, 1), connection(12.1, 14.0, 2096, 2),
                              connection(12.1, 15.0, 2096, 3)], scalars, "flow0.http")
    assert page["response_s"] == pytest.approx(5.0)
    assert page["response_server_fin_s"] == pytest.approx(4.5)
    assert scalars["flow0.http.rank1_throughput_bps"] == pytest.approx(8 * 2096 / 1.9)
    assert scalars["flow0.http.rank2_throughput_bps"] == pytest.approx(8 * 2096 / 2.9)
    run_metrics._tcp_totals({0: [connection(0, 1, 1, 1)] * 2}, scalars)
    assert scalars["tcp.retransmissions"] == 2 and scalars["tcp.dup_acks"] == 4


def test_bulk_counts_the_connection_s_segments_lost_on_the_link():
    scalars = {}
    c = replace(connection(10.0, 40.0, 188640, 1), down=DataStats(lost=18), up=DataStats(lost=1))
    run_metrics._bulk([c], scalars, "flow0.bulk")
    assert scalars["flow0.bulk.lost"] == 19 and scalars["flow0.bulk.elapsed_s"] == 30.0


def test_fairness_over_flows_started_together(experiment):
    scalars = {}
    flows = experiment.workloads["w"]
    run_metrics._fairness(flows, [{"throughput_bps": 3.0, "elapsed_s": 10.0},
                                  {"throughput_bps": 1.0, "elapsed_s": 14.0}], scalars)
    assert scalars == {"fairness.bulk_start_0s.jain": pytest.approx(0.8),
                       "fairness.bulk_start_0s.fastest_elapsed_s": pytest.approx(10.0),
                       "fairness.bulk_start_0s.slowest_elapsed_s": pytest.approx(14.0),
                       "fairness.bulk_start_0s.completion_gap_s": pytest.approx(4.0)}


def test_iperf_report_gives_goodput_rtt_and_stream_fairness(tmp_path):
    report = tmp_path / "flow0.json"
    report.write_text(json.dumps({"end": {
        "sum_received": {"bits_per_second": 9e6}, "sum_sent": {"retransmits": 4},
        "streams": [{"receiver": {"bits_per_second": 6e6}, "sender": {"mean_rtt": 40000}},
                    {"receiver": {"bits_per_second": 3e6}, "sender": {"mean_rtt": 60000}}]}}))
    scalars = {}
    flow = parse_experiment({"name": "x", "profiles": ["gprs-optimal"], "tcp": {"a": {}},
                             "workloads": {"w": [{"app": "iperf", "duration": "1s"}]}},
                            "x.yaml", ROOT / "experiments").workloads["w"][0]
    result = run_metrics._iperf(report, flow, scalars, "flow0.iperf")
    assert scalars["flow0.iperf.throughput_bps"] == 9e6
    assert scalars["flow0.iperf.mean_rtt_ms"] == pytest.approx(50.0)
    assert result["jain"] == pytest.approx(81 / 90)
