"""A run's wait for the switch to empty, on counters made by hand."""

import pytest

from linkemu import dataplane, runner


def test_frames_that_never_leave_are_counted_and_given_their_likely_cause(monkeypatch):
    counters = {name: {d: (0, 0) for d in dataplane.DIRECTION_IDS} for name in dataplane.COUNTERS}
    counters["link_in"]["downlink"] = (7, 0)
    counters["link_out"]["downlink"] = (4, 0)
    monkeypatch.setattr(dataplane, "read_counters", lambda switch: counters)
    monkeypatch.setattr(runner, "IDLE_TIMEOUT_S", 0.0)
    run = runner.RunOnce.__new__(runner.RunOnce)
    run.switch = None
    with pytest.raises(runner.RunError, match=r"after 0 s \(downlink 3\): lost inside BMv2"):
        run._wait_idle()
    counters["link_out"]["downlink"] = (7, 0)
    run._wait_idle()   # nothing inside: returns at once
