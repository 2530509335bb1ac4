"""Link profiles: YAML files validated into a typed model.

A profile describes both directions of the emulated link. Every field is
checked before anything is written to a switch; all problems are reported
together, each with its path, the value found and what is allowed.
"""

import math
from dataclasses import dataclass
from pathlib import Path

from ..program import constants as p4
from .fields import (Section, boolean, choice, int_in, positive_time_us, safe_name,
                     text)
from .files import load_yaml
from .jitter import DelaySpikes, Jitter, read_jitter, read_spikes
from .link_states import Duration, LinkState, StateChain
from .rate_schedule import read_rate_changes, read_rate_trace
from .units import (format_rate, format_time_us, parse_rate, parse_size,
                    parse_time_us)

MIN_RATE_BPS = 1e3
MAX_RATE_BPS = 10e9
MAX_DELAY_US = 60 * 10**6
DEFAULT_QUEUE_PACKETS = 1000  # Linux's default txqueuelen
DIRECTIONS = ("downlink", "uplink")
PROBABILITY_TOLERANCE = 1e-6
# Best effort behind a priority class, or under a varying rate, waits in the
# data plane's ring of deferred packets.
MAX_DEFERRED_PACKETS = p4.DEFER_RING
PROTOCOLS = {"tcp": 6, "udp": 17, "icmp": 1, "icmpv6": 58}
PORT_PROTOCOLS = (6, 17)


@dataclass(frozen=True)
class Arq:
    """Link-layer retransmission: an errored frame is delayed by `delay_us`
    and drawn again, at most `max_retransmissions` times."""

    delay_us: int
    max_retransmissions: int
    in_order: bool = True


@dataclass(frozen=True)
class LossModel:
    """Per-packet loss independent of the link states, as NetEm's.

    Gilbert-Elliott with NetEm's parameters: p = to_bad, r = to_good,
    1-h = bad_loss, 1-k = good_loss. Bernoulli with probability p is its
    one-state case: to_bad 0, loss p in both states."""

    model: str
    to_bad: float
    to_good: float
    bad_loss: float
    good_loss: float


@dataclass(frozen=True)
class Red:
    """Classic RED on the router queue, counted in packets or bytes.

    min_th and max_th are in the mode's unit; mean_packet_bytes sets the
    idle-time decay (the average decays as if that many bytes were sent per
    transmission time while the queue is empty)."""

    mode: str
    min_th: float
    max_th: float
    max_p: float
    weight: float
    gentle: bool
    ecn: bool
    mean_packet_bytes: int


@dataclass(frozen=True)
class ClassMatch:
    """Packets of the priority class: every field given must match."""

    dscp: int | None = None
    protocol: int | None = None
    src_port: int | None = None
    dst_port: int | None = None

    def describe(self):
        names = {v: k for k, v in PROTOCOLS.items()}
        parts = []
        if self.dscp is not None:
            parts.append(f"dscp {self.dscp}")
        if self.protocol is not None:
            parts.append(names.get(self.protocol, f"protocol {self.protocol}"))
        if self.src_port is not None:
            parts.append(f"src port {self.src_port}")
        if self.dst_port is not None:
            parts.append(f"dst port {self.dst_port}")
        return " ".join(parts)


@dataclass(frozen=True)
class Cobalt:
    """Cake's AQM on the router queue: CoDel (target, interval) with BLUE
    for flows that do not respond. Packets that are ECN-capable are marked
    CE instead of dropped, unless `ecn` is off. `mtu` is the profile's: Cake
    raises the target to what a frame of it takes at a low rate."""

    target_us: int = 5000
    interval_us: int = 100000
    ecn: bool = True
    mtu: int = 1500

    def describe(self):
        return (f"COBALT target {format_time_us(self.target_us)} interval "
                f"{format_time_us(self.interval_us)}{'' if self.ecn else ' without ECN'}")


@dataclass(frozen=True)
class Priority:
    """A high-priority class served strictly before best effort (DiffServ).

    It has its own router queue and AQM; `share` caps the class at that
    fraction of the link rate, `best_effort_share` likewise the other class
    (None: the class may use the whole link)."""

    match: tuple
    queue_packets: int
    queue_bytes: int | None = None
    red: Red | None = None
    share: float | None = None
    best_effort_share: float | None = None


@dataclass(frozen=True)
class Direction:
    """One direction of the link."""

    rate_bps: float | None  # None: no rate limit
    delay_us: int
    queue_packets: int
    overhead_bytes: int
    arq: Arq | None = None
    loss: LossModel | None = None
    queue_bytes: int | None = None  # byte limit of the router queue
    red: Red | None = None
    cobalt: Cobalt | None = None
    sojourn_target_us: int | None = None  # L4S-style CE ramp for ECT(1) packets
    priority: Priority | None = None  # queue, queue_bytes and red are best effort's then
    jitter: Jitter | None = None
    delay_spikes: DelaySpikes | None = None
    reorder: float = 0.0     # NetEm's packet faults: probability per packet
    duplicate: float = 0.0
    corrupt: float = 0.0
    rate_schedule: object = None   # rate_schedule.RateSteps or RateTrace
    send_buffer: int | None = None  # link send buffer, bytes (None: none)

    def describe(self):
        rate = "unlimited" if self.rate_bps is None else format_rate(self.rate_bps)
        text = (f"rate {rate}, delay {format_time_us(self.delay_us)}, "
                f"queue {self.queue_packets} packets, overhead {self.overhead_bytes} B")
        if self.arq:
            text += (f", ARQ {self.arq.max_retransmissions} x "
                     f"{format_time_us(self.arq.delay_us)}"
                     f"{'' if self.arq.in_order else ' (no in-order release)'}")
        if self.queue_bytes:
            text += f", queue limit {self.queue_bytes} B"
        if self.send_buffer:
            text += f", link buffer {self.send_buffer} B"
        if self.red:
            text += f", {_describe_red(self.red)}"
        if self.cobalt:
            text += f", {self.cobalt.describe()}"
        if self.priority:
            p = self.priority
            text += (f"; priority class ({' or '.join(m.describe() for m in p.match)}): "
                     f"queue {p.queue_packets} packets")
            if p.queue_bytes:
                text += f", {p.queue_bytes} B"
            if p.red:
                text += f", {_describe_red(p.red)}"
            if p.share:
                text += f", share {p.share:g}"
            if p.best_effort_share:
                text += f"; best-effort share {p.best_effort_share:g}"
        if self.sojourn_target_us:
            text += f", ECT(1) sojourn ramp to {format_time_us(self.sojourn_target_us)}"
        if self.loss:
            text += f", loss model {self.loss}"
        for extra in (self.jitter, self.delay_spikes, self.rate_schedule):
            if extra:
                text += f", {extra.describe()}"
        for fault in ("reorder", "duplicate", "corrupt"):
            if getattr(self, fault):
                text += f", {fault} {getattr(self, fault):g}"
        return text


def _describe_red(r):
    return (f"RED ({r.mode}) {r.min_th:g}-{r.max_th:g} max_p {r.max_p:g} "
            f"w {r.weight:g}{' gentle' if r.gentle else ''}{' ECN' if r.ecn else ''}")


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    mtu: int
    downlink: Direction
    uplink: Direction
    states: StateChain | None = None

    def directions(self):
        return {"downlink": self.downlink, "uplink": self.uplink}

    def frames_held_busy(self):
        """Frames of the MTU both directions hold at once when busy (in flight
        for the delay, and a full router queue); None for a direction without
        a rate limit, which holds whatever is offered."""
        total = 0
        for d in self.directions().values():
            if d.rate_bps is None:
                return None
            frame_bits = (self.mtu + d.overhead_bytes) * 8
            total += math.ceil(d.rate_bps * d.delay_us / 1e6 / frame_bits) + d.queue_packets
        return total

    def hold_warning(self, capacity):
        """What a user of this profile should know about a hold of
        `capacity` packets (the switch's), or None."""
        held = self.frames_held_busy()
        if held is None or held <= capacity:
            return None
        return (f"busy both ways with full router queues it would hold {held} frames of "
                f"the MTU, more than the {capacity} the switch's hold takes: "
                "arrivals beyond are dropped (drop_hold)")


class ProfileError(ValueError):
    """A profile that cannot be used; lists every problem found."""

    def __init__(self, source, problems):
        self.source = source
        self.problems = problems
        lines = [f"{source}: invalid profile"] + [f"  {p}" for p in problems]
        super().__init__("\n".join(lines))


def _rate(value):
    if value == "unlimited":
        return None
    bps = parse_rate(value)
    if not MIN_RATE_BPS <= bps <= MAX_RATE_BPS:
        raise ValueError(f"out of range; allowed {format_rate(MIN_RATE_BPS)} to "
                         f"{format_rate(MAX_RATE_BPS)}, or 'unlimited'")
    return bps


def _delay(value):
    us = parse_time_us(value)
    if not 0 <= us <= MAX_DELAY_US:
        raise ValueError(f"out of range; allowed 0s to {format_time_us(MAX_DELAY_US)}")
    return us


def _probability(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("expected a probability, a number in [0, 1]")
    if not 0 <= value <= 1:
        raise ValueError("out of range; a probability is in [0, 1]")
    return float(value)


def _arq(section):
    if section is None:
        return None
    arq = Arq(delay_us=section.field("delay", positive_time_us, default=0, required=True),
              max_retransmissions=section.field("max_retransmissions",
                                                int_in(0, 15, "retransmissions"),
                                                default=0, required=True),
              in_order=section.field("in_order", boolean, default=True))
    section.reject_unknown()
    return arq


LOSS_MODELS = ("bernoulli", "gilbert-elliott")


def _loss(section):
    if section is None:
        return None
    model = section.field("model", choice(LOSS_MODELS), required=True)
    p = section.field("p", _probability, default=0.0, required=True)
    if model == "gilbert-elliott":
        loss = LossModel(model, to_bad=p,
                         to_good=section.field("r", _probability, default=1.0, required=True),
                         bad_loss=section.field("bad_loss", _probability, default=1.0),
                         good_loss=section.field("good_loss", _probability, default=0.0))
    else:
        loss = LossModel(model, to_bad=0.0, to_good=1.0, bad_loss=p, good_loss=p)
    section.reject_unknown()
    return loss


def _open_unit_interval(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("expected a number in (0, 1)")
    if not 0 < value < 1:
        raise ValueError("out of range; allowed (0, 1), exclusive")
    return float(value)


def _up_to_one(what):
    """A number in (0, 1]: `what` names it in the error."""
    def convert(value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected {what} in (0, 1]")
        if not 0 < value <= 1:
            raise ValueError("out of range; allowed (0, 1]")
        return float(value)
    return convert


_max_p = _up_to_one("a probability")
_share = _up_to_one("a fraction of the link rate")


def _size(value):
    size = parse_size(value)
    if size <= 0:
        raise ValueError("must be more than 0 bytes")
    return size


def _packets(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0 <= value < math.inf:
        raise ValueError("expected a number of packets, 0 or more")
    return float(value)


RED_MODES = ("packets", "bytes")


def _red(section, mtu, rate_bps):
    if section is None:
        return None
    mode = section.field("mode", choice(RED_MODES), default="packets")
    threshold = _size if mode == "bytes" else _packets
    low = section.field("min", threshold, default=0, required=True)
    high = section.field("max", threshold, default=1, required=True)
    red = Red(mode=mode, min_th=low, max_th=high,
              max_p=section.field("max_p", _max_p, default=0.1, required=True),
              weight=section.field("weight", _open_unit_interval, default=0.002,
                                   required=True),
              gentle=section.field("gentle", boolean, default=False),
              ecn=section.field("ecn", boolean, default=False),
              mean_packet_bytes=section.field("mean_packet", _size, default=mtu))
    if low is not None and high is not None and low >= high:
        section.problems.append(f"{section.path}: min {low:g} must be less than max {high:g}")
    if rate_bps is None:
        section.problems.append(f"{section.path}: RED needs a rate: with an unlimited "
                                "rate no queue ever builds")
    section.reject_unknown()
    return red


def _cobalt(section, mtu, rate_bps):
    if section is None:
        return None
    cobalt = Cobalt(target_us=section.field("target", positive_time_us, default=5000),
                    interval_us=section.field("interval", positive_time_us, default=100000),
                    ecn=section.field("ecn", boolean, default=True), mtu=mtu)
    if cobalt.target_us is not None and cobalt.interval_us is not None \
            and cobalt.target_us >= cobalt.interval_us:
        section.problem(section.sub_path("target"), section.data.get("target", "5ms"),
                        f"must be less than the interval, "
                        f"{format_time_us(cobalt.interval_us)}")
    if rate_bps is None:
        section.problems.append(f"{section.path}: COBALT needs a rate: with an unlimited "
                                "rate no queue ever builds")
    section.reject_unknown()
    return cobalt


def _sojourn_ramp(section):
    if section is None:
        return None
    target = section.field("target", positive_time_us, default=1, required=True)
    section.reject_unknown()
    return target


def _protocol(value):
    if isinstance(value, str) and value in PROTOCOLS:
        return PROTOCOLS[value]
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 255:
        return value
    raise ValueError(f"expected {', '.join(PROTOCOLS)} or an IP protocol number 0 to 255")


def _class_matches(section):
    """The priority section's list of matches; `port` (source or destination)
    gives two."""
    matches = []
    for entry in section.entries("match", "expected a list of matches, e.g. [{protocol: udp}]"):
        dscp = entry.field("dscp", int_in(0, 63, "(DSCP)"))
        protocol = entry.field("protocol", _protocol)
        ports = {key: entry.field(key, int_in(0, 65535, "(port)"))
                 for key in ("port", "src_port", "dst_port")}
        entry.reject_unknown()
        given = [k for k, v in ports.items() if v is not None]
        if dscp is None and protocol is None and not given:
            entry.problems.append(f"{entry.path}: empty; give dscp, protocol and/or ports")
        if given and protocol not in PORT_PROTOCOLS:
            entry.problems.append(f"{entry.path}: {', '.join(given)} needs protocol tcp or udp")
        if ports["port"] is not None and len(given) > 1:
            entry.problems.append(f"{entry.path}: give port, or src_port/dst_port, not both")
        if ports["port"] is not None:
            matches.append(ClassMatch(dscp, protocol, src_port=ports["port"]))
            matches.append(ClassMatch(dscp, protocol, dst_port=ports["port"]))
        else:
            matches.append(ClassMatch(dscp, protocol, ports["src_port"], ports["dst_port"]))
    return tuple(matches)


def _priority(section, mtu, rate_bps):
    if section is None:
        return None
    priority = Priority(
        match=_class_matches(section),
        queue_packets=section.field("queue", int_in(1, 100000, "packets"),
                                    default=DEFAULT_QUEUE_PACKETS),
        queue_bytes=section.field("queue_bytes", _size),
        red=_red(section.section("red", required=False), mtu, rate_bps),
        share=section.field("share", _share),
        best_effort_share=section.field("best_effort_share", _share))
    if rate_bps is None:
        section.problems.append(f"{section.path}: a priority class needs a rate: with an "
                                "unlimited rate no queue ever builds")
    section.reject_unknown()
    return priority


def _direction(section, mtu, base_dir):
    schedule = read_rate_trace(section.section("rate_trace", required=False), base_dir)
    if "rate_trace" in section.data and "rate" in section.data:
        section.problems.append(f"{section.sub_path('rate')}: the rate_trace gives the rate; "
                                "leave rate out")
    if "rate_trace" in section.data and "rate_changes" in section.data:
        section.problems.append(f"{section.sub_path('rate_changes')}: give rate_changes or "
                                "rate_trace, not both")
    rate = schedule.mean_rate_bps() if schedule else section.field("rate", _rate)
    if schedule and not MIN_RATE_BPS <= rate <= MAX_RATE_BPS:
        trace = section.section("rate_trace")
        trace.problem(trace.sub_path("file"), trace.data["file"],
                      f"its mean rate, {format_rate(rate)}, is out of range; allowed "
                      f"{format_rate(MIN_RATE_BPS)} to {format_rate(MAX_RATE_BPS)}")
    schedule = schedule or read_rate_changes(section, section.data.get("rate_changes"), _rate)
    direction = Direction(
        rate_bps=rate,
        delay_us=section.field("delay", _delay, default=0),
        queue_packets=section.field("queue", int_in(1, 100000, "packets"),
                                    default=DEFAULT_QUEUE_PACKETS),
        overhead_bytes=section.field("overhead", int_in(0, 1000, "bytes"), default=0),
        arq=_arq(section.section("arq", required=False)),
        loss=_loss(section.section("loss", required=False)),
        queue_bytes=section.field("queue_bytes", _size),
        red=_red(section.section("red", required=False), mtu, rate),
        cobalt=_cobalt(section.section("cobalt", required=False), mtu, rate),
        sojourn_target_us=_sojourn_ramp(section.section("sojourn_ramp", required=False)),
        priority=_priority(section.section("priority", required=False), mtu, rate),
        jitter=read_jitter(section.section("jitter", required=False)),
        delay_spikes=read_spikes(section.section("delay_spikes", required=False), _probability),
        reorder=section.field("reorder", _probability, default=0.0),
        duplicate=section.field("duplicate", _probability, default=0.0),
        corrupt=section.field("corrupt", _probability, default=0.0),
        rate_schedule=schedule,
        send_buffer=section.field("link_buffer", _size),
    )
    if direction.send_buffer and direction.send_buffer < mtu + direction.overhead_bytes:
        section.problem(section.sub_path("link_buffer"), section.data["link_buffer"],
                        f"must hold a frame of the MTU with its overhead, "
                        f"{mtu + direction.overhead_bytes} bytes or more")
    if direction.jitter and direction.jitter.reorder and direction.arq \
            and direction.arq.in_order:
        section.problems.append(
            f"{section.sub_path('jitter')}.reorder: cannot be combined with arq.in_order: "
            "in-order release holds every packet behind the one ahead of it")
    if direction.rate_schedule is not None and direction.priority is not None:
        section.problems.append(f"{section.sub_path('priority')}: cannot be combined with a "
                                "rate that changes over time")
    if direction.cobalt is not None:
        for key, given in (("red", direction.red), ("priority", direction.priority),
                           ("link_buffer", direction.send_buffer),
                           ("rate_trace" if "rate_trace" in section.data else "rate_changes",
                            direction.rate_schedule)):
            if given:
                section.problems.append(
                    f"{section.sub_path('cobalt')}: cannot be combined with {key}: COBALT "
                    "judges each packet when it leaves one FIFO router queue, which the "
                    "link alone drains at one rate")
    if direction.priority or direction.rate_schedule or (direction.send_buffer and direction.arq):
        if direction.queue_packets is not None and \
                direction.queue_packets > MAX_DEFERRED_PACKETS:
            section.problem(section.sub_path("queue"), direction.queue_packets,
                            f"with a priority class, a varying rate or a link buffer with "
                            f"ARQ, best effort queues at most {MAX_DEFERRED_PACKETS} packets")
        if direction.sojourn_target_us is not None:
            section.problems.append(
                f"{section.sub_path('sojourn_ramp')}: cannot be combined with priority, a "
                "varying rate or a link buffer with ARQ: a best-effort packet's sojourn is "
                "known only when it leaves the queue")
    section.reject_unknown()
    return direction


DISTRIBUTIONS = ("static", "exponential", "uniform")


def _duration(section):
    kind = section.field("distribution", choice(DISTRIBUTIONS), required=True)
    if kind == "static":
        duration = Duration("static", value_us=section.field("value", positive_time_us,
                                                             default=1, required=True))
    elif kind in DISTRIBUTIONS:
        low = section.field("min", _delay, default=0, required=kind == "uniform")
        high = section.field("max", positive_time_us, default=MAX_DELAY_US * 1000,
                             required=kind == "uniform")
        mean = (section.field("mean", positive_time_us, default=1, required=True)
                if kind == "exponential" else 0)
        if low >= high:
            section.problems.append(f"{section.path}: min {format_time_us(low)} must be "
                                    f"less than max {format_time_us(high)}")
        elif kind == "exponential" and mean > high:
            section.problems.append(f"{section.path}: mean {format_time_us(mean)} must not "
                                    f"exceed max {format_time_us(high)}")
        duration = Duration(kind, mean_us=mean, min_us=low, max_us=high)
    else:
        duration = None
    section.reject_unknown()
    return duration


def _vector(section, state_names):
    """A probability vector over state names, summing to 1."""
    vector = {}
    for name in section.data:
        section.known.add(name)
        if name not in state_names:
            section.problem(section.sub_path(name), section.data[name],
                            f"unknown state; the states are {', '.join(state_names)}")
            continue
        vector[name] = section.field(name, _probability, default=0.0)
    total = sum(vector.values())
    if section.data and abs(total - 1) > PROBABILITY_TOLERANCE:
        section.problems.append(f"{section.path}: probabilities sum to {total:g}; "
                                "they must sum to 1")
    if not section.data:
        section.problems.append(f"{section.path}: empty; name at least one state")
    return vector


def _error(section, key):
    """One probability for both directions, or one per direction."""
    value = section.data.get(key)
    if isinstance(value, dict):
        per_direction = section.section(key)
        errors = {d: per_direction.field(d, _probability, default=0.0, required=True)
                  for d in DIRECTIONS}
        per_direction.reject_unknown()
        return errors
    both = section.field(key, _probability, default=0.0, required=True)
    return {d: both for d in DIRECTIONS}


def _states(section):
    if section is None:
        return None
    states_section = section.section("states")
    names = []
    for key in states_section.data:
        if isinstance(key, str):
            names.append(key)
        else:
            states_section.problem(states_section.sub_path(key), key,
                                   "expected a state name as text: quote it")
    states = {}
    for name in names:
        state = states_section.section(name)
        error = _error(state, "error")
        duration = _duration(state.section("duration"))
        next_states = _vector(state.section("next"), names)
        state.reject_unknown()
        states[name] = LinkState(name, error, duration, next_states)
    if not names:
        states_section.problems.append(f"{states_section.path}: define at least one state")
    start = _vector(section.section("start"), names)
    seed = section.field("seed", int_in(0, 2**63 - 1, "(seed)"))
    section.reject_unknown()
    return StateChain(start=start, states=states, seed=seed)


def parse_profile(data, source="profile", default_name="profile", base_dir="."):
    """Validates parsed YAML into a Profile, or raises ProfileError; files it
    names (rate traces) are relative to `base_dir`."""
    problems = []
    top = Section(data, "", problems)
    name = top.field("name", safe_name, default=default_name)
    description = top.field("description", text, default="")
    mtu = top.field("mtu", int_in(68, 9000, "bytes"), default=1500)
    directions = {d: _direction(top.section(d), mtu, base_dir) for d in DIRECTIONS}
    states = _states(top.section("link_states", required=False))
    top.reject_unknown()
    if problems:
        raise ProfileError(source, problems)
    return Profile(name=name, description=description, mtu=mtu, states=states, **directions)


def load_profile(path):
    """Reads and validates a profile file."""
    path = Path(path)
    try:
        data = load_yaml(path)
    except ValueError as err:
        raise ProfileError(path, [str(err)]) from None
    return parse_profile(data, source=str(path), default_name=path.stem, base_dir=path.parent)
