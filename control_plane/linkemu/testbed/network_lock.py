"""One linkemu network per network slot (linkemu.testbed.slots): a slot's
networks share its names (s1-eth1, ...), so a second in the same slot
would take the first's and, stopping, remove its links."""

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path

LOCK_DIR = Path("/run/lock")


def lock_path(slot):
    """Slot 0's lock is the one a single network has always held."""
    return LOCK_DIR / ("linkemu-network.lock" if slot == 0 else f"linkemu-network-{slot}.lock")


@contextmanager
def only_network(slot=0):
    """Holds network slot `slot`; refuses if another process holds it."""
    path = lock_path(slot)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip() or "another process"
            raise RuntimeError(f"linkemu network slot {slot} is already up ({holder}): one "
                               f"network a slot at a time; stop it first (its lock: {path})"
                               ) from None
        lock.truncate(0)
        lock.write(f"pid {os.getpid()}\n")
        lock.flush()
        try:
            yield
        finally:
            lock.truncate(0)
