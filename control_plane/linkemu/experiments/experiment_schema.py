"""The schema of an experiment file: every field's kind, default and
meaning, in one tree (model.fields.Block). experiments.experiment reads a
file by it; model.schema makes the reference and
schema/experiment.schema.json of it. Where what is allowed depends on the
file (its hosts, the names it defines), the reader narrows the kind."""

import math
import re

from ..drivers.event_log import OVERSHOOT_US
from ..model.fields import (RATE_JSON, SIZE_JSON, TIME_JSON, Block, Entries, Field, Kind, Names,
                            boolean, choice, int_in, positive_time_us, safe_name, text,
                            up_to_one)
from ..model.schema import node_json
from ..model.units import format_time_us, parse_rate, parse_size, parse_time_us
from .apps import INLINE_STARTS, PAGE_MIXES
from .tcp_config import TCP_SETTINGS

MAX_HOSTS = 254
APPS = ("http", "bulk", "udp", "iperf")
AXES = ("profile", "tcp", "workload")
COMPARED = ("median", "mean")  # statistics an expectation may compare
HOST = r"h[1-9][0-9]*"


def _seconds(value):
    return parse_time_us(value) / 1e6


seconds = Kind(_seconds, "a duration (us, ms, s)", TIME_JSON)
positive_seconds = Kind(lambda value: positive_time_us(value) / 1e6,
                        "a duration above 0 (us, ms, s)", TIME_JSON)


def _bytes(value):
    size = value if isinstance(value, int) and not isinstance(value, bool) else parse_size(value)
    if size <= 0:
        raise ValueError("expected a positive size: a number of bytes or e.g. '188640B'")
    return size


byte_count = Kind(_bytes, "a size above 0: bytes, or with a unit (B, kB, MB)",
                  {"anyOf": [{"type": "integer", "minimum": 1}, SIZE_JSON]})


def _rate_bps(value):
    bps = parse_rate(value)
    if bps <= 0:
        raise ValueError("expected a positive rate, e.g. '1Mbit'")
    return bps


rate_bps = Kind(_rate_bps, "a rate above 0 (bit, kbit, Mbit, Gbit)", RATE_JSON)


def _host(value):
    if not isinstance(value, str) or not re.fullmatch(HOST, value):
        raise ValueError("expected a host, h1, h2, ...")
    return value


host = Kind(_host, "a host: h1 .. hN, the fixed side's first",
            {"type": "string", "pattern": f"^{HOST}$"})


def _percent(value):
    match = re.fullmatch(r"(\d+(?:\.\d+)?) ?%", value.strip()) if isinstance(value, str) else None
    if not match or not 0 < float(match[1]) < math.inf:
        raise ValueError("expected a positive percentage, e.g. '10%'")
    return float(match[1]) / 100


percent = Kind(_percent, "a percentage above 0, e.g. `10%`",
               {"type": "string", "pattern": r"^\s*[0-9]+(\.[0-9]+)? ?%\s*$"})


def _figure(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value == 0 \
            or not math.isfinite(value):
        raise ValueError("expected a number other than 0 (the tolerance is relative to it)")
    return float(value)


figure = Kind(_figure, "a number other than 0", {"type": "number", "not": {"const": 0}})


def _metric(value):
    if not isinstance(value, str) or not value:
        raise ValueError("expected a scalar's name, as in metrics.json")
    return value


metric = Kind(_metric, "a scalar of metrics.json, e.g. `flow0.bulk.elapsed_s`",
              {"type": "string", "minLength": 1})
NAME_LIST_JSON = {"type": "array", "minItems": 1, "items": {"type": "string"}}
names = Kind(lambda value: value, "a list of names, or patterns (* ?) of them", NAME_LIST_JSON)


TCP_CONFIG = Block("", "Settings that apply to every host; what is left out keeps the "
                   "kernel's default", TCP_SETTINGS + (
                       Block("fixed", "the settings above, for the fixed side's hosts",
                             TCP_SETTINGS),
                       Block("mobile", "the settings above, for the mobile side's hosts",
                             TCP_SETTINGS),
                   ), named=((HOST, Block("hN", "the settings above, for host hN (h1, h2, ...), "
                                          "over its side's", TCP_SETTINGS)),))

FLOW = Block("", "One program pair of the workload", (
    Field("app", choice(APPS), "http and bulk: the server sends to the client; udp and iperf: "
          "`from` sends to `to`", required=True),
    Field("start", seconds, "when it starts, from the run's start", 0.0, "0s"),
    Field("server", host, "http, bulk: the host serving", None, "h1"),
    Field("client", host, "http, bulk: the host fetching", None, "the first mobile host"),
    Field("from", host, "udp, iperf: the sender", None, "h1"),
    Field("to", host, "udp, iperf: the receiver", None, "the first mobile host"),
    Field("page", choice(tuple(PAGE_MIXES)), "http (required): the page mix"),
    Field("http", choice(("1.0", "1.1")), "http: the protocol", "1.0", "1.0"),
    Field("parallel", int_in(1, 128, "connections"), "http: connections at once (1 to 64, "
          "default 4); iperf: parallel streams (default 1)"),
    Field("inline", choice(INLINE_STARTS), "http 1.0: when the in-line connections start",
          "first-data", "first-data"),
    Field("bytes", byte_count, "bulk (required): the bytes sent"),
    Field("payload", int_in(12, 1472, "bytes"), "udp (required): each datagram's payload"),
    Field("interval", positive_seconds, "udp (required): between datagrams"),
    Field("duration", positive_seconds, "udp, iperf (required): how long it sends"),
    Field("dscp", int_in(0, 63, "(DSCP)"), "udp: the datagrams' DSCP", 0, "0"),
    Field("window", byte_count, "iperf: the socket buffer (-w)"),
    Field("length", byte_count, "iperf: each write's length (-l)"),
    Field("udp_rate", rate_bps, "iperf: a UDP stream at this rate instead of TCP"),
))

GRID = Block("grid", "Profiles made from a base profile by setting fields to every "
             "combination of the given values", (
                 Field("base", text, "the base profile's name or path", required=True),
                 Field("name", text, "each profile's name, a template of the values: "
                       "`sce-{rate}-owd{delay}`", required=True),
                 Names("set", "field (e.g. `rate`, `downlink.loss.p`; without a direction: "
                       "both) -> its values", Kind(lambda value: value, "a list of values",
                                                  {"type": "array", "minItems": 1}),
                       required=True),
             ))
profiles = Kind(lambda value: value, "a list of profile names, paths (`*.yaml`) or "
                "`{grid: ...}`",
                {"type": "array", "minItems": 1,
                 "items": {"anyOf": [{"type": "string"},
                                     {"type": "object", "properties": {"grid": node_json(GRID)},
                                      "required": ["grid"], "additionalProperties": False}]}})

MATRIX_BLOCK = Block("", "A block of cells: an axis left out takes every defined name", (
    Field("profile", names, "profiles"),
    Field("tcp", names, "TCP configurations"),
    Field("workload", names, "workloads"),
))
matrix = Kind(lambda value: value, "a mapping of axes to names, or a list of them",
              {"anyOf": [node_json(MATRIX_BLOCK),
                         {"type": "array", "minItems": 1, "items": node_json(MATRIX_BLOCK)}]})

EXPECTATION = Block("", "A figure of the study that a cell should reproduce", (
    Field("profile", text, "the cell's profile", required=True),
    Field("tcp", text, "its TCP configuration (required unless there is one)"),
    Field("workload", text, "its workload (required unless there is one)"),
    Field("metric", metric, "the scalar compared", required=True),
    Field("study", figure, "the study's figure", required=True),
    Field("statistic", choice(COMPARED), "over the cell's replications", "median", "median"),
    Field("within", percent, "the tolerance, relative to the study's figure", required=True),
    Field("source", text, "where the study gives it", "", '""'),
))

replications = int_in(1, 10_000, "replications")

EXPERIMENT = Block("", "An experiment file", (
    Field("name", safe_name, "the experiment's name", required=True),
    Field("description", text, "what it runs", "", '""'),
    Block("hosts", "How many hosts each side has: h1.. fixed, then the mobile ones", (
        Field("fixed", int_in(1, MAX_HOSTS - 1, "hosts"), "on the fixed side", 1, "1"),
        Field("mobile", int_in(1, MAX_HOSTS - 1, "hosts"), "on the mobile side", 1, "1"),
    )),
    Field("profile_dir", text, "where profile names are found, relative to the file",
          "../profiles", "../profiles"),
    Field("profiles", profiles, "the link profiles", required=True,
          block=Block("grid", GRID.doc, GRID.items)),
    Names("tcp", "TCP configurations, by name", TCP_CONFIG, required=True),
    Names("workloads", "workloads, by name: each a list of flows", Entries("", "", FLOW),
          required=True),
    Field("matrix", matrix, "the cells run: profile x tcp x workload", None, "every cell",
          block=MATRIX_BLOCK),
    Field("replications", replications, "runs of each cell", 1, "1"),
    Field("seed", int_in(0, 2**62, "(seed)"), "replication r draws link states from seed + r",
          1, "1"),
    Field("run_timeout", positive_seconds, "a run taking longer fails", 600.0, "600s"),
    Field("keep_captures", boolean, "keep each run's packet captures", False, "false"),
    Block("event_log", "Log every packet of every run, or a random sample, and check its "
          "release time", (
        Field("threshold", positive_time_us, "a packet released later than this fails the "
              "check", OVERSHOOT_US, format_time_us(OVERSHOOT_US)),
        Field("within", up_to_one("a share of the logged packets"), "the share that must "
              "be released no later than the threshold", 1.0, "1 (all)"),
        Field("sample", up_to_one("a share of the packets"), "the share of packets "
              "logged, drawn at random (the log adds to the switch's load)", 1.0, "1 (all)"),
        Field("reject", boolean, "a failed check fails the run: the switch did not keep up",
              False, "false"),
    )),
    Entries("expect", "The study's figures cells of the matrix should reproduce", EXPECTATION),
    Block("short", "A smaller batch: `linkemu experiment run --short`", (
        Field("replications", replications, "runs of each cell", 1, "1"),
        Field("matrix", matrix, "its cells", None, "every cell"),
    )),
))
