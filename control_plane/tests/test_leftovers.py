import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from linkemu.testbed import leftovers


@pytest.fixture
def records(tmp_path, monkeypatch):
    monkeypatch.setattr(leftovers, "RECORDS_DIR", tmp_path)
    monkeypatch.setattr(leftovers, "_made", {kind: [] for kind in leftovers.KINDS})
    return tmp_path


def dead_process():
    """(pid, start) of a process that has exited."""
    child = subprocess.Popen(["true"])
    pid, start = child.pid, leftovers.started(child.pid)
    child.wait()
    return pid, start


def write_record(records, maker, processes=(), interfaces=(), nft_tables=()):
    pid, start = maker
    path = records / f"made-{pid}.json"
    path.write_text(json.dumps({"maker": {"pid": pid, "started": start},
                                "processes": list(processes), "interfaces": list(interfaces),
                                "nft_tables": list(nft_tables)}))
    return path


def test_a_process_records_what_it_makes_and_what_it_took_down(records):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        leftovers.note_process(sleeper, "sleep")
        path = records / f"made-{os.getpid()}.json"
        record = json.loads(path.read_text())
        assert record["maker"] == {"pid": os.getpid(), "started": leftovers.started(os.getpid())}
        assert record["processes"] == [{"pid": sleeper.pid, "name": "sleep",
                                        "started": leftovers.started(sleeper.pid)}]
        leftovers.forget("processes", pid=sleeper.pid)
        assert not path.exists(), "an empty record stays behind"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_clean_stops_what_a_dead_process_left_and_nothing_else(records):
    # Not children of this test: a dead maker's processes belong to init.
    script = ("import subprocess; "
              "print(subprocess.Popen(['sleep', '60'], stdout=subprocess.DEVNULL, "
              "stderr=subprocess.DEVNULL).pid)")
    left = int(subprocess.run([sys.executable, "-c", script], capture_output=True,
                              text=True).stdout)
    kept = subprocess.Popen(["sleep", "60"])
    try:
        dead = write_record(records, dead_process(), processes=[
            {"pid": left, "started": leftovers.started(left), "name": "sleep"},
            # The same pid since reused by another process: not the one made.
            {"pid": kept.pid, "started": leftovers.started(kept.pid) - 1, "name": "old"}])
        living = write_record(records, (kept.pid, leftovers.started(kept.pid)), processes=[
            {"pid": kept.pid, "started": leftovers.started(kept.pid), "name": "sleep"}])
        assert leftovers.clean() == [f"process sleep (pid {left})"]
        assert leftovers.started(left) is None
        assert kept.poll() is None
        assert not dead.exists() and living.exists()
        assert leftovers.clean() == []
    finally:
        kept.kill()
        kept.wait()


def test_a_forked_child_records_only_what_it_makes(records):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        leftovers.note_process(sleeper, "parent's")
        child = os.fork()
        if child == 0:   # the child notes one thing of its own, and exits on the spot
            leftovers.forked()
            leftovers.note_interface("lo")
            os._exit(0)
        os.waitpid(child, 0)
        record = json.loads((records / f"made-{child}.json").read_text())
        assert (record["processes"], [i["name"] for i in record["interfaces"]]) == ([], ["lo"])
    finally:
        sleeper.kill()
        sleeper.wait()


def test_clean_skips_a_process_another_cleaner_stopped_first(records, monkeypatch):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        write_record(records, dead_process(), processes=[
            {"pid": sleeper.pid, "started": leftovers.started(sleeper.pid), "name": "sleep"}])

        kill = os.kill

        def quicker(pid, signum):   # the other cleaner stops it in between
            kill(pid, signal.SIGKILL)
            sleeper.wait()
            raise ProcessLookupError

        monkeypatch.setattr(leftovers.os, "kill", quicker)
        assert leftovers.clean() == [f"process sleep (pid {sleeper.pid})"]
    finally:
        sleeper.kill()
        sleeper.wait()


def test_clean_skips_an_interface_or_table_made_again_under_the_same_name(records):
    lo = leftovers.ifindex("lo")
    write_record(records, dead_process(),
                 interfaces=[{"name": "lo", "ifindex": lo + 100000},
                             {"name": "linkemu-none0", "ifindex": 7}],
                 nft_tables=[{"family": "inet", "name": "gone", "handle": None}])
    assert leftovers.clean() == []
    assert leftovers.ifindex("lo") == lo


def test_a_terminated_process_ends_through_its_teardown(tmp_path):
    done = tmp_path / "teardown"
    script = textwrap.dedent(f"""
        import os, signal, sys, time
        from linkemu.testbed import leftovers
        leftovers.exit_on_termination()
        try:
            os.kill(os.getpid(), getattr(signal, 'SIG' + sys.argv[1]))
            time.sleep(10)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)   # a second one: ignored
            open({str(done)!r}, "w").write("done")
    """)
    for name, number in (("TERM", signal.SIGTERM), ("HUP", signal.SIGHUP)):
        run = subprocess.run([sys.executable, "-c", script, name], timeout=10)
        assert run.returncode == 128 + number
        assert done.read_text() == "done"
        done.unlink()
