import pytest

from linkemu.drivers import state_driver, switch_clock
from linkemu.drivers.state_driver import STATE_LEAD_S, StateDriver
from linkemu.drivers.switch_clock import ProbeSample, SwitchClock
from linkemu.model.link_states import Segment
from linkemu.model.profile import parse_profile
from linkemu.switch import probe
from linkemu.switch.entries.link_errors import link_state_entries
from linkemu.switch.errors import P4RuntimeError, SwitchUnreachable


class FakeClock:
    """Host time for the drivers and the fake switch: it passes only when
    they wait or the switch takes time, so a test neither sleeps nor
    depends on how busy the machine is."""

    def __init__(self):
        self.now = 1_800_000_000.0

    def time(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds

    def wait(self, seconds):
        """A driver's stopping.wait(): nobody stops it; the time passes."""
        self.advance(seconds)
        return False


@pytest.fixture
def clock(monkeypatch):
    clock = FakeClock()
    for module in (state_driver, switch_clock, probe):
        monkeypatch.setattr(module, "time", clock)
    return clock


# The fake switch's probe answer takes this long back; a write this long.
ANSWER_S = 100e-6
WRITE_S = 0.002


class ClockedSwitch:
    """Answers clock probes as linkemu's pipeline does, on a clock that
    started `age_s` ago, after `stray` unrelated packet-ins; records writes
    with their instants. With `primary` False another client gets the
    answers until take_back()."""

    address = "fake:0"

    def __init__(self, clock, age_s=1000.0, answers=True, stray=0, primary=True,
                 breaks_at=None):
        self.clock = clock
        self.start = clock.time() - age_s
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
            self.clock.advance(timeout)
            return None
        ingress_us = round((self.clock.time() - self.start) * 1e6)
        self.clock.advance(ANSWER_S)
        if self.stray:
            self.stray -= 1
            return self.clock.time(), b"\x01" * 64, {"ingress_us": 5}
        return self.clock.time(), self.sent[-1], {"ingress_us": ingress_us}

    def modify(self, entries):
        if len(self.written) + 1 == self.breaks_at:
            self.breaks_at = None
            raise SwitchUnreachable("UNAVAILABLE: gone")
        self.written.append((self.clock.time(), entries))
        self.clock.advance(WRITE_S)

    def recover(self, generation, within_s):
        """Back as a switch started again, on a clock of its own."""
        self.start = self.clock.time() - 5.0
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


def test_measure_skips_other_packets_and_finds_the_start(clock):
    switch = ClockedSwitch(clock, stray=3)
    measured = switch_clock.measure(switch)
    assert len(switch.sent) >= switch_clock.MIN_PROBES and len(set(switch.sent)) == len(switch.sent)
    assert abs(measured.start_unix - switch.start) <= measured.uncertainty_s + 1e-6
    # Each probe entered when it was sent (stamped in whole microseconds) and
    # came back ANSWER_S later.
    assert measured.uncertainty_s <= (ANSWER_S + 1e-6) / 2


def test_measure_probes_on_while_the_answers_are_slow(clock, monkeypatch):
    monkeypatch.setattr(switch_clock, "PROBE_BUDGET_S", 0.2)
    switch = ClockedSwitch(clock)
    quick = switch.next_packet_in

    def slow(timeout):
        # Taken in 10 ms after it was sent: no probe bounds the start closer.
        clock.advance(0.01)
        return quick(timeout)

    switch.next_packet_in = slow
    measured = switch_clock.measure(switch)
    assert measured.uncertainty_s > switch_clock.TARGET_UNCERTAINTY_S
    # Probes until the budget is spent: 0.2 s of 10.1 ms probes.
    assert len(switch.sent) == 20


def test_measure_names_a_switch_that_sends_nothing_back(clock):
    with pytest.raises(P4RuntimeError, match="fake:0 sent no probe back.*--cpu-port 255"):
        switch_clock.measure(ClockedSwitch(clock, answers=False))


def test_measure_takes_the_switch_back_from_another_client(clock):
    switch = ClockedSwitch(clock, primary=False)
    measured = switch_clock.measure(switch)
    assert switch.taken_back == 1
    assert switch.sent[0] == switch.sent[1]   # the lost probe, sent again
    assert abs(measured.start_unix - switch.start) <= measured.uncertainty_s + 1e-6


def test_link_state_entries_carry_the_change_and_its_instant():
    now, = link_state_entries({"downlink": 0.5}, {"downlink": 1.0}, 123_456)
    assert now.params == {"threshold": 32768, "next": 65536, "at": 123_456}
    fixed, = link_state_entries({"uplink": 0.25})
    assert fixed.params == {"threshold": 16384, "next": 16384, "at": 0}


def chain():
    static = {"distribution": "static", "value": "150ms"}
    return parse_profile({"downlink": {}, "uplink": {}, "link_states": {
        "start": {"good": 1}, "states": {
            "good": {"error": 0, "duration": static, "next": {"bad": 1}},
            "bad": {"error": {"downlink": 0.5, "uplink": 0}, "duration": static,
                    "next": {"good": 1}}}}}).states


def test_state_changes_are_written_ahead_with_their_switch_instant(clock):
    switch = ClockedSwitch(clock)
    segments = [Segment("good", 0, 150_000), Segment("bad", 150_000, 300_000),
                Segment("good", 300_000, 310_000), Segment("bad", 310_000, 500_000)]
    driver = StateDriver(switch, chain(), segments)
    driver.stopping.wait = clock.wait
    driver.run()
    assert driver.error is None
    first = driver.applied[0]
    origin = first.applied_unix - first.latency_s
    instants = [origin + s.start_us / 1e6 for s in segments]
    thresholds = [{e.match["dir"]: (e.params["threshold"], e.params["next"]) for e in entries}
                  for _, entries in switch.written]
    assert [t[0] for t in thresholds] == [(0, 0), (0, 32768), (32768, 0), (0, 32768)]
    assert [t[1] for t in thresholds] == [(0, 0)] * 4
    for (_, entries), instant in zip(switch.written[1:], instants[1:]):
        assert {e.params["at"] for e in entries} == {driver.clock.switch_us(instant)}
    # A long segment's successor is written a lead ahead of its instant; the
    # one after the 10 ms segment only once that segment has surely begun.
    written = [at for at, _ in switch.written[1:]]
    assert written == pytest.approx([instants[1] - STATE_LEAD_S, instants[2] - STATE_LEAD_S,
                                     instants[2] + driver.clock.uncertainty_s], abs=1e-9)
    assert [a.latency_s for a in driver.applied] == [0, 0, 0, 0]
    assert driver.latency_summary()["clock_uncertainty_ms"] == driver.clock.uncertainty_s * 1e3


def test_a_switch_without_probe_answers_fails_the_walk(clock):
    driver = StateDriver(ClockedSwitch(clock, answers=False), chain(),
                         [Segment("good", 0, 150_000)])
    with pytest.raises(P4RuntimeError):
        driver.run()
    assert driver.started.is_set() and isinstance(driver.error, P4RuntimeError)
    assert driver.applied == []


def test_a_state_driver_that_lost_its_switch_puts_its_state_back_and_goes_on(clock):
    switch = ClockedSwitch(clock, breaks_at=3)
    segments = [Segment("good", 0, 150_000), Segment("bad", 150_000, 300_000),
                Segment("good", 300_000, 450_000)]
    driver = StateDriver(switch, chain(), segments)
    driver.stopping.wait = clock.wait
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
