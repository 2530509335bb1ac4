import itertools
import random

import pytest

from linkemu.drivers.state_driver import RateDriver, rate_changes
from linkemu.model.profile import ProfileError, parse_profile
from linkemu.model.rate_schedule import RateSegment, RateTrace, read_trace_file
from linkemu.program import constants as p4
from linkemu.switch.codes import byte_cost_q, queue_index
from linkemu.switch.entries.link_params import link_params_entries, link_params_entry
from linkemu.switch.entries.queue_params import queue_params_entries
from linkemu.switch.errors import SwitchUnreachable


def problems_of(data, base_dir="."):
    with pytest.raises(ProfileError) as info:
        parse_profile(data, base_dir=base_dir)
    return info.value.problems


def steps_profile(changes, **extra):
    return parse_profile({"downlink": {"rate": "10Mbit", "rate_changes": changes, **extra},
                          "uplink": {}})


def test_steps_and_outages_in_time_order():
    profile = steps_profile([{"at": "5s", "rate": "2Mbit"}, {"at": "8s", "outage": "1s"},
                             {"at": "12s", "rate": "20Mbit"}])
    schedule = profile.downlink.rate_schedule
    assert list(schedule.segments(profile.downlink.rate_bps)) == [
        RateSegment(0, 10e6), RateSegment(5_000_000, 2e6),
        RateSegment(8_000_000, 2e6, down=True), RateSegment(9_000_000, 2e6),
        RateSegment(12_000_000, 20e6)]


def test_rate_changes_are_checked_with_their_paths():
    problems = problems_of({"downlink": {"rate": "1Mbit", "rate_changes": [
        {"at": "2s", "rate": "2Mbit"}, {"at": "1s", "rate": "3Mbit"},
        {"at": "3s", "rate": "2Mbit", "outage": "1s"}, {"at": "4s", "outage": "0s"},
        {"at": "5s", "rate": "fast"}, {"at": "-1s", "rate": "1Mbit"}]}, "uplink": {}})
    text = "\n".join(problems)
    assert "downlink.rate_changes[1].at: 1s is not after the change before it" in text
    assert "downlink.rate_changes[2]: give either rate or outage" in text
    assert "downlink.rate_changes[3].outage: '0s': must be longer than 0s" in text
    assert "downlink.rate_changes[4].rate: 'fast'" in text
    assert "downlink.rate_changes[5].at" in text
    assert problems_of({"downlink": {"rate_changes": []}, "uplink": {}}) == [
        "downlink.rate_changes: []: expected a list of changes, e.g. "
        "[{at: 10s, rate: 2Mbit}, {at: 20s, outage: 1s}]"]


def test_a_change_inside_an_outage_is_refused():
    problems = problems_of({"downlink": {"rate": "1Mbit", "rate_changes": [
        {"at": "1s", "outage": "2s"}, {"at": "2s", "rate": "2Mbit"}]}, "uplink": {}})
    assert any("rate_changes[1].at: 2s is not after" in p for p in problems)


def brute_force_before(trace, ms):
    laps = ms // trace.period_ms + 2
    return sum(1 for k in range(laps) for t in trace.opportunities_ms
               if t + k * trace.period_ms < ms)


def test_opportunities_repeat_after_the_last_line():
    rng = random.Random(7)
    for _ in range(50):
        times = tuple(sorted(rng.randrange(0, 40) for _ in range(rng.randrange(1, 30))))
        if times[-1] == 0:
            continue
        trace = RateTrace("t", times, 5)
        for ms in range(0, 4 * times[-1] + 3):
            assert trace.opportunities_before(ms) == brute_force_before(trace, ms), (times, ms)


def test_trace_windows_give_rates_and_outages():
    # 3 opportunities in [0, 10) ms, none in [10, 20), 1 in [20, 30); period 30 ms.
    trace = RateTrace("t", (1, 2, 2, 30), 10)
    assert trace.window_rate_bps(0) == 3 * 1500 * 8 / 0.010
    assert trace.window_rate_bps(1) == 0
    # 30 falls in the next lap's first window: [30, 40) holds it and 31, 32, 32.
    assert trace.window_rate_bps(2) == 0
    assert trace.window_rate_bps(3) == 4 * 1500 * 8 / 0.010
    assert trace.mean_rate_bps() == 4 * 1500 * 8 / 0.030
    segments = list(itertools.islice(trace.segments(), 4))
    assert segments == [RateSegment(0, 3.6e6), RateSegment(10_000, None, down=True),
                        RateSegment(30_000, 4.8e6), RateSegment(40_000, None, down=True)]


def test_the_changes_of_a_trace_of_one_rate_end():
    """One opportunity a millisecond: the first 5 ms window has 4 (none at
    0 ms), every later one 5; a search for the next change would never end."""
    assert list(RateTrace("t", (1,), 5).segments()) == [RateSegment(0, 9.6e6),
                                                        RateSegment(5000, 12e6)]
    assert list(RateTrace("t", (2, 4, 6), 6).segments()) == [RateSegment(0, 4e6),
                                                             RateSegment(6000, 6e6)]


@pytest.mark.parametrize("text, message", [
    ("", "empty; a trace needs at least one opportunity"),
    ("1\n2\nx\n", "line 3: 'x' is not a whole number of milliseconds"),
    ("1\n5\n4\n", "line 3: 4 comes after 5; a trace's milliseconds never decrease"),
    ("-3\n", "line 1: -3 is out of range; allowed 0 to 31536000000 ms"),
    ("1\n" + "1" * 400 + "\n", "line 2: 1111111111111111111111111111"),
    ("0\n0\n", "the last opportunity is at 0 ms"),
    ("1\n" + "x" * 1_000_000 + "\n", "line 2: 'xxxxxxxx"),
])
def test_malformed_traces_say_where(tmp_path, text, message):
    path = tmp_path / "bad.trace"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_trace_file(path)
    problems = problems_of({"downlink": {"rate_trace": {"file": "bad.trace"}}, "uplink": {}},
                           base_dir=tmp_path)
    assert problems[0].startswith("downlink.rate_trace.file: 'bad.trace': ")
    assert message in problems[0] and len(problems[0]) < 300


@pytest.mark.parametrize("text, mean", [("1\n100000\n", "240bit"),
                                         ("1\n" * 10000, "120Gbit")])
def test_a_trace_whose_mean_rate_is_out_of_range_is_refused(tmp_path, text, mean):
    (tmp_path / "t").write_text(text)
    (problem,) = problems_of({"downlink": {"rate_trace": {"file": "t"}}, "uplink": {}},
                             base_dir=tmp_path)
    assert problem == (f"downlink.rate_trace.file: 't': its mean rate, {mean}, is out of "
                       "range; allowed 1kbit to 10Gbit")


def test_trace_profile_takes_its_rate_from_the_trace(tmp_path):
    (tmp_path / "lte.down").write_text("\n".join(str(ms) for ms in range(1, 101)) + "\n")
    profile = parse_profile({"downlink": {"rate_trace": {"file": "lte.down", "window": "20ms"}},
                             "uplink": {}}, base_dir=tmp_path)
    assert profile.downlink.rate_bps == pytest.approx(12e6)   # one 1500 B per ms
    assert profile.downlink.rate_schedule.window_ms == 20
    assert "rate trace lte.down" in profile.downlink.describe()
    for window, message in (("3ms", "too short"), ("10.5ms", "whole milliseconds")):
        problems = problems_of({"downlink": {"rate_trace": {"file": "lte.down",
                                                            "window": window}},
                                "uplink": {}}, base_dir=tmp_path)
        assert problems[0].startswith("downlink.rate_trace.window") and message in problems[0]
    problems = problems_of({"downlink": {"rate": "1Mbit", "rate_trace": {"file": "lte.down"},
                                         "rate_changes": [{"at": "1s", "rate": "1Mbit"}]},
                            "uplink": {}}, base_dir=tmp_path)
    assert "downlink.rate: the rate_trace gives the rate; leave rate out" in problems
    assert ("downlink.rate_changes: give rate_changes or rate_trace, not both" in problems)
    (problem,) = problems_of({"downlink": {"rate_trace": {"file": "missing"}}, "uplink": {}},
                             base_dir=tmp_path)
    assert problem == (f"downlink.rate_trace.file: 'missing': {tmp_path / 'missing'}: "
                       "cannot read: No such file or directory")
    (problem,) = problems_of({"downlink": {"rate_trace": {"file": "/dev/zero"}}, "uplink": {}})
    assert problem.endswith("/dev/zero: cannot read: not a regular file")


def test_a_varying_rate_excludes_priority_and_the_sojourn_ramp():
    problems = problems_of({"downlink": {
        "rate": "1Mbit", "rate_changes": [{"at": "1s", "rate": "2Mbit"}],
        "priority": {"match": [{"protocol": "udp"}]}, "sojourn_ramp": {"target": "5ms"}},
        "uplink": {}})
    assert any(p.startswith("downlink.priority: cannot be combined with a rate that changes")
               for p in problems)
    assert any(p.startswith("downlink.sojourn_ramp: cannot be combined") for p in problems)


def test_a_varying_rate_defers_best_effort():
    profile = steps_profile([{"at": "1s", "outage": "1s"}])
    down, up = link_params_entries(profile)
    assert down.params["features"] == p4.FEATURE_DEFERRED and down.params["down"] == 0
    assert up.params["features"] == 0
    queues = {e.match["queue"]: e.params for e in queue_params_entries(profile)}
    assert queues[queue_index("downlink", "best_effort")]["deferred"] == 1
    assert queues[queue_index("uplink", "best_effort")]["deferred"] == 0
    outage = link_params_entry(profile, "downlink", 10e6, down=True)
    assert outage.params == {**down.params, "down": 1}


class RecordingSwitch:
    """Records writes; the connection breaks at write number `breaks_at`."""

    def __init__(self, breaks_at=None):
        self.written = []
        self.writes = 0
        self.breaks_at = breaks_at
        self.generation = 0

    def modify(self, entries):
        self.writes += 1
        if self.writes == self.breaks_at:
            raise SwitchUnreachable("UNAVAILABLE: gone")
        self.written.extend(entries)

    def recover(self, generation, within_s):
        self.generation += 1


def test_rate_driver_writes_both_directions_in_time_order(tmp_path):
    profile = parse_profile({
        "downlink": {"rate": "10Mbit", "rate_changes": [{"at": "20ms", "rate": "5Mbit"},
                                                        {"at": "40ms", "outage": "20ms"}]},
        "uplink": {"rate": "1Mbit", "rate_changes": [{"at": "30ms", "rate": "2Mbit"}]}})
    order = [(name, s.start_us) for name, s in rate_changes(profile)]
    assert order == [("downlink", 0), ("uplink", 0), ("downlink", 20_000), ("uplink", 30_000),
                     ("downlink", 40_000), ("downlink", 60_000)]
    switch = RecordingSwitch()
    record = tmp_path / "rates.csv"
    driver = RateDriver(switch, profile, record)
    driver.run()
    assert [(e.match["dir"], e.params["byte_cost_q"], e.params["down"])
            for e in switch.written] == [
        (0, byte_cost_q(10e6), 0), (1, byte_cost_q(1e6), 0),
        (0, byte_cost_q(5e6), 0), (1, byte_cost_q(2e6), 0),
        (0, byte_cost_q(5e6), 1), (0, byte_cost_q(5e6), 0)]
    lines = record.read_text().splitlines()
    assert lines[0] == "start_us,direction,rate_bps,down,applied_unix,latency_ms"
    assert lines[5].startswith("40000,downlink,5000000,1,")
    assert driver.latency_summary()["changes"] == 6


def test_rate_driver_puts_its_rates_back_on_a_switch_it_lost(tmp_path):
    profile = parse_profile({
        "downlink": {"rate": "10Mbit", "rate_changes": [{"at": "20ms", "rate": "5Mbit"}]},
        "uplink": {"rate": "1Mbit", "rate_changes": [{"at": "30ms", "rate": "2Mbit"}]}})
    switch = RecordingSwitch(breaks_at=3)
    driver = RateDriver(switch, profile)
    driver.run()
    assert switch.generation == 1 and len(driver.outages) == 1
    assert [(e.match["dir"], e.params["byte_cost_q"]) for e in switch.written] == [
        (0, byte_cost_q(10e6)), (1, byte_cost_q(1e6)),
        # back: both rates in force again, then the change that failed
        (0, byte_cost_q(10e6)), (1, byte_cost_q(1e6)),
        (0, byte_cost_q(5e6)), (1, byte_cost_q(2e6))]
    assert driver.latency_summary()["changes"] == 4
