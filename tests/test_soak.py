"""The soak's report, from hand-made logs and counters (no switch needed)."""

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent / "bench"))
import soak  # noqa: E402
from linkemu.drivers.event_log import FLAGS, Event  # noqa: E402
from linkemu.program import constants as p4  # noqa: E402
from linkemu.switch.codes import DIRECTION_IDS  # noqa: E402


def event(arrival_s, error_ms, direction="downlink", outcome="released", flags=0):
    arrival = round(arrival_s * 1e6)
    return Event(direction, outcome, 0, 100, arrival, arrival, arrival + 300_000,
                 arrival + 300_000 + round(error_ms * 1e3), 0, flags)


def counters(entered, left, dropped):
    cells = {name: {d: (0, 0) for d in DIRECTION_IDS} for name in p4.COUNTERS}
    cells["link_in"]["downlink"] = (entered, 0)
    cells["link_out"]["downlink"] = (left, 0)
    cells["drop_link_error"]["downlink"] = (dropped, 0)
    return cells


def test_the_report_compares_the_first_and_last_windows_and_accounts_for_every_frame():
    start_us, end_us = 100_000_000, 700_000_000     # ten minutes on the switch's clock
    events = ([event(100 + i, 0.5) for i in range(60)] +             # first 5 min
              [event(100 + i, 900, flags=FLAGS["held"]) for i in range(5)] +  # behind ARQ
              [event(650 + i / 10, 2.0) for i in range(100)] +       # last 5 min
              [event(400, 0, outcome="drop_link_error")])
    applied = [(t, 0.001 if t < 300 else 0.004) for t in range(0, 600, 10)]
    memory = [(0, 1000, 5000), (300, 1040, 5100), (600, 1080, 5200)]
    report = soak.analyse(events, counters(166, 165, 1), applied, memory, start_us, end_us)
    first, last = report["release_error_ms"]["first"], report["release_error_ms"]["last"]
    assert (first["count"], first["p99"]) == (60, 0.5)
    assert (last["count"], last["p99"]) == (100, 2.0)
    latency = report["state_change_latency_ms"]
    assert latency["first"]["max"] == 1.0 and latency["last"]["p50"] == 4.0
    assert report["memory_kb"]["growth"] == {"switch": 0.08, "controller": 0.04}
    assert report["memory_kb"]["flat"]
    assert report["frames"]["downlink"] == {"entered": 166, "unaccounted": 0,
                                            "log_minus_counters": 0}
    assert report["passed"]


def test_a_frame_the_log_or_the_counters_lost_fails_the_soak():
    events = [event(1, 0.5), event(2, 0.5)]
    report = soak.analyse(events, counters(3, 2, 0), [], [(0, 1, 1), (1, 2, 1)], 0, 10_000_000)
    assert report["frames"]["downlink"] == {"entered": 3, "unaccounted": 1,
                                            "log_minus_counters": -1}
    assert not report["passed"]
    assert not report["memory_kb"]["flat"]


def test_traffic_that_stopped_fails_the_soak():
    # 60 frames a window at first, 12 in the last: a flow stalled on the way.
    start_us, end_us = 0, 600_000_000
    events = ([event(i * 5, 0.5) for i in range(60)] +
              [event(300 + i * 25, 0.5) for i in range(12)])
    report = soak.analyse(events, counters(72, 72, 0), [], [(0, 1, 1), (600, 1, 1)],
                          start_us, end_us)
    assert report["released_per_window"]["downlink"] == {"first": 60, "last": 12}
    assert not report["flowing"]
    assert not report["passed"]
