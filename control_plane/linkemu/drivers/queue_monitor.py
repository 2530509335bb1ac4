"""The router queue over time, sampled by probes.

A probe (switch.probe) comes back with the queue its destination names as
it was when the probe entered the switch, in packets and L3 bytes: one
probe per direction and traffic class. A probe's round trip takes well
under a millisecond, so sampling every 10 ms is cheap. The switch answers
its primary client only: the monitor needs that connection.
"""

import csv
import itertools
import threading
import time

from ..switch.codes import CLASS_IDS, DIRECTION_IDS, queue_index
from ..switch.probe import exchange, probe_frame

FIELDS = ("time_unix", "direction", "class", "packets", "bytes")

_numbers = itertools.count()


def sample(switch):
    """{(direction, class): (packets, L3 bytes)} waiting in the router queues now."""
    queue = {}
    for direction in DIRECTION_IDS:
        for cls in CLASS_IDS:
            frame = probe_frame(next(_numbers) % 2**32, queue_index(direction, cls))
            _, _, metadata = exchange(switch, frame)
            queue[direction, cls] = (metadata["waiting"], metadata["waiting_bytes"])
    return queue


class QueueMonitor:
    """Samples the queue every `interval` seconds into a CSV file."""

    def __init__(self, switch, path, interval=0.01):
        self.switch = switch
        self.path = path
        self.interval = interval
        self.started = threading.Event()
        self.stopping = threading.Event()
        self.error = None

    def run(self, duration_s=None):
        """Until `duration_s` passes or stop() is called. A failure ends the
        samples; it is kept in `error` and raised."""
        start = time.monotonic()
        try:
            with open(self.path, "w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(FIELDS)
                self.started.set()
                tick = 0
                while not self.stopping.is_set():
                    if duration_s is not None and time.monotonic() - start >= duration_s:
                        break
                    now = time.time()
                    for (direction, cls), (packets, octets) in sample(self.switch).items():
                        writer.writerow((f"{now:.6f}", direction, cls, packets, octets))
                    tick += 1
                    self.stopping.wait(max(0.0, start + tick * self.interval - time.monotonic()))
        except Exception as err:
            self.error = err
            raise
        finally:
            self.started.set()

    def stop(self):
        self.stopping.set()
