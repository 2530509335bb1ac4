"""The P4 program's side of the contract: its tables, groups and counters.

Everything that uses a table, action or counter of p4src/ lives here, by the
names program.constants takes from the build;
the rest of the control plane speaks in profiles and port layouts.
"""

import math
import time
from dataclasses import dataclass

from ..model.jitter import delay_table
from ..model.profile import ProfileError
from ..program import constants as p4
from .p4runtime import (MulticastGroup, P4RuntimeError, Range, TableEntry, Ternary,
                        mac_to_int)

DIRECTION_IDS = {"downlink": p4.DIR_DOWNLINK, "uplink": p4.DIR_UPLINK}
DIRECTION_NAMES = {v: k for k, v in DIRECTION_IDS.items()}
CLASS_IDS = {"best_effort": 0, "priority": 1}
# The hold ports (+1: each one's turn lane): never attach.
HOLD_PORTS = range(p4.HOLD_PORT_BASE, p4.HOLD_PORT_BASE + 4 * (p4.HOLD_PORT_MASK + 1), 4)
FLOOD_GROUPS = {"downlink": 1, "uplink": 2}
# With in-order release, a packet waits past its due instant for earlier
# packets at most the longest ARQ hold plus this margin; only a predecessor
# that vanished from the hold loop (a pipeline change) takes that long.
STALL_MARGIN_US = 1_000_000
PROBABILITY_ONE = 1 << 16   # probabilities are thresholds on a 16-bit random

# Counter (its P4Info alias) -> what it counts, per direction; the router
# queue's counters are kept per class (QUEUE_COUNTERS).
COUNTERS = {
    "link_in": "packets entering the link",
    "link_out": "packets delivered at the far end (a flooded one once)",
    "drop_queue": "dropped: router queue full",
    "drop_aqm": "dropped: RED (not ECN-capable, or above max_th)",
    "drop_aqm_ect": "of which ECN-capable (above max_th, or ECN off)",
    "ecn_marks": "marked CE by RED",
    "ramp_marks": "ECT(1) marked CE by the sojourn-time ramp",
    "drop_link_error": "dropped: link error (after ARQ, if any)",
    "drop_loss_model": "dropped: Bernoulli / Gilbert-Elliott loss model",
    "drop_malformed": "dropped: not an Ethernet frame",
    "drop_hold": "dropped on arrival: the hold loop carried as many as it can",
    "retransmissions": "ARQ retransmission attempts",
    "arq_delayed": "packets delayed by ARQ",
    "held_behind": "packets held behind a retransmission (in-order release)",
    "release_skips": "packets released before an earlier one of their direction",
    "release_paced": "held packets due that went round once more: BMv2's output queue",
    "queue_enter": "packets that waited in the router queue",
    "queue_leave": "packets that left the router queue for the link",
    "sent_ahead": "packets sent ahead of the others (reorder)",
    "duplicated": "packets released twice (duplicate; link_out counts both)",
    "corrupted": "packets with one bit flipped (corrupt)",
}
# Where a frame that entered the link ends: delivered, or dropped once
# (drop_aqm_ect is a part of drop_aqm; malformed frames never entered).
LINK_EXITS = ("link_out", "drop_queue", "drop_aqm", "drop_link_error", "drop_loss_model",
              "drop_hold")
# Where a frame comes in: to the link, as a duplicate, to a router queue.
ENTRY_COUNTERS = ("link_in", "duplicated", "queue_enter")
QUEUE_COUNTERS = ("drop_queue", "drop_aqm", "drop_aqm_ect", "ecn_marks", "ramp_marks",
                  "queue_enter", "queue_leave")
# A held packet carries its state (link_state_h) ahead of the frame, and BMv2
# counts those bytes too. The counters that can count a held packet have a
# second half of cells for held packets (HELD_CELLS in
# p4src/v1model/include/define_v1model.p4), which counter_cells folds into the
# first less the state's bytes; queue_leave counts held packets only.
HELD_CELLS = ("link_out", "drop_link_error")
HELD_ONLY = ("queue_leave",)


def queue_index(direction, cls):
    """The index of a class's router queue in per-class registers and counters
    (a direction's best effort has its direction's)."""
    return CLASS_IDS[cls] * 2 + DIRECTION_IDS[direction]


def byte_cost_q(rate_bps):
    """Serialization time of one byte in microseconds, Q.20 fixed point."""
    if rate_bps is None:
        return 0
    return round(8e6 / rate_bps * (1 << p4.TIME_FRAC_BITS))


def threshold(probability):
    """A probability as a threshold on the data plane's 16-bit random numbers."""
    return round(probability * PROBABILITY_ONE)


def stall_us(direction):
    """How long a due packet waits for earlier ones; 0 turns in-order off.

    A packet behind one that drew a longer delay (jitter, a spike) waits
    for it too, unless the profile lets jitter reorder."""
    arq, jitter = direction.arq, direction.jitter
    if (arq is not None and not arq.in_order) or (jitter is not None and jitter.reorder):
        return 0
    held = arq.max_retransmissions * arq.delay_us if arq else 0
    if jitter is not None:
        held += max(delay_table(jitter, direction.delay_us)) - direction.delay_us
    if direction.delay_spikes is not None:
        held += direction.delay_spikes.length_us
    return held + STALL_MARGIN_US


Q16 = 1 << 16
RED_CURVE_STEPS = 32         # steps of p_b between min_th and max_th
RED_DECAY_STEP = 0.98        # the idle decay factor changes by at most 2 % a step
RED_DECAY_FLOOR = 1e-4       # beyond this, the average restarts from 0
SOJOURN_RAMP_STEPS = 32




def link_errors(profile, name):
    return profile.states is not None and profile.states.has_errors(name)


def defers_best_effort(profile, name):
    """Whether direction `name` decides a best-effort packet's start late: a
    priority class may go first, the rate in force then applies, or a link
    send buffer waits for a frame retransmitted by ARQ."""
    d = profile.directions()[name]
    return bool(d.priority or d.rate_schedule or
                (d.send_buffer and d.arq and link_errors(profile, name)))


def features(profile, name):
    """The features bitmap of direction `name`: the data plane skips the rest."""
    direction = profile.directions()[name]
    return ((p4.FEATURE_LOSS_MODEL if direction.loss else 0)
            | (p4.FEATURE_SOJOURN_RAMP if direction.sojourn_target_us else 0)
            | (p4.FEATURE_DEFERRED if defers_best_effort(profile, name) else 0)
            | (p4.FEATURE_DELAY_VARIATION if direction.jitter or direction.delay_spikes else 0)
            | (p4.FEATURE_PACKET_FAULTS if direction.reorder or direction.duplicate
               or direction.corrupt else 0)
            | (p4.FEATURE_PRIORITY if direction.priority else 0)
            | (p4.FEATURE_LINK_ERRORS if link_errors(profile, name) else 0))


def is_plain(profile, name):
    """Whether direction `name` has no optional feature but link errors and
    no RED: its arrival then takes the data plane's cheapest path."""
    direction = profile.directions()[name]
    return features(profile, name) & ~p4.FEATURE_LINK_ERRORS == 0 and direction.red is None


def buffer_hold_us(direction):
    """How long a frame keeps its place in the link send buffer after its
    serialization: until its link-layer acknowledgement is back, a round
    trip of the propagation delay (docs/link-model.md)."""
    return 2 * direction.delay_us if direction.send_buffer else 0


def link_entries(profile):
    """How each direction's arrival goes: a plain direction's with its
    parameters in place (its link_params and its best effort's queue), the
    others' through link_params and the rest."""
    best_effort = {q.direction: q for q in class_queues(profile) if q.cls == "best_effort"}
    entries = []
    for link in link_params_entries(profile):
        name = DIRECTION_NAMES[link.match["dir"]]
        if not is_plain(profile, name):
            entries.append(TableEntry(p4.TABLE_LINK, link.match, p4.ACTION_FEATURED))
            continue
        queue = best_effort[name]
        entries.append(TableEntry(p4.TABLE_LINK, link.match, p4.ACTION_PLAIN, {
            **{key: link.params[key] for key in ("byte_cost_q", "overhead_bytes", "delay_us",
                                                 "send_buffer", "buffer_hold_us")},
            "queue_limit": queue.packets,
            "queue_bytes_limit": queue.octets or 0,
            "link_errors": int(bool(link.params["features"] & p4.FEATURE_LINK_ERRORS))}))
    return entries


def release_entries(profile):
    """How long a due packet of each direction waits for earlier ones."""
    return [TableEntry(p4.TABLE_RELEASE, {"dir": DIRECTION_IDS[name]}, p4.ACTION_DECIDE,
                       {"stall_us": stall_us(direction)})
            for name, direction in profile.directions().items()]


def arq_entries(profile):
    """Link-layer retransmission of the directions that have it."""
    return [TableEntry(p4.TABLE_ARQ, {"dir": DIRECTION_IDS[name]}, p4.ACTION_RETRANSMIT,
                       {"max_retx": direction.arq.max_retransmissions,
                        "retx_delay_us": direction.arq.delay_us})
            for name, direction in profile.directions().items() if direction.arq]


def link_error_directions(switch):
    """The directions for which the profile on the switch draws link errors."""
    return {DIRECTION_NAMES[e.match["dir"]] for e in switch.read_table(p4.TABLE_LINK_PARAMS)
            if e.params["features"] & p4.FEATURE_LINK_ERRORS}


def link_params_entry(profile, name, rate_bps, down=False):
    """Direction `name`'s parameters at `rate_bps` (the rate over time changes
    only that), or with the link down (an outage): what the arrival of a
    direction with optional features, and a deferred packet's passes, read."""
    direction = profile.directions()[name]
    return TableEntry(
        table=p4.TABLE_LINK_PARAMS,
        match={"dir": DIRECTION_IDS[name]},
        action=p4.ACTION_SET_PARAMS,
        params={
            "byte_cost_q": byte_cost_q(rate_bps),
            "overhead_bytes": direction.overhead_bytes,
            "delay_us": direction.delay_us,
            "features": features(profile, name),
            "down": int(down),
            "send_buffer": direction.send_buffer or 0,
            "buffer_hold_us": buffer_hold_us(direction),
        })


def link_params_entries(profile):
    """At the profile's rate: a RateDriver takes the rate over time from there."""
    return [link_params_entry(profile, name, direction.rate_bps)
            for name, direction in profile.directions().items()]


@dataclass(frozen=True)
class ClassQueue:
    """The router queue of one traffic class of a direction."""

    direction: str
    cls: str
    packets: int
    octets: int | None
    share: float | None
    red: object
    rate_bps: float | None
    deferred: bool   # its starts are decided late (defers_best_effort)

    def key(self):
        return {"queue": queue_index(self.direction, self.cls)}


def class_queues(profile):
    """Every class's router queue: best effort per direction, and priority
    where the profile splits the traffic."""
    queues = []
    for name, d in profile.directions().items():
        p = d.priority
        queues.append(ClassQueue(name, "best_effort", d.queue_packets, d.queue_bytes,
                                 p.best_effort_share if p else None, d.red, d.rate_bps,
                                 deferred=defers_best_effort(profile, name)))
        if p:
            queues.append(ClassQueue(name, "priority", p.queue_packets, p.queue_bytes,
                                     p.share, p.red, d.rate_bps, deferred=False))
    return queues


def queue_params_entries(profile):
    return [TableEntry(p4.TABLE_QUEUE_PARAMS, q.key(), p4.ACTION_SET_QUEUE,
                       {"queue_limit": q.packets, "queue_bytes_limit": q.octets or 0,
                        "share_cost_q": byte_cost_q(q.rate_bps * q.share) if q.share else 0,
                        "deferred": int(q.deferred), "aqm": int(q.red is not None)})
            for q in class_queues(profile)]


def _ternary(value, bits):
    return Ternary(0, 0) if value is None else Ternary(value, 2**bits - 1)


def traffic_class_entries(profile):
    entries = []
    for name, direction in profile.directions().items():
        if direction.priority is None:
            continue
        for match in direction.priority.match:
            entries.append(TableEntry(
                p4.TABLE_TRAFFIC_CLASS,
                {"dir": DIRECTION_IDS[name], "is_ip": 1,
                 "dscp": _ternary(match.dscp, 6), "protocol": _ternary(match.protocol, 8),
                 "src_port": _ternary(match.src_port, 16),
                 "dst_port": _ternary(match.dst_port, 16)},
                p4.ACTION_SET_CLASS, {"cls": CLASS_IDS["priority"]},
                priority=1))
    return entries


def link_state_entries(errors, next_errors=None, at_us=0):
    """Entries for per-direction error probabilities {direction: p}; with
    `next_errors`, those take over at `at_us` on the switch's clock."""
    next_errors = errors if next_errors is None else next_errors
    return [TableEntry(p4.TABLE_LINK_STATE, {"dir": DIRECTION_IDS[name]},
                       p4.ACTION_SET_ERROR,
                       {"threshold": threshold(p), "next": threshold(next_errors[name]),
                        "at": at_us})
            for name, p in errors.items()]


def loss_model_entries(profile):
    entries = []
    for name, direction in profile.directions().items():
        loss = direction.loss
        if loss is None:
            continue
        dir_id = DIRECTION_IDS[name]
        entries.append(TableEntry(p4.TABLE_LOSS_MODEL, {"dir": dir_id, "bad": 0},
                                  p4.ACTION_SET_GOOD,
                                  {"to_bad": threshold(loss.to_bad),
                                   "loss": threshold(loss.good_loss)}))
        entries.append(TableEntry(p4.TABLE_LOSS_MODEL, {"dir": dir_id, "bad": 1},
                                  p4.ACTION_SET_BAD,
                                  {"to_good": threshold(loss.to_good),
                                   "loss": threshold(loss.bad_loss)}))
    return entries


def jitter_entries(profile):
    return [TableEntry(p4.TABLE_JITTER, {"dir": DIRECTION_IDS[name], "rand_index": index},
                       p4.ACTION_SET_DELAY, {"delay_us": delay})
            for name, direction in profile.directions().items() if direction.jitter
            for index, delay in enumerate(delay_table(direction.jitter, direction.delay_us))]


def delay_spike_entries(profile):
    return [TableEntry(p4.TABLE_DELAY_SPIKES, {"dir": DIRECTION_IDS[name]},
                       p4.ACTION_SET_SPIKE,
                       {"threshold": threshold(d.delay_spikes.probability),
                        "length_us": d.delay_spikes.length_us})
            for name, d in profile.directions().items() if d.delay_spikes]


def packet_fault_entries(profile):
    return [TableEntry(p4.TABLE_PACKET_FAULTS, {"dir": DIRECTION_IDS[name]},
                       p4.ACTION_SET_FAULTS,
                       {"reorder": threshold(d.reorder), "duplicate": threshold(d.duplicate),
                        "corrupt": threshold(d.corrupt)})
            for name, d in profile.directions().items() if d.reorder or d.duplicate or d.corrupt]


def red_curve(red):
    """[(low, high, p_b)] on the average in Q.16, p_b None meaning drop all.

    Steps of p_b = max_p (avg - min) / (max - min), each at its midpoint; with
    gentle, max_p .. 1 between max and 2 max; everything is dropped above."""
    low, high = red.min_th, red.max_th
    steps = []
    width = (high - low) / RED_CURVE_STEPS
    for i in range(RED_CURVE_STEPS):
        mid = low + (i + 0.5) * width
        steps.append((low + i * width, low + (i + 1) * width,
                      red.max_p * (mid - low) / (high - low)))
    end = high
    if red.gentle:
        width = high / RED_CURVE_STEPS
        for i in range(RED_CURVE_STEPS):
            mid = high + (i + 0.5) * width
            steps.append((high + i * width, high + (i + 1) * width,
                          red.max_p + (1 - red.max_p) * (mid - high) / high))
        end = 2 * high
    rows = [(round(a * Q16), round(b * Q16) - 1, p) for a, b, p in steps]
    rows.append((round(end * Q16), 2**64 - 1, None))
    return rows


def red_decay(red, rate_bps):
    """[(low_us, high_us, factor)]: (1 - w)^m for m idle mean-packet times."""
    tx_us = red.mean_packet_bytes * 8 / rate_bps * 1e6
    step_us = math.log(RED_DECAY_STEP) / math.log(1 - red.weight) * tx_us

    def factor(idle_us):
        return (1 - red.weight) ** (idle_us / tx_us)

    edges = [0.0] + [step_us / 2**j for j in range(6, 0, -1)]
    k = 1
    while factor(k * step_us) > RED_DECAY_FLOOR:
        edges.append(k * step_us)
        k += 1
    bounds = sorted({round(e) for e in edges})
    return [(a, b - 1, factor((a + b) / 2)) for a, b in zip(bounds, bounds[1:]) if b > a]


def red_entries(profile):
    """Entries of the three RED tables, for the queues with RED."""
    entries = {p4.TABLE_RED_PARAMS: [], p4.TABLE_RED_CURVE: [], p4.TABLE_RED_DECAY: []}
    for queue in class_queues(profile):
        red = queue.red
        if red is None:
            continue
        key = queue.key()
        weight_q24 = round(red.weight * 2**24)
        if weight_q24 == 0:
            raise ValueError(f"RED weight {red.weight:g} is below the data plane's 2^-24")
        entries[p4.TABLE_RED_PARAMS].append(TableEntry(
            p4.TABLE_RED_PARAMS, key, p4.ACTION_SET_RED,
            {"bytes": int(red.mode == "bytes"), "weight_q24": weight_q24,
             "use_ecn": int(red.ecn)}))
        for low, high, p_b in red_curve(red):
            action, params = ((p4.ACTION_DROP_ALL, {}) if p_b is None else
                              (p4.ACTION_SIGNAL_WITH,
                               {"p_b_q16": max(1, round(p_b * Q16))}))
            entries[p4.TABLE_RED_CURVE].append(TableEntry(
                p4.TABLE_RED_CURVE, {**key, "avg": Range(low, high)}, action, params, priority=1))
        for low, high, factor in red_decay(red, queue.rate_bps):
            entries[p4.TABLE_RED_DECAY].append(TableEntry(
                p4.TABLE_RED_DECAY, {**key, "idle_us": Range(low, high)},
                p4.ACTION_DECAY, {"factor_q16": round(factor * Q16)}, priority=1))
    return entries


def sojourn_ramp(target_us):
    """[(low_us, high_us, p)]: 0 below target/2, rising to 1 at the target."""
    half = target_us / 2
    width = half / SOJOURN_RAMP_STEPS
    rows = [(round(half + i * width), round(half + (i + 1) * width) - 1,
             (i + 0.5) / SOJOURN_RAMP_STEPS) for i in range(SOJOURN_RAMP_STEPS)]
    rows = [r for r in rows if r[1] >= r[0]]
    return rows + [(round(target_us), 2**48 - 1, 1.0)]


def sojourn_ramp_entries(profile):
    return [TableEntry(p4.TABLE_SOJOURN_RAMP,
                       {"dir": DIRECTION_IDS[name], "sojourn_us": Range(low, high)},
                       p4.ACTION_MARK_WITH, {"p_q16": round(p * Q16)},
                       priority=1)
            for name, direction in profile.directions().items() if direction.sojourn_target_us
            for low, high, p in sojourn_ramp(direction.sojourn_target_us)]


def event_log_entries(directions):
    """Entries that make `directions` log every packet's fate."""
    return [TableEntry(p4.TABLE_EVENT_LOG, {"dir": DIRECTION_IDS[name]},
                       p4.ACTION_LOG_EVENTS) for name in directions]


@dataclass(frozen=True)
class Port:
    """A switch port and, when its side has several hosts, the host's MAC."""

    number: int
    mac: str | None = None

    @classmethod
    def parse(cls, text):
        """PORT or PORT@MAC, as given on the command line."""
        number, _, mac = text.partition("@")
        try:
            port = cls(int(number), mac or None)
        except ValueError:
            raise ValueError(f"{text!r}: expected PORT or PORT@MAC, e.g. 1@00:00:00:00:00:01")
        if port.mac is not None:
            parts = port.mac.split(":")
            if len(parts) != 6 or not all(len(p) == 2 and _is_hex(p) for p in parts):
                raise ValueError(f"{text!r}: {port.mac!r} is not a MAC address")
        return port


def _is_hex(text):
    try:
        int(text, 16)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class PortLayout:
    """Which switch ports face the fixed side and which the mobile side."""

    fixed: tuple
    mobile: tuple

    def __post_init__(self):
        sides = {"fixed": self.fixed, "mobile": self.mobile}
        for side, ports in sides.items():
            if not ports:
                raise ValueError(f"the {side} side needs at least one port")
            for port in ports:
                if not 1 <= port.number < HOLD_PORTS.start:
                    raise ValueError(f"{side} port {port.number}: allowed 1 to "
                                     f"{HOLD_PORTS.start - 1} (higher ports hold packets)")
                if len(ports) > 1 and port.mac is None:
                    raise ValueError(f"{side} port {port.number}: a side with several "
                                     "ports needs each host's MAC (PORT@MAC)")
        numbers = [p.number for p in self.fixed + self.mobile]
        if len(set(numbers)) != len(numbers):
            raise ValueError(f"a port is listed twice: {sorted(numbers)}")

    def table_entries(self):
        entries = [TableEntry(p4.TABLE_PORT_MAP, {"ingress_port": p.number},
                              p4.ACTION_SET_DIRECTION,
                              {"dir": DIRECTION_IDS[direction]})
                   for direction, ports in (("downlink", self.fixed), ("uplink", self.mobile))
                   for p in ports]
        for direction, far in (("downlink", self.mobile), ("uplink", self.fixed)):
            dir_id = DIRECTION_IDS[direction]
            if len(far) == 1:
                entries.append(self._forward(dir_id, Ternary(0, 0), 1,
                                             p4.ACTION_TO_PORT, {"port": far[0].number}))
                continue
            for port in far:
                entries.append(self._forward(dir_id, Ternary(mac_to_int(port.mac), 2**48 - 1),
                                             2, p4.ACTION_TO_PORT, {"port": port.number}))
            entries.append(self._forward(dir_id, Ternary(0, 0), 1, p4.ACTION_FLOOD,
                                         {"group": FLOOD_GROUPS[direction]}))
        return entries

    @staticmethod
    def _forward(dir_id, dst, priority, action, params):
        return TableEntry(p4.TABLE_FORWARD,
                          {"dir": dir_id, "dst_addr": dst},
                          action, params, priority)

    def multicast_groups(self):
        """Flooding to each side, and each port twice (duplicates)."""
        return [MulticastGroup(FLOOD_GROUPS["downlink"], tuple(p.number for p in self.mobile)),
                MulticastGroup(FLOOD_GROUPS["uplink"], tuple(p.number for p in self.fixed))] + [
            MulticastGroup(p4.DUP_GROUP_BASE + p.number, (p.number, p.number))
            for p in self.fixed + self.mobile]


def install(switch, p4info_path, bmv2_json_path, layout, profile):
    """Loads the program, then the port layout, then the profile."""
    switch.set_pipeline(p4info_path, bmv2_json_path)
    switch.write_multicast_groups(layout.multicast_groups())
    entries = layout.table_entries()
    for table in {e.table for e in entries}:
        switch.sync_table(table, [e for e in entries if e.table == table])
    switch.sync_table(p4.TABLE_LINK_STATE, link_state_entries({d: 0.0 for d in DIRECTION_IDS}))
    push_profile(switch, profile)


def profile_entries(profile):
    """{table: entries} of every table a profile sets, in the order they are
    written (queues before the link: a link entry never meets a class
    without one).

    A profile without link states makes the link error-free, and one with a
    single state gives the link that state's errors for good; with more, the
    error probabilities are left to the StateDriver walking its timeline."""
    tables = {p4.TABLE_QUEUE_PARAMS: queue_params_entries(profile),
              p4.TABLE_TRAFFIC_CLASS: traffic_class_entries(profile),
              p4.TABLE_LINK_PARAMS: link_params_entries(profile),
              p4.TABLE_RELEASE: release_entries(profile),
              p4.TABLE_ARQ: arq_entries(profile),
              p4.TABLE_LINK: link_entries(profile),
              p4.TABLE_LOSS_MODEL: loss_model_entries(profile),
              p4.TABLE_JITTER: jitter_entries(profile),
              p4.TABLE_DELAY_SPIKES: delay_spike_entries(profile),
              p4.TABLE_PACKET_FAULTS: packet_fault_entries(profile),
              **red_entries(profile),
              p4.TABLE_SOJOURN_RAMP: sojourn_ramp_entries(profile)}
    if profile.states is None:
        tables[p4.TABLE_LINK_STATE] = link_state_entries({d: 0.0 for d in DIRECTION_IDS})
    elif len(profile.states.states) == 1:
        (state,) = profile.states.states.values()
        tables[p4.TABLE_LINK_STATE] = link_state_entries(state.error)
    return tables


def entry_problems(profile, p4info):
    """Why push_profile cannot write `profile`: its entries are built and,
    with the program's P4Info, encoded against its field widths and counted
    against its table sizes. [] when it can."""
    try:
        tables = profile_entries(profile)
    except (ValueError, ArithmeticError) as err:   # beyond the data plane, or any number
        return [f"its table entries cannot be computed: {err}"]
    if p4info is None:
        return []
    problems = []
    for table, entries in tables.items():
        size = p4info.table(table).size
        if len(entries) > size:
            problems.append(f"{p4info.table(table).preamble.alias}: {len(entries)} entries; "
                            f"the table holds {size}")
        for entry in entries:
            try:
                p4info.table_entry(entry)
            except P4RuntimeError as err:
                problems.append(str(err))
                break   # one a table: the others are likely alike
    return problems


def push_profile(switch, profile):
    """Changes the link live, all or nothing (a profile the program cannot
    hold is refused before anything is written); packets already held keep
    their release times."""
    problems = entry_problems(profile, switch.p4info)
    if problems:
        raise ProfileError(profile.name, problems)
    switch.sync_tables(profile_entries(profile))


def in_flight(counters, direction):
    """Frames that entered `direction` and have neither left nor been dropped,
    from a read_counters() reading (a duplicate leaves twice)."""
    return (counters["link_in"][direction][0] + counters["duplicated"][direction][0]
            - sum(counters[name][direction][0] for name in LINK_EXITS))


def wait_until_idle(switch, timeout_s, poll_s=0.1):
    """Reads the counters until no frame is inside the link, for at most
    `timeout_s`; returns the last reading and {direction: frames} still
    inside then (empty once idle)."""
    deadline = time.monotonic() + timeout_s
    while True:
        counters = read_counters(switch)
        inside = {d: n for d in DIRECTION_IDS if (n := in_flight(counters, d)) > 0}
        if not inside or time.monotonic() > deadline:
            return counters, inside
        time.sleep(poll_s)


def counter_cells(switch, name):
    """{index: (packets, bytes)} of a counter, every byte count the frame's."""
    cells = {c.index: (c.packets, c.bytes) for c in switch.read_counter(name)}
    if name in HELD_ONLY:
        return {i: (packets, octets - p4.LINK_STATE_BYTES * packets)
                for i, (packets, octets) in cells.items()}
    if name not in HELD_CELLS:
        return cells
    half = len(cells) // 2
    return {i: (packets + cells[i + half][0],
                octets + cells[i + half][1] - p4.LINK_STATE_BYTES * cells[i + half][0])
            for i, (packets, octets) in cells.items() if i < half}


def read_counters(switch):
    """{counter: {direction: (packets, bytes)}} for every counter of the program.

    The router queue's counters also have a cell per class, keyed
    "direction/class" (e.g. "downlink/priority"); the direction's cell is the
    sum of its classes."""
    queues = {queue_index(d, c): (d, f"{d}/{c}") for d in DIRECTION_IDS for c in CLASS_IDS}
    counters = {}
    # Frames keep flowing between the reads: the ways in are read last, so a
    # reading never shows fewer frames inside than there are.
    for name in sorted(COUNTERS, key=lambda name: name in ENTRY_COUNTERS):
        cells = {}
        for index, (packets, octets) in counter_cells(switch, name).items():
            if name not in QUEUE_COUNTERS:
                if index in DIRECTION_NAMES:
                    cells[DIRECTION_NAMES[index]] = (packets, octets)
                continue
            if index not in queues:
                continue
            direction, queue = queues[index]
            cells[queue] = (packets, octets)
            total = cells.get(direction, (0, 0))
            cells[direction] = (total[0] + packets, total[1] + octets)
        counters[name] = cells
    return {name: counters[name] for name in COUNTERS}
