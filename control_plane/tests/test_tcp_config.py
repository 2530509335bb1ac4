import re

import pytest

from linkemu.experiments.tcp_config import (HostTcp, TcpConfigError, apply, bpf_controls,
                                            parse_host_tcp, read_back, verify)
from linkemu.experiments.experiment_schema import TCP_CONFIG
from linkemu.model.fields import Section
from linkemu.testbed import bpf_cc


class FakeHost:
    """A namespace's sysctls, route and MTU, driven by the commands
    tcp_config runs; `ignore` lists sysctls and route options the kernel
    refuses. Like the kernel, `ip route show` prints no option that is 0."""

    def __init__(self, ignore=()):
        self.sysctls = {"net.ipv4.tcp_congestion_control": "cubic"}
        self.route = "10.0.0.0/8 proto kernel scope link src 10.0.0.1"
        self.mtu = "1500"
        self.ignore = ignore
        self.commands = []

    def run(self, command):
        self.commands.append(command)
        if command.startswith("cat /proc/sys/net/ipv4/tcp_available_congestion_control"):
            return "reno cubic bbr\n"
        if command.startswith("cat /proc/sys/net/ipv4/tcp_allowed_congestion_control"):
            return "reno bbr\n"
        if match := re.fullmatch(r"sysctl -q -w (\S+)=(\S+)", command):
            if match.group(1) not in self.ignore:
                self.sysctls[match.group(1)] = match.group(2)
            return ""
        if match := re.fullmatch(r"sysctl -n (\S+)", command):
            return self.sysctls.get(match.group(1), "0") + "\n"
        if match := re.fullmatch(r"ip link set dev \S+ mtu (\d+)", command):
            self.mtu = match.group(1)
            return ""
        if command.startswith("cat /sys/class/net/"):
            return self.mtu + "\n"
        if command.startswith("ip route replace "):
            self.route = command[len("ip route replace "):]
            for option in self.ignore:
                self.route = re.sub(rf" {option} \d+", "", self.route)
            return ""
        if command.startswith("ip route show"):
            return re.sub(r" [a-z_]+ 0\b", "", self.route) + "\n"
        return ""


def test_settings_are_applied_and_read_back():
    config = HostTcp(initcwnd=2, initrwnd=40, timestamps=False, sack=True, frto=True,
                     ecn=True, metrics_cache=False, congestion_control="reno", mtu=576)
    host = FakeHost()
    apply(config, "h1-eth0", "10.0.0.1", host.run)
    verify(config, "h1-eth0", host.run)
    assert read_back(config, "h1-eth0", host.run) == {
        "initcwnd": "2", "initrwnd": "40", "timestamps": "0", "sack": "1", "frto": "2",
        "ecn": "1", "metrics_cache": "1", "congestion_control": "reno", "mtu": "576"}
    assert host.sysctls["net.ipv4.tcp_no_metrics_save"] == "1"
    assert "ip tcp_metrics flush all 2>/dev/null" in host.commands


def test_an_empty_configuration_keeps_the_kernel_defaults():
    host = FakeHost()
    apply(HostTcp(), "h1-eth0", "10.0.0.1", host.run)
    assert not any(c.startswith("sysctl") for c in host.commands)
    assert read_back(HostTcp(), "h1-eth0", host.run) == {}


def test_a_setting_the_host_did_not_take_is_named():
    config = HostTcp(dsack=True, timestamps=True)
    host = FakeHost(ignore=("net.ipv4.tcp_dsack",))
    apply(config, "h1-eth0", "10.0.0.1", host.run)
    with pytest.raises(TcpConfigError, match="dsack: wanted 1, host holds 0"):
        verify(config, "h1-eth0", host.run)


def test_unavailable_congestion_control_is_refused_before_anything_is_set():
    host = FakeHost()
    with pytest.raises(TcpConfigError, match="dctcp is not available.*reno cubic bbr"):
        apply(HostTcp(congestion_control="dctcp", sack=False), "h1-eth0", "10.0.0.1", host.run)
    assert not any(c.startswith("sysctl -q -w") for c in host.commands)


def test_merge_writes_only_the_settings_given():
    base = HostTcp(initcwnd=2, timestamps=True)
    assert base.merged(HostTcp(timestamps=False, ecn=True)) == HostTcp(
        initcwnd=2, timestamps=False, ecn=True)


def test_a_congestion_control_namespaces_may_not_default_to_is_explained():
    host = FakeHost()
    with pytest.raises(TcpConfigError, match="cubic is not in net.ipv4.tcp_allowed_conge"
                                             ".*tcp_allowed_congestion_control='reno bbr cubic'"):
        apply(HostTcp(congestion_control="cubic"), "h1-eth0", "10.0.0.1", host.run)


def test_quickack_is_a_route_option_read_back_when_ip_prints_it_or_not():
    for quickack, shown in ((True, "1"), (False, "0")):
        config = HostTcp(initcwnd=2, quickack=quickack)
        host = FakeHost()
        apply(config, "h1-eth0", "10.0.0.1", host.run)
        assert any(c.startswith("ip route replace 10.0.0.0/8 ") and
                   c.endswith(f"initcwnd 2 quickack {shown}") for c in host.commands)
        verify(config, "h1-eth0", host.run)
        assert read_back(config, "h1-eth0", host.run) == {"initcwnd": "2", "quickack": shown}


def test_quickack_the_route_did_not_take_is_named():
    config = HostTcp(quickack=True)
    host = FakeHost(ignore=("quickack",))
    apply(config, "h1-eth0", "10.0.0.1", host.run)
    with pytest.raises(TcpConfigError, match="quickack: wanted 1, host holds 0"):
        verify(config, "h1-eth0", host.run)


def parsed(settings):
    """(HostTcp, problems) of one configuration as a file gives it."""
    problems = []
    return parse_host_tcp(Section(settings, "tcp.x", problems, TCP_CONFIG)), problems


def test_a_congestion_control_is_linux_s_or_linkemu_s_own():
    for name in ("reno", "cubic", "bbr", "reno_classic"):
        assert parsed({"congestion_control": name}) == (HostTcp(congestion_control=name), [])
    known = ("Linux's: bbr, bic, cdg, cubic, dctcp, highspeed, htcp, hybla, illinois, lp, nv, "
             "reno, scalable, vegas, veno, westwood, yeah; linkemu's own, in BPF: reno_classic")
    for wrong, shown in (("renoclassic", "'renoclassic'"), ("Reno", "'Reno'"), (3, "3")):
        assert parsed({"congestion_control": wrong}) == (HostTcp(), [
            f"tcp.x.congestion_control: {shown}: unknown congestion control; {known}"])


def test_the_configurations_naming_a_bpf_control_are_found():
    classic, kernel = HostTcp(congestion_control="reno_classic"), HostTcp(congestion_control="reno")
    configs = {"kernel": {"h1": kernel, "h2": kernel}, "mixed": {"h1": kernel, "h2": classic},
               "classic": {"h1": classic, "h2": classic}, "default": {"h1": HostTcp()}}
    assert bpf_controls(configs) == {"reno_classic": ["classic", "mixed"]}
    assert bpf_controls({"kernel": configs["kernel"]}) == {}


def test_a_bpf_control_that_cannot_be_registered_names_its_configuration_and_the_cause(
        monkeypatch, tmp_path):
    monkeypatch.setattr(bpf_cc, "BUILD", tmp_path)
    with pytest.raises(bpf_cc.BpfCcError, match=r"^tcp config classic names congestion control "
                       r"reno_classic, which cannot be registered: build/reno_classic.bpf.o is "
                       r"missing: run 'make build' \(it needs clang and bpftool"):
        with bpf_cc.registered({"reno_classic": "tcp config classic"}):
            pass
    monkeypatch.setattr(bpf_cc, "KERNEL_BTF", tmp_path / "no-btf")
    (tmp_path / "reno_classic.bpf.o").touch()
    assert bpf_cc.missing("reno_classic") == (f"the kernel has no BTF ({tmp_path}/no-btf), "
                                              "which struct_ops needs")
