from pathlib import Path

import pytest
import yaml

from linkemu.experiments.experiment import ExperimentError, load_experiment, parse_experiment
from linkemu.experiments.tcp_config import HostTcp

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "profiles"


def experiment(**changes):
    data = {"name": "x", "profiles": ["gprs-optimal"],
            "tcp": {"base": {"initcwnd": 2}},
            "workloads": {"page": [{"app": "http", "page": "s+2s"}]}}
    data.update(changes)
    return data


def parse(data, short=False):
    return parse_experiment(data, "x.yaml", ROOT / "experiments", short)


def problems(data):
    with pytest.raises(ExperimentError) as err:
        parse(data)
    return err.value.problems


@pytest.mark.parametrize("path", sorted((ROOT / "experiments").glob("*.yaml")),
                         ids=lambda p: p.name)
@pytest.mark.parametrize("short", [False, True])
def test_ready_experiments_load_in_both_forms(path, short):
    loaded = load_experiment(path, short=short)
    runs = loaded.runs()
    assert runs and len({r.run_id for r in runs}) == len(runs)
    if short:
        assert len(runs) <= 8


def test_defaults_put_the_server_on_the_fixed_side():
    e = parse(experiment(hosts={"fixed": 2, "mobile": 2}))
    flow = e.workloads["page"][0]
    assert (flow.server, flow.client, flow.parallel, flow.http, flow.inline) == \
        ("h1", "h3", 4, "1.0", "first-data")
    assert e.side("h2") == "fixed" and e.side("h3") == "mobile"


def test_inline_start_is_one_of_two_and_http10_only():
    e = parse(experiment(workloads={"page": [{"app": "http", "page": "s+2s",
                                              "inline": "main-complete"}]}))
    assert e.workloads["page"][0].inline == "main-complete"
    found = problems(experiment(workloads={"page": [
        {"app": "http", "page": "s+2s", "inline": "late"},
        {"app": "http", "page": "s+2s", "http": "1.1", "inline": "main-complete"}]}))
    assert found == [
        "workloads.page[0].inline: 'late': expected one of first-data, main-complete",
        "workloads.page[1].inline: 'main-complete': HTTP/1.0 only; HTTP/1.1 pipelines "
        "the in-line requests"]


def test_runs_cover_the_matrix_with_replications_grouped_by_profile():
    e = parse(experiment(profiles=["gprs-optimal", "1mbit-50ms"], replications=2,
                         tcp={"a": {}, "b": {"sack": False}}))
    runs = e.runs()
    assert len(runs) == 2 * 2 * 2
    assert [r.profile for r in runs] == ["gprs-optimal"] * 4 + ["1mbit-50ms"] * 4
    assert [(r.replication, r.tcp) for r in runs[:4]] == [(0, "a"), (0, "b"), (1, "a"), (1, "b")]


def test_matrix_blocks_join_and_patterns_match():
    e = parse(experiment(profiles=["gprs-optimal", "1mbit-50ms", "10mbit-20ms"],
                         workloads={"page": [{"app": "http", "page": "s+2s"}],
                                    "bulk": [{"app": "bulk", "bytes": "10kB"}]},
                         matrix=[{"profile": ["gprs-*"], "workload": ["page"]},
                                 {"profile": ["*mbit*"], "workload": ["bulk"]}]))
    assert e.cells() == [("gprs-optimal", "base", "page"), ("1mbit-50ms", "base", "bulk"),
                         ("10mbit-20ms", "base", "bulk")]
    assert e.workloads["bulk"][0].bytes == 10_000


def test_short_form_replaces_matrix_and_replications():
    data = experiment(profiles=["gprs-optimal", "1mbit-50ms"], replications=30,
                      short={"replications": 2, "matrix": {"profile": ["1mbit-50ms"]}})
    assert len(parse(data).runs()) == 60
    short = parse(data, short=True)
    assert [(r.profile, r.replication) for r in short.runs()] == [("1mbit-50ms", 0),
                                                                   ("1mbit-50ms", 1)]


def test_no_short_form_is_an_error_when_asked_for():
    with pytest.raises(ExperimentError, match="short: missing"):
        parse(experiment(), short=True)


def test_tcp_overrides_by_side_then_host():
    e = parse(experiment(hosts={"fixed": 2, "mobile": 1}, tcp={"mixed": {
        "initcwnd": 2, "timestamps": True,
        "fixed": {"congestion_control": "cubic"},
        "h2": {"congestion_control": "bbr", "initcwnd": 4}}}))
    config = e.tcp["mixed"]
    assert config["h1"] == HostTcp(initcwnd=2, timestamps=True, congestion_control="cubic")
    assert config["h2"] == HostTcp(initcwnd=4, timestamps=True, congestion_control="bbr")
    assert config["h3"] == HostTcp(initcwnd=2, timestamps=True)


def test_profile_grid_sets_fields_in_both_directions_or_one():
    e = parse(experiment(profiles=[{"grid": {
        "base": "10mbit-20ms", "name": "g-{rate}-{p}",
        "set": {"rate": ["1Mbit", "2Mbit"], "downlink.loss.model": ["bernoulli"],
                "downlink.loss.p": [0, 0.1]}}}]))
    assert list(e.profiles) == ["g-1Mbit-0", "g-1Mbit-0.1", "g-2Mbit-0", "g-2Mbit-0.1"]
    profile = e.profiles["g-2Mbit-0.1"]
    assert profile.downlink.rate_bps == profile.uplink.rate_bps == 2e6
    assert profile.downlink.loss.bad_loss == 0.1 and profile.uplink.loss is None


def test_bad_grid_values_are_reported_with_the_profile_problem():
    found = problems(experiment(profiles=[{"grid": {
        "base": "10mbit-20ms", "name": "g-{rate}", "set": {"rate": ["fast"]}}}]))
    assert any("profiles[0].grid (g-fast)" in p and "downlink.rate" in p for p in found)


@pytest.mark.parametrize("changes, expected", [
    ({"workloads": {1: [{"app": "bulk", "bytes": 10}]}},
     "workloads.1: 1: expected a name as text: quote it"),
    ({"tcp": {True: {}, "x": {}}, "matrix": {"tcp": ["x"]}},
     "tcp.True: True: expected a name as text: quote it"),
    ({"expect": [{"profile": "gprs-optimal", "metric": "x", "study": 10**400,
                  "within": "1" * 400 + "%"}]},
     "expect[0].study: 1000000000000000000000000000...00000000000000000000000000000: too "
     "large a number"),
])
def test_names_yaml_reads_as_numbers_and_huge_numbers_are_problems(changes, expected):
    assert expected in problems(experiment(**changes))


@pytest.mark.parametrize("changes, expected", [
    ({"tcp": {}}, "tcp: empty; define at least one, or the batch has no runs"),
    ({"workloads": {}}, "workloads: empty; define at least one, or the batch has no runs"),
    ({"matrix": []}, "matrix: []: expected a mapping of axes to names, or a list of them; "
                     "an empty list has no runs"),
    ({"short": {"matrix": []}}, "short.matrix: []: expected a mapping"),
    ({"tcp": {f"t{i}": {} for i in range(100)}, "workloads": {
        f"w{i}": [{"app": "bulk", "bytes": 1}] for i in range(100)}, "replications": 11},
     "matrix: up to 110000 runs (cells x replications); at most 100000"),
])
def test_a_batch_has_some_runs_and_not_too_many(changes, expected):
    assert any(p.startswith(expected) for p in problems(experiment(**changes))), \
        problems(experiment(**changes))


@pytest.mark.parametrize("grid, expected", [
    ({"name": "g-{0}"}, "grid.name: 'g-{0}': cannot fill it: IndexError: Replacement index 0 "
                        "out of range for positional args tuple; its fields are rate"),
    ({"name": "g-{rate.x}"}, "grid.name: 'g-{rate.x}': cannot fill it: AttributeError: 'str' "
                             "object has no attribute 'x'; its fields are rate"),
    ({"name": "g-{year}"}, "grid.name: 'g-{year}': cannot fill it: KeyError: 'year'; its "
                           "fields are rate"),
    ({"set": {1: ["1Mbit"]}}, "grid.set.1: 1: expected a field's name as text, e.g. rate or "
                              "downlink.loss.p"),
    ({"set": {"rate.x": [1]}}, "grid.set.rate.x: 1: rate is not a section of the profile"),
    ({"set": {f"f{i}": list(range(10)) for i in range(6)}},
     "grid.set: makes 1000000 profiles; at most 100000"),
    ({"base": "empty.yaml"}, "grid.base: 'empty.yaml': "),
])
def test_bad_grids_are_problems(tmp_path, grid, expected):
    (tmp_path / "empty.yaml").write_text("# nothing yet\n")
    data = {"base": str(PROFILES / "10mbit-20ms.yaml"), "name": "g-{rate}",
            "set": {"rate": ["1Mbit"]}, **grid}
    with pytest.raises(ExperimentError) as err:
        parse_experiment(experiment(profiles=[{"grid": data}]), "x.yaml", tmp_path)
    assert any(p.startswith(f"profiles[0].{expected}") for p in err.value.problems), \
        err.value.problems


def test_every_problem_is_reported_with_its_path():
    found = problems(experiment(
        name="bad name", hosts={"fixed": 0},
        profiles=["gprs-optimal", "nonexistent"],
        tcp={"t": {"initcwnd": 0, "sack": "yes", "quickack": 1, "bogus": 1,
                   "h9": {"ecn": True}}},
        workloads={"w": [{"app": "http", "page": "huge"},
                         {"app": "bulk"},
                         {"app": "udp", "payload": 8, "interval": "0s", "duration": "1s"},
                         {"app": "ftp"},
                         {"app": "bulk", "bytes": 10, "server": "h1", "client": "h1"}]},
        matrix={"workload": ["w", "none"]}, replications=0, extra=1))
    text = "\n".join(found)
    for expected in ("name: 'bad name'", "hosts.fixed: 0", "profiles[1]: ",
                     "tcp.t.initcwnd: 0", "tcp.t.sack: 'yes'",
                     "tcp.t.quickack: 1: expected true or false", "tcp.t.bogus",
                     "tcp.t.h9", "workloads.w[0].page: 'huge'", "workloads.w[1].bytes: missing",
                     "workloads.w[2].payload: 8", "workloads.w[2].interval: '0s'",
                     "workloads.w[3].app: 'ftp'", "workloads.w[4]: h1 and h1 are both",
                     "matrix.workload[1]: 'none'", "replications: 0", "extra: 1"):
        assert expected in text, f"{expected!r} not in\n{text}"


def test_unreadable_and_invalid_yaml(tmp_path):
    with pytest.raises(ExperimentError, match="cannot read"):
        load_experiment(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed")
    with pytest.raises(ExperimentError, match="not valid YAML"):
        load_experiment(bad)


def test_profiles_are_found_relative_to_the_file(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "mine.yaml").write_text((PROFILES / "gprs-optimal.yaml").read_text())
    file = tmp_path / "e.yaml"
    file.write_text(yaml.safe_dump(experiment(profile_dir="p", profiles=["mine"])))
    assert list(load_experiment(file).profiles) == ["gprs-optimal"]


def with_expectations(expect, **changes):
    return experiment(
        profiles=["gprs-optimal", "1mbit-50ms"],
        workloads={"two": [{"app": "bulk", "bytes": 100}, {"app": "bulk", "bytes": 100}]},
        matrix={"profile": ["gprs-optimal"]}, expect=expect, **changes)


def test_expectations_take_the_only_tcp_and_workload_and_median():
    e = parse(with_expectations([
        {"profile": "gprs-optimal", "metric": "flow1.bulk.elapsed_s", "study": 32,
         "within": "10%", "source": "S-MIX1"},
        {"profile": "gprs-optimal", "metric": "drops.downlink.queue", "study": 20,
         "within": "2.5 %", "statistic": "mean"}]))
    first, second = e.expectations
    assert (first.cell, first.statistic, first.within, first.source) == \
        (("gprs-optimal", "base", "two"), "median", 0.1, "S-MIX1")
    assert (second.statistic, second.within) == ("mean", 0.025)
    assert first.describe() == \
        "gprs-optimal · base · two: median flow1.bulk.elapsed_s = 32 ± 10 %"


def test_the_short_form_skips_expectations_of_cells_it_leaves_out():
    data = experiment(profiles=["gprs-optimal", "1mbit-50ms"],
                      short={"matrix": {"profile": ["1mbit-50ms"]}},
                      expect=[{"profile": p, "metric": "t", "study": 1, "within": "10%"}
                              for p in ("gprs-optimal", "1mbit-50ms")])
    assert [x.cell[0] for x in parse(data).expectations] == ["gprs-optimal", "1mbit-50ms"]
    assert [x.cell[0] for x in parse(data, short=True).expectations] == ["1mbit-50ms"]


def test_every_expectation_problem_is_reported_with_its_path():
    found = problems(with_expectations(
        [{"profile": "nonexistent", "metric": "t", "study": 1, "within": "10%"},
         {"profile": "1mbit-50ms", "metric": "t", "study": 1, "within": "10%"},
         {"profile": "gprs-optimal", "metric": "flow2.bulk.elapsed_s", "study": 0,
          "within": 10, "statistic": "p90", "extra": 1},
         {"profile": "gprs-optimal", "metric": "t", "study": 1, "within": "0%"},
         {"profile": "gprs-optimal", "tcp": "base"}],
        tcp={"base": {}, "other": {}}))
    text = "\n".join(found)
    for expected in ("expect[0].profile: 'nonexistent': expected one of gprs-optimal, 1mbit-50ms",
                     "expect[0].tcp: missing", "expect[1].tcp: missing",
                     "expect[2].metric: 'flow2.bulk.elapsed_s': not a flow of the workload; "
                     "its flows: flow0.bulk, flow1.bulk",
                     "expect[2].study: 0: expected a number other than 0",
                     "expect[2].within: 10: expected a positive percentage",
                     "expect[2].statistic: 'p90': expected one of median, mean",
                     "expect[2].extra: 1: unknown field",
                     "expect[3].within: '0%'",
                     "expect[4].metric: missing", "expect[4].study: missing",
                     "expect[4].within: missing"):
        assert expected in text, f"{expected!r} not in\n{text}"
    assert problems(with_expectations([])) == ["expect: []: expected a list of expectations"]
    assert problems(with_expectations([{"profile": "1mbit-50ms", "metric": "t", "study": 1,
                                        "within": "10%"}])) == \
        ["expect[0]: 1mbit-50ms · base · two is not a cell of the matrix"]
