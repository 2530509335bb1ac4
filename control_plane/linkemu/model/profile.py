"""Link profiles: YAML files validated into a typed model.

A profile describes both directions of the emulated link. Every field is
checked before anything is written to a switch; all problems are reported
together, each with its path, the value found and what is allowed.
"""

import math
from dataclasses import dataclass
from pathlib import Path

from ..program import constants as p4
from .fields import Section
from .files import load_yaml
from .jitter import DelaySpikes, Jitter, read_jitter, read_spikes
from .link_states import Duration, LinkState, StateChain
from .profile_schema import MAX_RATE_BPS, MIN_RATE_BPS, PROFILE, PROTOCOLS, packets, size
from .rate_schedule import read_rate_changes, read_rate_trace
from .units import format_rate, format_time_us

DIRECTIONS = ("downlink", "uplink")
PROBABILITY_TOLERANCE = 1e-6
# Best effort behind a priority class, or under a varying rate, waits in the
# data plane's ring of deferred packets.
MAX_DEFERRED_PACKETS = p4.DEFER_RING
# Flow isolation hands out tickets from a ring of FQ_SLOTS a direction; half
# stays free for the packets that have left their queue but not yet read it.
MAX_FLOW_QUEUED = 4096
PORT_PROTOCOLS = (PROTOCOLS["tcp"], PROTOCOLS["udp"])


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
    isolation: str = "flowblind"
    quantum_bytes: int | None = None   # DRR's, with flow isolation; None: a frame

    def quantum(self, overhead_bytes):
        """DRR's quantum in link bytes: the profile's, or a frame of the MTU
        on the link."""
        return self.quantum_bytes or self.mtu + overhead_bytes

    def describe(self):
        quantum = f", quantum {self.quantum_bytes} B" if self.quantum_bytes else ""
        return (f"COBALT target {format_time_us(self.target_us)} interval "
                f"{format_time_us(self.interval_us)}{'' if self.ecn else ' without ECN'}, "
                f"{self.isolation}{quantum}")


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

    @property
    def isolates_flows(self):
        """Its router queue is split into flow queues (COBALT's flows or
        triple-isolate)."""
        return self.cobalt is not None and self.cobalt.isolation != "flowblind"

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


def _arq(section):
    if section is None:
        return None
    arq = Arq(delay_us=section.field("delay"),
              max_retransmissions=section.field("max_retransmissions"),
              in_order=section.field("in_order"))
    section.reject_unknown()
    return arq


def _loss(section):
    if section is None:
        return None
    model = section.field("model")
    p = section.field("p")
    if model == "gilbert-elliott":
        loss = LossModel(model, to_bad=p, to_good=section.field("r", required=True),
                         bad_loss=section.field("bad_loss"),
                         good_loss=section.field("good_loss"))
    else:
        loss = LossModel(model, to_bad=0.0, to_good=1.0, bad_loss=p, good_loss=p)
    section.reject_unknown()
    return loss


def _red(section, mtu, rate_bps):
    if section is None:
        return None
    mode = section.field("mode")
    threshold = size if mode == "bytes" else packets
    low = section.field("min", convert=threshold)
    high = section.field("max", convert=threshold)
    red = Red(mode=mode, min_th=low, max_th=high, max_p=section.field("max_p"),
              weight=section.field("weight"), gentle=section.field("gentle"),
              ecn=section.field("ecn"), mean_packet_bytes=section.field("mean_packet", default=mtu))
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
    cobalt = Cobalt(target_us=section.field("target"), interval_us=section.field("interval"),
                    ecn=section.field("ecn"), mtu=mtu, isolation=section.field("isolation"),
                    quantum_bytes=section.field("quantum"))
    if cobalt.quantum_bytes is not None and cobalt.isolation == "flowblind":
        section.problem(section.sub_path("quantum"), section.data["quantum"],
                        "a quantum needs flow isolation (isolation: flows or triple-isolate)")
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
    target = section.field("target")
    section.reject_unknown()
    return target


def _class_matches(section):
    """The priority section's list of matches; `port` (source or destination)
    gives two."""
    matches = []
    for entry in section.entries("match", "expected a list of matches, e.g. [{protocol: udp}]"):
        dscp = entry.field("dscp")
        protocol = entry.field("protocol")
        ports = {key: entry.field(key) for key in ("port", "src_port", "dst_port")}
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
        queue_packets=section.field("queue"),
        queue_bytes=section.field("queue_bytes"),
        red=_red(section.section("red"), mtu, rate_bps),
        share=section.field("share"),
        best_effort_share=section.field("best_effort_share"))
    if rate_bps is None:
        section.problems.append(f"{section.path}: a priority class needs a rate: with an "
                                "unlimited rate no queue ever builds")
    section.reject_unknown()
    return priority


def _direction(section, mtu, base_dir):
    schedule = read_rate_trace(section.section("rate_trace"), base_dir)
    if "rate_trace" in section.data and "rate" in section.data:
        section.problems.append(f"{section.sub_path('rate')}: the rate_trace gives the rate; "
                                "leave rate out")
    if "rate_trace" in section.data and "rate_changes" in section.data:
        section.problems.append(f"{section.sub_path('rate_changes')}: give rate_changes or "
                                "rate_trace, not both")
    rate = schedule.mean_rate_bps() if schedule else section.field("rate")
    if schedule and not MIN_RATE_BPS <= rate <= MAX_RATE_BPS:
        trace = section.section("rate_trace")
        trace.problem(trace.sub_path("file"), trace.data["file"],
                      f"its mean rate, {format_rate(rate)}, is out of range; allowed "
                      f"{format_rate(MIN_RATE_BPS)} to {format_rate(MAX_RATE_BPS)}")
    schedule = schedule or read_rate_changes(section)
    direction = Direction(
        rate_bps=rate,
        delay_us=section.field("delay"),
        queue_packets=section.field("queue"),
        overhead_bytes=section.field("overhead"),
        arq=_arq(section.section("arq")),
        loss=_loss(section.section("loss")),
        queue_bytes=section.field("queue_bytes"),
        red=_red(section.section("red"), mtu, rate),
        cobalt=_cobalt(section.section("cobalt"), mtu, rate),
        sojourn_target_us=_sojourn_ramp(section.section("sojourn_ramp")),
        priority=_priority(section.section("priority"), mtu, rate),
        jitter=read_jitter(section.section("jitter")),
        delay_spikes=read_spikes(section.section("delay_spikes")),
        reorder=section.field("reorder"),
        duplicate=section.field("duplicate"),
        corrupt=section.field("corrupt"),
        rate_schedule=schedule,
        send_buffer=section.field("link_buffer"),
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
    if direction.isolates_flows:
        if direction.queue_packets is not None and direction.queue_packets > MAX_FLOW_QUEUED:
            section.problem(section.sub_path("queue"), direction.queue_packets,
                            f"with flow isolation at most {MAX_FLOW_QUEUED} packets")
        if direction.arq is not None and direction.arq.in_order:
            section.problems.append(f"{section.sub_path('cobalt')}.isolation: "
                                    f"{direction.cobalt.isolation} cannot be combined with "
                                    "arq.in_order")
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


def _duration(section):
    kind = section.field("distribution")
    if kind == "static":
        duration = Duration("static", value_us=section.field("value", required=True))
    elif kind is not None:
        low = section.field("min", required=kind == "uniform")
        high = section.field("max", required=kind == "uniform")
        mean = section.field("mean", required=True) if kind == "exponential" else 0
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
        vector[name] = section.field(name, default=0.0)
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
        errors = {d: per_direction.field(d) for d in DIRECTIONS}
        per_direction.reject_unknown()
        return errors
    both = section.field(key)
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
    seed = section.field("seed")
    section.reject_unknown()
    return StateChain(start=start, states=states, seed=seed)


def parse_profile(data, source="profile", default_name="profile", base_dir="."):
    """Validates parsed YAML into a Profile, or raises ProfileError; files it
    names (rate traces) are relative to `base_dir`."""
    problems = []
    top = Section(data, "", problems, PROFILE)
    name = top.field("name", default=default_name)
    description = top.field("description")
    mtu = top.field("mtu")
    directions = {d: _direction(top.section(d), mtu, base_dir) for d in DIRECTIONS}
    states = _states(top.section("link_states"))
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
