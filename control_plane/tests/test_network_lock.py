"""One linkemu network a slot at a time: a second in the slot refuses,
naming the first, and touches nothing of it."""

import os
import subprocess
import sys

from linkemu.testbed import network_lock


def test_a_second_network_is_refused_while_the_first_is_up(tmp_path, monkeypatch):
    monkeypatch.setattr(network_lock, "LOCK_DIR", tmp_path)
    lock_path = network_lock.lock_path(0)
    with network_lock.only_network():
        assert lock_path.read_text() == f"pid {os.getpid()}\n"
        # Another process, as a second launcher would be.
        second = subprocess.run(
            [sys.executable, "-c",
             "import pathlib, linkemu.testbed.network_lock as n\n"
             f"n.LOCK_DIR = pathlib.Path({str(tmp_path)!r})\n"
             "with n.only_network(): pass"],
            capture_output=True, text=True)
        assert second.returncode != 0
        assert (f"linkemu network slot 0 is already up (pid {os.getpid()}): one network a "
                "slot at a time" in second.stderr)
        assert lock_path.read_text() == f"pid {os.getpid()}\n"   # untouched
    with network_lock.only_network():   # free again once the first is down
        pass
