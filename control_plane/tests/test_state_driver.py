import time

import pytest

from linkemu.drivers import switch_clock
from linkemu.drivers.state_driver import STATE_LEAD_S, StateDriver
from linkemu.drivers.switch_clock import ProbeSample, SwitchClock
from linkemu.model.link_states import Segment
from linkemu.model.profile import parse_profile
from linkemu.switch import dataplane
from linkemu.switch.p4runtime import P4RuntimeError, SwitchUnreachable


class ClockedSwitch:
    """Answers clock probes as linkemu's pipeline does, on a clock that
    started `age_s` ago, after `stray` unrelated packet-ins; records writes.
    With `primary` False another client gets the answers until take_back()."""

    address = "fake:0"

    def __init__(self, age_s=1000.0, answers=True, stray=0, primary=True, breaks_at=None):
        self.start = time.time() - age_s
        self.answers = answers
        self.stray = stray
        self.primary = primary
        self.taken_back = 0
        self.sent = []
        self.written = []
        self.breaks_at = breaks_at   # the connection breaks at this write
        self.generation = 0

    def take_back(self):
        self.taken_back += 1
        self.primary = True

    def send_packet(self, payload):
        self.sent.append(payload)

    def next_packet_in(self, timeout):
        if not (self.answers and self.primary):
            return None
        now = time.time()
        if self.stray:
            self.stray -= 1
            return now, b"\x01" * 64, {"ingress_us": 5}
        return now, self.sent[-1], {"ingress_us": round((now - self.start) * 1e6)}

    def modify(self, entries):
        if len(self.written) + 1 == self.breaks_at:
            self.breaks_at = None
            raise SwitchUnreachable("UNAVAILABLE: gone")
        self.written.append((time.time(), entries))

    def recover(self, generation, within_s):
        """Back as a switch started again, on a clock of its own."""
        self.start = time.time() - 5.0
        self.generation += 1


def test_clock_where_every_probes_bounds_meet():
    start = 1000.0
    samples = [ProbeSample(sent=start + 2.0, back=start + 2.004, stamp_us=2_001_000),
               ProbeSample(sent=start + 3.0, back=start + 3.0006, stamp_us=3_000_500),
               ProbeSample(sent=start + 4.0, back=start + 4.002, stamp_us=4_000_100)]
    clock = SwitchClock.unknown()
    for sample in samples:
        clock = clock.narrowed(sample)
    # Bounds: [-1.001, +3] ms, [-0.501, +0.1] ms and [-0.101, +1.9] ms about the start.
    assert clock.start_unix == pytest.approx(start + (0.0001 - 0.000101) / 2)
    assert clock.uncertainty_s == pytest.approx((0.0001 + 0.000101) / 2)
    assert clock.switch_us(clock.start_unix + 1.5) == 1_500_000
    assert clock.switch_us(clock.start_unix - 1) == 0


def test_measure_skips_other_packets_and_finds_the_start():
    switch = ClockedSwitch(stray=3)
    clock = switch_clock.measure(switch)
    assert len(switch.sent) >= switch_clock.MIN_PROBES and len(set(switch.sent)) == len(switch.sent)
    assert abs(clock.start_unix - switch.start) <= clock.uncertainty_s + 1e-6
    assert clock.uncertainty_s < 0.01


def test_measure_probes_on_while_the_answers_are_slow(monkeypatch):
    monkeypatch.setattr(switch_clock, "PROBE_BUDGET_S", 0.2)
    switch = ClockedSwitch()
    slow = switch.next_packet_in

    def lagging(timeout):
        time.sleep(0.01)
        return slow(timeout)

    switch.next_packet_in = lagging
    clock = switch_clock.measure(switch)
    assert clock.uncertainty_s > switch_clock.TARGET_UNCERTAINTY_S
    assert len(switch.sent) > switch_clock.MIN_PROBES


def test_measure_names_a_switch_that_sends_nothing_back(monkeypatch):
    monkeypatch.setattr(switch_clock, "PROBE_TIMEOUT_S", 0.01)
    with pytest.raises(P4RuntimeError, match="fake:0 sent no clock probe back.*--cpu-port 255"):
        switch_clock.measure(ClockedSwitch(answers=False))


def test_measure_takes_the_switch_back_from_another_client(monkeypatch):
    monkeypatch.setattr(switch_clock, "PROBE_TIMEOUT_S", 0.01)
    switch = ClockedSwitch(primary=False)
    clock = switch_clock.measure(switch)
    assert switch.taken_back == 1
    assert switch.sent[0] == switch.sent[1]   # the lost probe, sent again
    assert abs(clock.start_unix - switch.start) <= clock.uncertainty_s + 1e-6


def test_link_state_entries_carry_the_change_and_its_instant():
    now, = dataplane.link_state_entries({"downlink": 0.5}, {"downlink": 1.0}, 123_456)
    assert now.params == {"threshold": 32768, "next": 65536, "at": 123_456}
    fixed, = dataplane.link_state_entries({"uplink": 0.25})
    assert fixed.params == {"threshold": 16384, "next": 16384, "at": 0}


def chain():
    static = {"distribution": "static", "value": "150ms"}
    return parse_profile({"downlink": {}, "uplink": {}, "link_states": {
        "start": {"good": 1}, "states": {
            "good": {"error": 0, "duration": static, "next": {"bad": 1}},
            "bad": {"error": {"downlink": 0.5, "uplink": 0}, "duration": static,
                    "next": {"good": 1}}}}}).states


def test_state_changes_are_written_ahead_with_their_switch_instant():
    switch = ClockedSwitch()
    segments = [Segment("good", 0, 150_000), Segment("bad", 150_000, 300_000),
                Segment("good", 300_000, 310_000), Segment("bad", 310_000, 500_000)]
    driver = StateDriver(switch, chain(), segments)
    driver.run()
    assert driver.error is None
    first = driver.applied[0]
    origin = first.applied_unix - first.latency_s
    instants = [origin + s.start_us / 1e6 for s in segments]
    thresholds = [{e.match["dir"]: (e.params["threshold"], e.params["next"]) for e in entries}
                  for _, entries in switch.written]
    assert [t[0] for t in thresholds] == [(0, 0), (0, 32768), (32768, 0), (0, 32768)]
    assert [t[1] for t in thresholds] == [(0, 0)] * 4
    for (written, entries), instant, previous in zip(switch.written[1:], instants[1:], instants):
        assert {e.params["at"] for e in entries} == {driver.clock.switch_us(instant)}
        # Never before the previous change has taken over.
        assert written >= previous + driver.clock.uncertainty_s - 1e-3
    # A long segment's successor is written a lead ahead of its instant.
    assert switch.written[1][0] <= instants[1] - STATE_LEAD_S / 2
    assert driver.latency_summary()["clock_uncertainty_ms"] == driver.clock.uncertainty_s * 1e3


def test_a_switch_without_probe_answers_fails_the_walk(monkeypatch):
    monkeypatch.setattr(switch_clock, "PROBE_TIMEOUT_S", 0.01)
    driver = StateDriver(ClockedSwitch(answers=False), chain(), [Segment("good", 0, 150_000)])
    with pytest.raises(P4RuntimeError):
        driver.run()
    assert driver.started.is_set() and isinstance(driver.error, P4RuntimeError)
    assert driver.applied == []


def test_a_state_driver_that_lost_its_switch_puts_its_state_back_and_goes_on():
    switch = ClockedSwitch(breaks_at=3)
    segments = [Segment("good", 0, 150_000), Segment("bad", 150_000, 300_000),
                Segment("good", 300_000, 450_000)]
    driver = StateDriver(switch, chain(), segments)
    driver.run()
    assert driver.error is None and len(driver.outages) == 1
    assert abs(driver.clock.start_unix - switch.start) <= driver.clock.uncertainty_s + 1e-6
    thresholds = [{e.match["dir"]: (e.params["threshold"], e.params["next"], e.params["at"])
                   for e in entries} for _, entries in switch.written]
    # good, good -> bad, then back: bad in force at once, and bad -> good.
    assert [t[0][:2] for t in thresholds] == [(0, 0), (0, 32768), (32768, 32768), (32768, 0)]
    assert thresholds[2][0][2] == 0
    assert thresholds[3][0][2] == driver.clock.switch_us(
        driver.applied[0].applied_unix - driver.applied[0].latency_s + 0.3)
