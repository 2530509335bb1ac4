"""TCP configuration of one host, set inside its network namespace and read
back before a run.

Every setting is optional: what a configuration leaves out keeps the
kernel's default. The sysctls are per namespace; initcwnd, initrwnd, advmss
and quickack are options of the host's route to the emulated network; mtu is
its interface's MTU (at most the profile's, which the switch's ports carry).
"""

import re
from dataclasses import dataclass, fields, replace

from ..model.fields import Field, Kind, boolean, int_in
from ..testbed import bpf_cc

SUBNET = "10.0.0.0/8"
_ON_OFF = {True: "1", False: "0"}
# setting -> (sysctl, {value: what the sysctl holds}); None: the value itself.
SYSCTLS = {
    "timestamps": ("net.ipv4.tcp_timestamps", _ON_OFF),
    "sack": ("net.ipv4.tcp_sack", _ON_OFF),
    "dsack": ("net.ipv4.tcp_dsack", _ON_OFF),
    "frto": ("net.ipv4.tcp_frto", {True: "2", False: "0"}),  # 2: RFC 5682 (SACK-enhanced)
    "ecn": ("net.ipv4.tcp_ecn", _ON_OFF),  # 1: request ECN and accept it
    # CBI: reuse cached per-destination RTT and ssthresh.
    "metrics_cache": ("net.ipv4.tcp_no_metrics_save", {True: "0", False: "1"}),
    "congestion_control": ("net.ipv4.tcp_congestion_control", None),
}
# route option -> {value: what the route holds}; None: the value itself.
ROUTE_OPTIONS = {
    "initcwnd": None,
    "initrwnd": None,
    "advmss": None,
    # RTAX_QUICKACK: the host ACKs every data segment at once (no delayed ACK)
    # on connections over this route.
    "quickack": _ON_OFF,
}
# What a route holds for an option `ip route show` does not print: the kernel
# reports no metric that is 0, so `quickack 0` shows as nothing.
ROUTE_UNSHOWN = {"quickack": "0"}
# Linux's congestion controls (net/ipv4/tcp_*.c; a kernel offers those it
# was built with); linkemu's own, in BPF, are bpf_cc.CONTROLS.
KERNEL_CC = ("bbr", "bic", "cdg", "cubic", "dctcp", "highspeed", "htcp", "hybla", "illinois",
             "lp", "nv", "reno", "scalable", "vegas", "veno", "westwood", "yeah")
AVAILABLE_CC = "/proc/sys/net/ipv4/tcp_available_congestion_control"
ALLOWED_CC = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"


class TcpConfigError(RuntimeError):
    """A setting the host did not take."""


@dataclass(frozen=True)
class HostTcp:
    initcwnd: int = None
    initrwnd: int = None
    timestamps: bool = None
    sack: bool = None
    dsack: bool = None
    frto: bool = None
    ecn: bool = None
    metrics_cache: bool = None
    congestion_control: str = None
    mtu: int = None
    advmss: int = None
    quickack: bool = None

    def merged(self, other):
        """This configuration with `other`'s settings written over it."""
        return replace(self, **{f.name: getattr(other, f.name) for f in fields(other)
                                if getattr(other, f.name) is not None})

    def settings(self):
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None}


def _congestion_control(value):
    if value not in KERNEL_CC + bpf_cc.CONTROLS:
        raise ValueError(f"unknown congestion control; Linux's: {', '.join(KERNEL_CC)}; "
                         f"linkemu's own, in BPF: {', '.join(bpf_cc.CONTROLS)}")
    return value


congestion_control = Kind(_congestion_control, "one of Linux's congestion controls, or "
                          + ", ".join(f"`{c}`" for c in bpf_cc.CONTROLS) + " (linkemu's)",
                          {"enum": list(KERNEL_CC + bpf_cc.CONTROLS)})


def bpf_controls(configs):
    """{linkemu's BPF congestion control: the names of the configurations
    naming it, sorted} of `configs` ({name: {host: HostTcp}})."""
    users = {}
    for name, hosts in sorted(configs.items()):
        for control in {c.congestion_control for c in hosts.values()} & set(bpf_cc.CONTROLS):
            users.setdefault(control, []).append(name)
    return users


# The settings, as an experiment file's `tcp:` configurations give them.
TCP_SETTINGS = (
    Field("initcwnd", int_in(1, 1000, "segments"), "initial congestion window (route)"),
    Field("initrwnd", int_in(1, 1000, "segments"), "initial receive window (route)"),
    Field("timestamps", boolean, "TCP timestamps (sysctl)"),
    Field("sack", boolean, "SACK (sysctl)"),
    Field("dsack", boolean, "D-SACK (sysctl)"),
    Field("frto", boolean, "F-RTO, SACK-enhanced (sysctl)"),
    Field("ecn", boolean, "request and accept ECN (sysctl)"),
    Field("metrics_cache", boolean, "reuse cached per-destination RTT and ssthresh (sysctl)"),
    Field("congestion_control", congestion_control, "the host's congestion control"),
    Field("mtu", int_in(68, 9000, "bytes"), "the interface's MTU, at most the profile's"),
    Field("advmss", int_in(48, 8960, "bytes"), "advertised MSS (route)"),
    Field("quickack", boolean, "ACK every segment at once, no delayed ACK (route)"),
)


def _held_form(name, value):
    """What the host holds (a sysctl's or route option's text) for `value`."""
    values = SYSCTLS[name][1] if name in SYSCTLS else ROUTE_OPTIONS.get(name)
    return str(value) if values is None else values[value]


def parse_host_tcp(section, extra_keys=()):
    """A HostTcp from a fields.Section; `extra_keys` are left to the caller."""
    values = {setting.key: section.field(setting.key) for setting in TCP_SETTINGS}
    section.known.update(extra_keys)
    section.reject_unknown()
    return HostTcp(**values)


def apply(config, interface, address, run):
    """Sets `config` on a host; `run(command)` runs a shell command in the
    host's namespace and returns its output (Mininet's host.cmd)."""
    settings = config.settings()
    if "congestion_control" in settings:
        wanted = settings["congestion_control"]
        available = run(f"cat {AVAILABLE_CC}").split()
        if wanted not in available:
            raise TcpConfigError(f"congestion control {wanted} is not available in this "
                                 f"kernel (available: {' '.join(available)})")
        allowed = run(f"cat {ALLOWED_CC}").split()
        if wanted not in allowed:
            # Linux lets a namespace other than the first default only to these.
            raise TcpConfigError(
                f"congestion control {wanted} is not in net.ipv4.tcp_allowed_congestion_control "
                f"({' '.join(allowed)}), so a host's namespace cannot make it its default; "
                f"allow it on the machine: sysctl -w net.ipv4.tcp_allowed_congestion_control="
                f"'{' '.join(allowed + [wanted])}'")
    for name, (sysctl, _) in SYSCTLS.items():
        if name in settings:
            run(f"sysctl -q -w {sysctl}={_held_form(name, settings[name])}")
    if "mtu" in settings:
        run(f"ip link set dev {interface} mtu {settings['mtu']}")
    options = " ".join(f"{o} {_held_form(o, settings[o])}"
                       for o in ROUTE_OPTIONS if o in settings)
    run(f"ip route replace {SUBNET} dev {interface} proto kernel scope link src {address} "
        f"{options}")
    # Every run starts without cached metrics; CBI then works within the run.
    run("ip tcp_metrics flush all 2>/dev/null")


def read_back(config, interface, run):
    """What the host holds for each setting of `config`, as set by apply()."""
    held = {}
    for name in config.settings():
        if name in SYSCTLS:
            held[name] = run(f"sysctl -n {SYSCTLS[name][0]}").strip()
        elif name == "mtu":
            held[name] = run(f"cat /sys/class/net/{interface}/mtu").strip()
        else:
            route = run(f"ip route show {SUBNET} dev {interface}")
            match = re.search(rf"\b{name} (\d+)", route)
            held[name] = match.group(1) if match else ROUTE_UNSHOWN.get(name)
    return held


def verify(config, interface, run):
    """Raises TcpConfigError naming every setting the host does not hold."""
    expected = {name: _held_form(name, value) for name, value in config.settings().items()}
    held = read_back(config, interface, run)
    wrong = [f"{name}: wanted {expected[name]}, host holds {held[name]}"
             for name in expected if held[name] != expected[name]]
    if wrong:
        raise TcpConfigError("; ".join(wrong))
