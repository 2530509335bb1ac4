"""One linkemu network at a time: a second refuses, naming the first, and
touches nothing of it (no Mininet needed: the lock is taken before the
network is built)."""

import os
import subprocess
import sys

import pytest

emunet = pytest.importorskip("linkemu.testbed.emunet", reason="Mininet is not installed")


def test_a_second_network_is_refused_while_the_first_is_up(tmp_path, monkeypatch):
    monkeypatch.setattr(emunet, "LOCK_PATH", tmp_path / "lock")
    with emunet.only_network():
        assert (tmp_path / "lock").read_text() == f"pid {os.getpid()}\n"
        # Another process, as a second launcher would be.
        second = subprocess.run(
            [sys.executable, "-c",
             "import pathlib, linkemu.testbed.emunet as e\n"
             f"e.LOCK_PATH = pathlib.Path({str(tmp_path / 'lock')!r})\n"
             "with e.only_network(): pass"],
            capture_output=True, text=True)
        assert second.returncode != 0
        assert (f"a linkemu network is already up (pid {os.getpid()}): one runs at a time"
                in second.stderr)
        assert (tmp_path / "lock").read_text() == f"pid {os.getpid()}\n"   # untouched
    with emunet.only_network():   # free again once the first is down
        pass
