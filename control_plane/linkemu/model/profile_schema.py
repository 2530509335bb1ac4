"""The schema of a link profile: every field's kind, default and meaning, in
one tree (fields.Block). model.profile reads a profile by it; model.schema
makes docs/profiles.md's reference and schema/profile.schema.json of it."""

import math

from .fields import (RATE_JSON, SIZE_JSON, TIME_JSON, Block, Either, Entries, Field, Kind,
                     Names, boolean, choice, int_in, non_negative_time_us, positive_time_us,
                     safe_name, text, up_to_one)
from .jitter import DISTRIBUTIONS as JITTER_DISTRIBUTIONS, delay_table_kind
from .rate_schedule import DEFAULT_WINDOW_MS, window_ms
from .units import format_rate, format_time_us, parse_rate, parse_size, parse_time_us

MIN_RATE_BPS = 1e3
MAX_RATE_BPS = 10e9
MAX_DELAY_US = 60 * 10**6
DEFAULT_QUEUE_PACKETS = 1000  # Linux's default txqueuelen
PROTOCOLS = {"tcp": 6, "udp": 17, "icmp": 1, "icmpv6": 58}
LOSS_MODELS = ("bernoulli", "gilbert-elliott")
RED_MODES = ("packets", "bytes")
DURATIONS = ("static", "exponential", "uniform")
ISOLATIONS = ("flowblind", "flows", "triple-isolate")
PROBABILITY_JSON = {"type": "number", "minimum": 0, "maximum": 1}


def _rate(value):
    if value == "unlimited":
        return None
    bps = parse_rate(value)
    if not MIN_RATE_BPS <= bps <= MAX_RATE_BPS:
        raise ValueError(f"out of range; allowed {format_rate(MIN_RATE_BPS)} to "
                         f"{format_rate(MAX_RATE_BPS)}, or 'unlimited'")
    return bps


rate = Kind(_rate, f"a rate, {format_rate(MIN_RATE_BPS)} to {format_rate(MAX_RATE_BPS)} "
            "(bit, kbit, Mbit, Gbit), or `unlimited`",
            {"anyOf": [RATE_JSON, {"const": "unlimited"}]})


def _delay(value):
    us = parse_time_us(value)
    if not 0 <= us <= MAX_DELAY_US:
        raise ValueError(f"out of range; allowed 0s to {format_time_us(MAX_DELAY_US)}")
    return us


delay = Kind(_delay, f"a duration, 0s to {format_time_us(MAX_DELAY_US)}", TIME_JSON)


def _probability(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("expected a probability, a number in [0, 1]")
    if not 0 <= value <= 1:
        raise ValueError("out of range; a probability is in [0, 1]")
    return float(value)


probability = Kind(_probability, "a probability, 0 to 1", PROBABILITY_JSON)


def _open_unit_interval(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("expected a number in (0, 1)")
    if not 0 < value < 1:
        raise ValueError("out of range; allowed (0, 1), exclusive")
    return float(value)


open_unit_interval = Kind(_open_unit_interval, "a number above 0 and below 1",
                          {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1})


max_p = up_to_one("a probability")
share = up_to_one("a fraction of the link rate")


def _size(value):
    size = parse_size(value)
    if size <= 0:
        raise ValueError("must be more than 0 bytes")
    return size


size = Kind(_size, "a size above 0 (B, kB, MB)", SIZE_JSON)

# DRR's quantum: below a few hundred bytes a flow takes many rounds (each a
# pass of the switch) to send one frame; above 64 kB it is no longer fair.
QUANTUM_MIN, QUANTUM_MAX = 256, 65536


def _quantum(value):
    quantum = parse_size(value)
    if not QUANTUM_MIN <= quantum <= QUANTUM_MAX:
        raise ValueError(f"out of range; allowed {QUANTUM_MIN} B to {QUANTUM_MAX} B")
    return quantum


quantum = Kind(_quantum, f"a size, {QUANTUM_MIN} B to {QUANTUM_MAX} B", SIZE_JSON)


def _packets(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0 <= value < math.inf:
        raise ValueError("expected a number of packets, 0 or more")
    return float(value)


packets = Kind(_packets, "a number of packets, 0 or more", {"type": "number", "minimum": 0})
# RED's thresholds are packets or bytes as its mode says (the reader chooses).
threshold = Kind(_packets, "packets (a number), or with `mode: bytes` a size",
                 {"anyOf": [{"type": "number", "minimum": 0}, SIZE_JSON]})


def _protocol(value):
    if isinstance(value, str) and value in PROTOCOLS:
        return PROTOCOLS[value]
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 255:
        return value
    raise ValueError(f"expected {', '.join(PROTOCOLS)} or an IP protocol number 0 to 255")


protocol = Kind(_protocol, f"{', '.join(PROTOCOLS)} or an IP protocol number, 0 to 255",
                {"anyOf": [{"enum": list(PROTOCOLS)},
                           {"type": "integer", "minimum": 0, "maximum": 255}]})

queue_packets = int_in(1, 100000, "packets")


RED_FIELDS = (
    Field("mode", choice(RED_MODES), "what the thresholds count", "packets", "packets"),
    Field("min", threshold, "min_th: below it no packet is signalled", 0, required=True),
    Field("max", threshold, "max_th: above it (2 x max_th with gentle) every packet is "
          "dropped; more than min", 1, required=True),
    Field("max_p", max_p, "the signal probability at max_th", 0.1, required=True),
    Field("weight", open_unit_interval, "the average's weight w_q", 0.002, required=True),
    Field("gentle", boolean, "ramp max_p to 1 between max_th and 2 x max_th", False, "false"),
    Field("ecn", boolean, "mark ECN-capable packets CE instead of dropping them", False,
          "false"),
    Field("mean_packet", size, "the packet size of the idle-time decay", None, "the MTU"),
)


DIRECTION = Block("downlink", "One direction of the link; `uplink` has the same fields.", (
    Field("rate", rate, "the link's rate (tc's units: kbit = 1000 bit/s)", None, "unlimited"),
    Block("rate_trace", "The rate over time from a Mahimahi trace (instead of `rate`)", (
        Field("file", text, "the trace, relative to the profile", required=True),
        Field("window", window_ms, "the rate is the trace's over each window (whole ms, "
              "5ms or more)", DEFAULT_WINDOW_MS, f"{DEFAULT_WINDOW_MS}ms"),
    )),
    Entries("rate_changes", "Steps of the rate over time, in time order", Block("", "", (
        Field("at", non_negative_time_us, "when, from the start of the profile", required=True),
        Field("rate", rate, "the rate from then on (or give `outage`)"),
        Field("outage", positive_time_us, "nothing is sent for this long, then the rate "
              "before (or give `rate`)"),
    ))),
    Field("delay", delay, "one-way propagation delay", 0, "0s"),
    Field("queue", queue_packets, "the router queue's limit", DEFAULT_QUEUE_PACKETS,
          str(DEFAULT_QUEUE_PACKETS)),
    Field("queue_bytes", size, "the router queue's limit in L3 bytes too; whichever is hit "
          "first"),
    Field("overhead", int_in(0, 1000, "bytes"), "link bytes added to each packet's L3 length",
          0, "0"),
    Field("link_buffer", size, "the link send buffer between the router queue and the link "
          "(docs/link-model.md); at least a frame of the MTU"),
    Block("arq", "Link-layer retransmission of errored frames", (
        Field("delay", positive_time_us, "each retransmission's delay", 0, required=True),
        Field("max_retransmissions", int_in(0, 15, "retransmissions"), "attempts after the "
              "first; then the frame is lost", 0, required=True),
        Field("in_order", boolean, "hold frames behind a retransmitted one and release them "
              "in order", True, "true"),
    )),
    Block("loss", "Random loss independent of the link states, as NetEm's", (
        Field("model", choice(LOSS_MODELS), "Bernoulli, or Gilbert-Elliott's two states",
              required=True),
        Field("p", probability, "bernoulli: the loss probability; gilbert-elliott: good to "
              "bad", 0.0, required=True),
        Field("r", probability, "gilbert-elliott (required): bad to good", 1.0),
        Field("bad_loss", probability, "gilbert-elliott: loss in the bad state (1 - h)", 1.0,
              "1"),
        Field("good_loss", probability, "gilbert-elliott: loss in the good state (1 - k)",
              0.0, "0"),
    )),
    Block("red", "Classic RED on the router queue", RED_FIELDS),
    Block("cobalt", "Cake's AQM on the router queue: CoDel with BLUE", (
        Field("target", positive_time_us, "CoDel's target sojourn (Cake raises it at low "
              "rates)", 5000, "5ms"),
        Field("interval", positive_time_us, "CoDel's interval; more than the target", 100000,
              "100ms"),
        Field("ecn", boolean, "mark ECN-capable packets CE instead of dropping them", True,
              "true"),
        Field("isolation", choice(ISOLATIONS), "`flowblind`: one queue; `flows`: a queue per "
              "flow (5-tuple), served by DRR++ as fq_codel does, each with its COBALT; "
              "`triple-isolate`: as flows, the link shared by sender and receiver hosts "
              "first, as Cake's", "flowblind", "flowblind"),
        Field("quantum", quantum, "with flow isolation: the link bytes a flow sends in its "
              "turn (DRR's quantum)", None, "a frame of the MTU on the link"),
    )),
    Block("sojourn_ramp", "Marks ECT(1) packets CE with a probability rising with their "
          "sojourn in the router queue (with flow isolation: in their flow queue)", (
              Field("target", positive_time_us, "always marked from this sojourn on, never "
                    "below half of it", 1, required=True),
          )),
    Block("priority", "A class served strictly before best effort, with its own queue", (
        Entries("match", "What the class takes: each entry's fields all match", Block("", "", (
            Field("dscp", int_in(0, 63, "(DSCP)"), "the IP DSCP"),
            Field("protocol", protocol, "the IP protocol"),
            Field("port", int_in(0, 65535, "(port)"), "source or destination port (tcp, "
                  "udp)"),
            Field("src_port", int_in(0, 65535, "(port)"), "source port (tcp, udp)"),
            Field("dst_port", int_in(0, 65535, "(port)"), "destination port (tcp, udp)"),
        )), required=True),
        Field("queue", queue_packets, "the class's router queue limit", DEFAULT_QUEUE_PACKETS,
              str(DEFAULT_QUEUE_PACKETS)),
        Field("queue_bytes", size, "its limit in L3 bytes too"),
        Block("red", "RED on the class's queue, with the fields of `downlink.red`",
              RED_FIELDS),
        Field("share", share, "caps the class at this fraction of the rate"),
        Field("best_effort_share", share, "caps best effort at this fraction of the rate"),
    )),
    Block("jitter", "Delay variation drawn per packet, around `delay`", (
        Field("distribution", choice(JITTER_DISTRIBUTIONS), "NetEm's distributions, or your "
              "own table", required=True),
        Field("jitter", non_negative_time_us, "half-width (uniform) or standard deviation; "
              "not with table", 0, required=True),
        Field("table", delay_table_kind, "table (required): delays added at equally spaced "
              "probabilities, non-decreasing", (0,)),
        Field("reorder", boolean, "let a packet leave before the one ahead of it", False,
              "false"),
    )),
    Block("delay_spikes", "A packet's delay grows by a spike now and then", (
        Field("probability", probability, "per packet", 0.0, required=True),
        Field("length", non_negative_time_us, "the spike's extra delay", 0, required=True),
    )),
    Field("reorder", probability, "NetEm's reorder: a packet sent ahead of the others", 0.0,
          "0"),
    Field("duplicate", probability, "a packet delivered twice", 0.0, "0"),
    Field("corrupt", probability, "a packet with one bit flipped", 0.0, "0"),
), required=True)

DURATION = Block("duration", "How long the state lasts", (
    Field("distribution", choice(DURATIONS), "static, exponential or uniform", required=True),
    Field("value", positive_time_us, "static (required): the duration", 1),
    Field("mean", positive_time_us, "exponential (required): the mean", 1),
    Field("min", delay, "uniform (required), exponential: the shortest", 0, "0s"),
    Field("max", positive_time_us, "uniform (required), exponential: the longest",
          MAX_DELAY_US * 1000, "none"),
), required=True)

LINK_STATES = Block("link_states", "A Markov chain of link states with frame errors, "
                    "walked in time", (
    Names("start", "the first state's probabilities, by state name; they sum to 1",
          probability, required=True),
    Names("states", "the states, by name", Block("", "", (
        Either("error", "the frame error probability, or one per direction",
               probability, Block("error", "", (
                   Field("downlink", probability, "", 0.0, required=True),
                   Field("uplink", probability, "", 0.0, required=True),
               )), 0.0, required=True),
        DURATION,
        Names("next", "the next state's probabilities, by state name; they sum to 1",
              probability, required=True),
    ), required=True), required=True),
    Field("seed", int_in(0, 2**63 - 1, "(seed)"), "makes the walk repeatable"),
))

PROFILE = Block("", "A link profile", (
    Field("name", safe_name, "the profile's name", None, "the file's name"),
    Field("description", text, "what it emulates", "", '""'),
    Field("mtu", int_in(68, 9000, "bytes"), "the hosts' MTU", 1500, "1500"),
    DIRECTION,
    Block("uplink", "The other direction, with the fields of `downlink`", DIRECTION.items,
          required=True),
    LINK_STATES,
))
