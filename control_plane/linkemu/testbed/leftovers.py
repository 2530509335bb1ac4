"""What a linkemu process made on this machine, recorded as it makes it, so
that what a killed process (SIGKILL, a crash) could not take down is found
and removed later: by `linkemu clean`, and by every launch before it builds.
SIGTERM and SIGHUP end a process through its teardown (exit_on_termination).

A process's record is /run/linkemu/made-PID.json. Everything in it is named
by an identity the kernel does not give to anything else meanwhile: a process
by its pid and start time, an interface by its name and index, an nftables
table by its handle. A later network of the same names is never touched.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

RECORDS_DIR = Path("/run/linkemu")
KINDS = ("processes", "interfaces", "nft_tables")
_lock = threading.Lock()
_made = {kind: [] for kind in KINDS}


def started(pid):
    """When process `pid` started (clock ticks since boot), None if there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def ifindex(name):
    """The index of interface `name` in this namespace, None if there is none."""
    try:
        return int(Path(f"/sys/class/net/{name}/ifindex").read_text())
    except (OSError, ValueError):
        return None


def nft_table_handle(family, name):
    """The handle of nftables table `family` `name`, None if there is none."""
    done = subprocess.run(["nft", "-j", "list", "table", family, name],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return None
    for item in json.loads(done.stdout)["nftables"]:
        if "table" in item:
            return item["table"]["handle"]
    return None


def _write():
    path = RECORDS_DIR / f"made-{os.getpid()}.json"
    if not any(_made.values()):
        path.unlink(missing_ok=True)
        return
    RECORDS_DIR.mkdir(parents=True, exist_ok=True)
    record = {"maker": {"pid": os.getpid(), "started": started(os.getpid())}, **_made}
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(record, indent=1))
    partial.replace(path)


def note(kind, **identity):
    """Records that this process made one thing of `kind` (one of KINDS)."""
    with _lock:
        _made[kind].append(identity)
        _write()


def forked():
    """Starts a forked child's own record, empty: what its parent made
    stays in the parent's alone."""
    global _lock, _made
    _lock = threading.Lock()   # the parent's may have been held by one of its threads
    _made = {kind: [] for kind in KINDS}


def forget(kind, **key):
    """Drops what this process took down itself from its record."""
    with _lock:
        _made[kind] = [i for i in _made[kind] if any(i[k] != v for k, v in key.items())]
        _write()


def note_process(process, name):
    note("processes", pid=process.pid, started=started(process.pid), name=name)


def note_interface(name):
    note("interfaces", name=name, ifindex=ifindex(name))


def note_nft_table(family, name):
    note("nft_tables", family=family, name=name, handle=nft_table_handle(family, name))


def clean():
    """Removes what the records of dead processes list and those records;
    leaves a living process's record alone. Returns what it removed, one
    description per thing."""
    removed = []
    for path in sorted(RECORDS_DIR.glob("made-*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue   # being written
        maker = record["maker"]
        if maker["pid"] != os.getpid() and started(maker["pid"]) == maker["started"]:
            continue
        removed += [f"process {p['name']} (pid {p['pid']})" for p in record["processes"]
                    if _stop(p["pid"], p["started"])]
        removed += [f"interface {i['name']}" for i in record["interfaces"]
                    if _delete_interface(i["name"], i["ifindex"])]
        removed += [f"nftables table {t['family']} {t['name']}" for t in record["nft_tables"]
                    if _delete_nft_table(t["family"], t["handle"])]
        path.unlink(missing_ok=True)
    return removed


def clean_before_building(prefix=""):
    """clean(), saying on stderr what it removed: a launch or a test bed
    calls it before it builds anything."""
    for thing in clean():
        print(f"{prefix}removed {thing}, left by a killed run", file=sys.stderr)


def stop_child(process, timeout_s=5.0):
    """Stops a child this process started (a subprocess.Popen): SIGTERM,
    then SIGKILL after `timeout_s`."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _stop(pid, start, timeout_s=5.0):
    if started(pid) != start:
        return False
    try:   # another cleaner (a network slot building beside this one) may be quicker
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while started(pid) == start and time.monotonic() < deadline:
            time.sleep(0.05)
        if started(pid) == start:
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return True


def _delete_interface(name, index):
    if index is None or ifindex(name) != index:
        return False
    return subprocess.run(["ip", "link", "del", name], capture_output=True).returncode == 0


def _delete_nft_table(family, handle):
    if handle is None:
        return False
    return subprocess.run(["nft", "delete", "table", family, "handle", str(handle)],
                          capture_output=True).returncode == 0


def exit_on_termination():
    """Makes SIGTERM and SIGHUP (a closed terminal) raise SystemExit in the
    main thread, as Ctrl-C raises KeyboardInterrupt, so that the process
    ends through every `finally` and `with` on its way out and takes down
    what it made; by default they end it on the spot. A second signal does
    not cut that teardown short."""
    def end(signum, frame):
        for ignored in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(ignored, signal.SIG_IGN)
        raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, end)
