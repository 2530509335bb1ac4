"""Packet captures with kernel timestamps, by tcpdump, stopped by its PID."""

import signal
import subprocess
import time
from pathlib import Path

from ..drivers.fidelity import read_frames


class Capture:
    """tcpdump on one interface and direction ('in' or 'out') into `path`.

    Run it in the namespace of the interface: pass `popen=host.popen` for a
    Mininet host.
    """

    def __init__(self, interface, direction, path, snaplen=128, popen=subprocess.Popen):
        self.command = ["tcpdump", "-i", interface, "-Q", direction, "-s", str(snaplen),
                        "-B", "16384", "--immediate-mode", "-w", str(path)]
        self.path = Path(path)
        self.popen = popen
        self.process = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self, settle=0.5):
        self.process = self.popen(self.command, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        time.sleep(settle)  # tcpdump attaches its filter after it starts
        if self.process.poll() is not None:
            raise RuntimeError(f"tcpdump failed: {' '.join(self.command)}")

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait(timeout=10)
        self.process = None

    def frames(self):
        return read_frames(self.path)
