"""One linkemu network at a time: a second refuses, naming the first, and
touches nothing of it."""

import os
import subprocess
import sys

from linkemu.testbed import network_lock


def test_a_second_network_is_refused_while_the_first_is_up(tmp_path, monkeypatch):
    lock_path = tmp_path / "lock"
    monkeypatch.setattr(network_lock, "LOCK_PATH", lock_path)
    with network_lock.only_network():
        assert lock_path.read_text() == f"pid {os.getpid()}\n"
        # Another process, as a second launcher would be.
        second = subprocess.run(
            [sys.executable, "-c",
             "import pathlib, linkemu.testbed.network_lock as n\n"
             f"n.LOCK_PATH = pathlib.Path({str(lock_path)!r})\n"
             "with n.only_network(): pass"],
            capture_output=True, text=True)
        assert second.returncode != 0
        assert (f"a linkemu network is already up (pid {os.getpid()}): one runs at a time"
                in second.stderr)
        assert lock_path.read_text() == f"pid {os.getpid()}\n"   # untouched
    with network_lock.only_network():   # free again once the first is down
        pass
