"""The counters read per direction and per class, held packets' cells
folded in, and the frames inside the link from a reading."""

from linkemu.program import constants as p4
from linkemu.switch.codes import DIRECTION_IDS
from linkemu.switch.counters import (HELD_CELLS, QUEUE_COUNTERS, counter_cells, in_flight,
                                     read_counters)


class FakeCounterSwitch:
    """Answers read_counter with one cell per index, packets = index + 1, and
    held packets' cells (HELD_CELLS) with no packets."""

    def read_counter(self, name):
        from types import SimpleNamespace
        size = 4 if name in QUEUE_COUNTERS else 2
        cells = [SimpleNamespace(index=i, packets=i + 1, bytes=10 * (i + 1)) for i in range(size)]
        if name in HELD_CELLS:
            cells += [SimpleNamespace(index=size + i, packets=0, bytes=0) for i in range(size)]
        return cells


def test_held_packets_cells_are_folded_in_without_the_state_they_carry():
    from types import SimpleNamespace

    class Switch:
        def read_counter(self, name):
            return [SimpleNamespace(index=0, packets=2, bytes=200),   # downlink, fresh
                    SimpleNamespace(index=1, packets=1, bytes=100),
                    SimpleNamespace(index=2, packets=3, bytes=300 + 3 * p4.LINK_STATE_BYTES),
                    SimpleNamespace(index=3, packets=0, bytes=0)]

    assert counter_cells(Switch(), "link_out") == {0: (5, 500), 1: (1, 100)}
    assert read_counters(Switch())["link_out"] == {"downlink": (5, 500),
                                                   "uplink": (1, 100)}


def test_a_counter_of_held_packets_only_loses_the_state_they_carry():
    from types import SimpleNamespace

    class Switch:
        def read_counter(self, name):
            return [SimpleNamespace(index=0, packets=2, bytes=200 + 2 * p4.LINK_STATE_BYTES),
                    SimpleNamespace(index=1, packets=0, bytes=0)]

    assert counter_cells(Switch(), "drop_codel") == {0: (2, 200), 1: (0, 0)}


def test_queue_counters_are_read_per_class_and_summed_per_direction():
    counters = read_counters(FakeCounterSwitch())
    assert counters["link_in"] == {"downlink": (1, 10), "uplink": (2, 20)}
    # A direction's best effort has its direction's index, priority 2 more.
    assert counters["drop_queue"] == {
        "downlink/best_effort": (1, 10), "downlink/priority": (3, 30), "downlink": (4, 40),
        "uplink/best_effort": (2, 20), "uplink/priority": (4, 40), "uplink": (6, 60)}


def test_in_flight_counts_each_frame_once():
    counters = {name: {"downlink": (0, 0)} for name in p4.COUNTERS}
    counters["link_in"]["downlink"] = (10, 0)
    counters["link_out"]["downlink"] = (5, 0)
    counters["drop_aqm"]["downlink"] = (3, 0)
    counters["drop_aqm_ect"]["downlink"] = (3, 0)    # a part of drop_aqm
    counters["drop_malformed"]["downlink"] = (4, 0)  # never entered the link
    assert in_flight(counters, "downlink") == 2


def test_a_duplicate_leaves_twice_without_going_missing():
    counters = {name: {"downlink": (0, 0)} for name in p4.COUNTERS}
    counters["link_in"]["downlink"] = (10, 0)
    counters["duplicated"]["downlink"] = (2, 0)
    counters["link_out"]["downlink"] = (11, 0)
    counters["drop_queue"]["downlink"] = (1, 0)
    assert in_flight(counters, "downlink") == 0


def test_a_reading_taken_while_frames_flow_never_shows_too_few_inside():
    """Every read lets one frame in and out again at once: nothing is ever
    inside, and a reading must not show less than that."""
    from types import SimpleNamespace

    class FlowingSwitch:
        def __init__(self):
            self.passed = 0

        def read_counter(self, name):
            self.passed += 1
            packets = self.passed if name in ("link_in", "drop_queue", "queue_enter") else 0
            cells = [SimpleNamespace(index=i, packets=packets, bytes=100 * packets)
                     for i in range(4)]
            if name in HELD_CELLS:
                cells += [SimpleNamespace(index=4 + i, packets=0, bytes=0) for i in range(4)]
            return cells

    counters = read_counters(FlowingSwitch())
    assert list(counters) == list(p4.COUNTERS)
    assert all(in_flight(counters, d) >= 0 for d in DIRECTION_IDS)
