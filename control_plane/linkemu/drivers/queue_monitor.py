"""The router queue over time, sampled from the switch's counters.

The data plane counts every frame entering a router queue (queue_enter)
and leaving it for the link (queue_leave), per direction and traffic class;
their difference at a sampling instant is the queue, in packets and L3
bytes. Reading two counters over P4Runtime takes about a millisecond, so
sampling every 10 ms is cheap.
"""

import csv
import threading
import time

from ..program import constants as p4
from ..switch.codes import CLASS_IDS, DIRECTION_IDS, queue_index
from ..switch.counters import counter_cells

FIELDS = ("time_unix", "direction", "class", "packets", "bytes")


def sample(switch):
    """{(direction, class): (packets, L3 bytes)} waiting in the router queues now."""
    leave = counter_cells(switch, "queue_leave")  # first: see read_counters
    enter = counter_cells(switch, "queue_enter")
    queue = {}
    for direction in DIRECTION_IDS:
        for cls in CLASS_IDS:
            index = queue_index(direction, cls)
            packets = enter[index][0] - leave[index][0]
            frame_bytes = enter[index][1] - leave[index][1]
            queue[direction, cls] = (packets, frame_bytes - p4.ETH_HEADER_BYTES * packets)
    return queue


class QueueMonitor:
    """Samples the queue every `interval` seconds into a CSV file."""

    def __init__(self, switch, path, interval=0.01):
        self.switch = switch
        self.path = path
        self.interval = interval
        self.stopping = threading.Event()

    def run(self, duration_s=None):
        start = time.monotonic()
        with open(self.path, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(FIELDS)
            tick = 0
            while not self.stopping.is_set():
                if duration_s is not None and time.monotonic() - start >= duration_s:
                    break
                now = time.time()
                for (direction, cls), (packets, octets) in sample(self.switch).items():
                    writer.writerow((f"{now:.6f}", direction, cls, packets, octets))
                tick += 1
                self.stopping.wait(max(0.0, start + tick * self.interval - time.monotonic()))

    def stop(self):
        self.stopping.set()
