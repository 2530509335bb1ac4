"""The sleep lanes as the controller sets them up: every lane of the P4
program, paced to its period exactly, deep enough for the whole hold, on a
port no host may take."""

import pytest

from linkemu.program import constants as p4
from linkemu.switch.dataplane import FIRST_HOLD_PORT, Port, PortLayout
from linkemu.switch.lanes import LANE_DEPTH, configure_lanes, lanes


class RecordingQueues:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args: self.calls.append((name, *args))


def test_lanes_follow_the_program():
    every = lanes()
    assert len(every) == p4.NUM_LANES == p4.NUM_LANE_PERIODS * p4.LANES_PER_PERIOD
    assert [lane.session for lane in every] == list(
        range(p4.LANE_SESSION_BASE, p4.LANE_SESSION_BASE + p4.NUM_LANES))
    ports = [lane.port for lane in every]
    assert ports == sorted(set(ports)) and ports[0] == FIRST_HOLD_PORT
    # One egress worker (port mod 4) serves them all, the hold ports' worker.
    assert {port % 4 for port in ports} == {p4.HOLD_PORT_BASE % 4}
    assert ports[-1] < p4.HOLD_PORT_BASE
    periods = [lane.period_us for lane in every]
    assert periods == sorted(periods)
    assert periods[0] == p4.LANE_PERIOD_0 and periods[-1] == p4.LANE_PERIOD_11


def test_each_lane_is_paced_to_its_period_exactly():
    # BMv2 paces a queue by whole frames a second.
    for lane in lanes():
        assert lane.rate * lane.period_us == 1_000_000


def test_configure_sets_every_lane():
    queues = RecordingQueues()
    configure_lanes(queues)
    for lane in lanes():
        assert ("set_depth", lane.port, LANE_DEPTH) in queues.calls
        assert ("set_rate", lane.port, lane.rate) in queues.calls
        assert ("add_mirror", lane.session, lane.port) in queues.calls
    assert len(queues.calls) == 3 * p4.NUM_LANES
    assert LANE_DEPTH >= p4.HOLD_CAPACITY


def test_no_host_port_among_the_lanes():
    with pytest.raises(ValueError, match="higher ports hold packets"):
        PortLayout((Port(1),), (Port(lanes()[0].port),))
