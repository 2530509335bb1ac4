"""One linkemu network at a time: Mininet names its hosts, switch and links
the same in every network (h1, s1-eth1, ...), so a second would take the
first's names and, stopping, remove its links."""

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path

LOCK_PATH = Path("/run/lock/linkemu-network.lock")


@contextmanager
def only_network():
    """Holds the machine's one linkemu network; refuses if another holds it."""
    LOCK_PATH.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK_PATH, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise RuntimeError(f"a linkemu network is already up ({holder}): one runs at a "
                               f"time; stop it first (its lock: {LOCK_PATH})") from None
        lock.truncate(0)
        lock.write(f"pid {os.getpid()}\n")
        lock.flush()
        try:
            yield
        finally:
            lock.truncate(0)
