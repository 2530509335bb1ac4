"""The router queue sampled by probes: one per direction and class, each
naming its queue in its destination address, each answered by its own."""

import csv

import pytest

from linkemu.drivers.queue_monitor import QueueMonitor, sample
from linkemu.switch.codes import CLASS_IDS, DIRECTION_IDS, queue_index
from linkemu.switch.errors import P4RuntimeError


class ProbedSwitch:
    """Answers each probe as linkemu's pipeline does, with queue q holding
    q + 1 packets of 100 B, after `stray` unrelated packet-ins."""

    address = "fake:0"

    def __init__(self, stray=0, answers=True):
        self.stray = stray
        self.answers = answers
        self.pending = []

    def send_packet(self, frame):
        for n in range(self.stray):
            self.pending.append((0.0, b"stray%d" % n, {"ingress_us": 1}))
        if self.answers:
            queue = int.from_bytes(frame[:6], "big")
            self.pending.append((0.0, frame, {"ingress_us": 5, "waiting": queue + 1,
                                              "waiting_bytes": 100 * (queue + 1)}))

    def next_packet_in(self, timeout):
        return self.pending.pop(0) if self.pending else None

    def take_back(self):
        pass


@pytest.mark.parametrize("stray", [0, 3])
def test_each_queue_is_read_by_its_own_probe(stray):
    queues = sample(ProbedSwitch(stray))
    assert set(queues) == {(d, c) for d in DIRECTION_IDS for c in CLASS_IDS}
    for (direction, cls), (packets, octets) in queues.items():
        assert packets == queue_index(direction, cls) + 1
        assert octets == 100 * packets


def test_a_switch_that_sends_no_probe_back_says_how_to_run_it():
    with pytest.raises(P4RuntimeError, match="fake:0 sent no probe back.*--cpu-port 255"):
        sample(ProbedSwitch(answers=False))


def test_the_monitor_writes_a_row_per_queue_and_sample(tmp_path):
    path = tmp_path / "queue.csv"
    monitor = QueueMonitor(ProbedSwitch(), path, interval=0.01)
    monitor.run(duration_s=0.05)
    rows = list(csv.DictReader(path.open()))
    queues = len(DIRECTION_IDS) * len(CLASS_IDS)
    assert rows and len(rows) % queues == 0
    assert {(r["direction"], r["class"], r["packets"]) for r in rows[:queues]} == {
        (d, c, str(queue_index(d, c) + 1)) for d in DIRECTION_IDS for c in CLASS_IDS}
    assert monitor.started.is_set() and monitor.error is None
