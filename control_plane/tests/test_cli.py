"""The CLI reports bad input and unreachable switches clearly, and checks
profiles before it connects to anything."""

from linkemu import cli
from linkemu.bmv2 import free_tcp_port
from linkemu.cli import main
from linkemu.p4runtime import TableEntry


def test_check_prints_both_directions(capsys, tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("downlink: {rate: 64kbit, delay: 300ms, queue: 20}\nuplink: {}\n")
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "downlink rate 64kbit, delay 300ms, queue 20 packets" in out


def test_bad_profile_is_rejected_before_connecting(capsys, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("downlink: {rate: 64kbps}\nuplink: {queue: 0}\n")
    # Nothing listens on this port: the error must be the profile's, not the switch's.
    port = free_tcp_port()
    assert main(["--switch", f"127.0.0.1:{port}", "--timeout", "0.5", "push", str(path)]) == 1
    err = capsys.readouterr().err
    assert "downlink.rate: '64kbps'" in err and "uplink.queue: 0" in err
    assert "P4Runtime" not in err


def test_unreachable_switch(capsys):
    port = free_tcp_port()
    assert main(["--switch", f"127.0.0.1:{port}", "--timeout", "0.5", "counters"]) == 1
    assert f"no P4Runtime server at 127.0.0.1:{port}" in capsys.readouterr().err


def test_timeline_needs_link_states(capsys, tmp_path):
    path = tmp_path / "plain.yaml"
    path.write_text("downlink: {}\nuplink: {}\n")
    assert main(["timeline", str(path), "--duration", "10", "-o", str(tmp_path / "t.csv")]) == 1
    assert "defines no link_states" in capsys.readouterr().err


def states_profile(tmp_path):
    profile = tmp_path / "states.yaml"
    profile.write_text("""
downlink: {}
uplink: {}
link_states:
  start: {a: 1}
  states:
    a: {error: 0, duration: {distribution: uniform, min: 1s, max: 2s}, next: {b: 1}}
    b: {error: 1, duration: {distribution: static, value: 1s}, next: {a: 1}}
""")
    return profile


def test_timeline_is_drawn_from_the_seed(tmp_path):
    profile = states_profile(tmp_path)
    first, second = tmp_path / "1.csv", tmp_path / "2.csv"
    assert main(["timeline", str(profile), "--seed", "3", "--duration", "30", "-o", str(first)]) == 0
    assert main(["timeline", str(profile), "--seed", "3", "--duration", "30", "-o", str(second)]) == 0
    assert first.read_text() == second.read_text()
    assert first.read_text().count("\nb,") >= 8


class PushedSwitch:
    """A switch whose pushed profile draws no link errors."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def read_table(self, table):
        return [TableEntry(table, {"m.pkt.dir": d}, "set_params", {"features": 0})
                for d in (0, 1)]


def test_states_refuses_a_switch_whose_profile_draws_no_errors(capsys, tmp_path, monkeypatch):
    profile = states_profile(tmp_path)
    monkeypatch.setattr(cli, "_connect", lambda args: PushedSwitch())
    assert main(["states", str(profile), "--duration", "1"]) == 1
    err = capsys.readouterr().err
    assert "its link states err the downlink and uplink," in err
    assert f"push this profile first (linkemu push {profile})" in err
