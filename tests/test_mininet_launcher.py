"""mininet/run.py: a script runs non-interactively, and teardown removes
exactly what the launcher made, on normal exit, on Ctrl-C, SIGTERM or
SIGHUP, and when the switch dies under it; what a killed launcher left,
`linkemu clean` removes by its records."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import environment, mininet
from linkemu.testbed.bmv2 import free_tcp_port

ROOT = Path(__file__).resolve().parent.parent


pytestmark = environment(mininet("ping"))


def launch(script, tmp_path, grpc_port):
    path = tmp_path / "commands"
    path.write_text(script)
    return subprocess.Popen(
        [sys.executable, str(ROOT / "mininet" / "run.py"), "--profile",
         str(ROOT / "profiles" / "gprs-optimal.yaml"), "--script", str(path),
         "--grpc-port", str(grpc_port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def until_cli(run):
    """The launcher's output up to its CLI's start (60 s at most)."""
    deadline = time.monotonic() + 60
    output = ""
    while "Starting CLI" not in output and time.monotonic() < deadline:
        output += run.stdout.readline()
    return output


def assert_torn_down(output):
    pid = int(re.search(r"simple_switch_grpc pid (\d+)", output).group(1))
    assert not Path(f"/proc/{pid}").exists(), "the switch process survived"
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert "s1-eth" not in links, "switch interfaces survived"
    thrift = re.search(r"Thrift on 127.0.0.1:(\d+)", output).group(1)
    tables = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout
    assert f"linkemu_thrift_{thrift}" not in tables, "the Thrift guard survived"
    assert "Traceback" not in output, output


def test_script_runs_and_everything_is_removed(tmp_path):
    port = free_tcp_port()
    linkemu = Path(sys.executable).with_name("linkemu")
    script = (f"sh {linkemu} --switch 127.0.0.1:{port} push "
              f"{ROOT / 'profiles' / '1mbit-50ms.yaml'}\n"
              "h1 ping -c 3 h2\n"
              f"sh {linkemu} --switch 127.0.0.1:{port} counters\n")
    run = launch(script, tmp_path, port)
    output, _ = run.communicate(timeout=120)
    assert run.returncode == 0, output
    assert "pushed profile 1mbit-50ms" in output, output
    rtts = [float(x) for x in re.findall(r"time=([0-9.]+) ms", output)]
    assert len(rtts) == 3 and min(rtts) > 100, output  # the pushed 50 ms each way
    assert re.search(r"link_out\s+[1-9]", output), output
    assert_torn_down(output)


@pytest.mark.parametrize("ending", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_ctrl_c_or_termination_tears_down(tmp_path, ending):
    run = launch("h1 sleep 60\n", tmp_path, free_tcp_port())
    output = until_cli(run)
    time.sleep(1)
    run.send_signal(ending)
    rest, _ = run.communicate(timeout=60)
    assert_torn_down(output + rest)


@pytest.mark.parametrize("cleaner", ["linkemu clean", "the next launch"])
def test_what_a_killed_launch_left_is_cleaned_by_its_records(tmp_path, cleaner):
    run = launch("h1 sleep 60\n", tmp_path, free_tcp_port())
    output = until_cli(run)
    switch = int(re.search(r"simple_switch_grpc pid (\d+)", output).group(1))
    run.kill()
    run.wait()
    assert Path(f"/proc/{switch}").exists(), "nothing was left to clean"
    linkemu = Path(sys.executable).with_name("linkemu")
    if cleaner == "linkemu clean":
        cleaned = subprocess.run([linkemu, "clean"], capture_output=True, text=True, timeout=60)
        assert cleaned.returncode == 0, cleaned.stderr
        said = cleaned.stdout
    else:
        said, _ = launch("h1 true\n", tmp_path, free_tcp_port()).communicate(timeout=120)
    assert f"removed process simple_switch_grpc (pid {switch})" in said, said
    assert "removed nftables table inet linkemu_thrift_" in said, said
    assert_torn_down(output)
    again = subprocess.run([linkemu, "clean"], capture_output=True, text=True, timeout=60)
    assert again.stdout.startswith("nothing left behind"), again.stdout


def test_bad_profile_starts_nothing(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("downlink: {rate: 64kbps}\nuplink: {}\n")
    run = subprocess.run([sys.executable, str(ROOT / "mininet" / "run.py"),
                          "--profile", str(bad)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert "downlink.rate: '64kbps'" in run.stderr
    assert "s1-eth" not in subprocess.run(["ip", "-o", "link"], capture_output=True,
                                          text=True).stdout


def test_a_dead_switch_ends_the_launch_and_says_so(tmp_path):
    run = launch("h1 sleep 60\n", tmp_path, free_tcp_port())
    output = until_cli(run)
    pid = int(re.search(r"simple_switch_grpc pid (\d+)", output).group(1))
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    noticed = None
    for line in run.stdout:
        output += line
        if noticed is None and "stopping the network" in line:
            noticed = time.monotonic() - killed
    run.wait(timeout=60)
    assert run.returncode == 1, output
    assert f"pid {pid}) exited with code -9" in output, output
    assert noticed is not None and noticed < 1.5, f"noticed after {noticed} s"
    assert_torn_down(output)
