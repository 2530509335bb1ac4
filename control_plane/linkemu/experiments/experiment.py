"""Experiment files: YAML validated into the runs of a batch.

An experiment names link profiles, TCP configurations and workloads, and
runs every cell of the matrix profile x tcp x workload `replications` times.
Replication r of every cell meets the same link-state timeline (drawn from
`seed + r`), so that TCP variants are compared on identical link behaviour.
`short:` names a smaller batch (fewer replications, a subset of the matrix)
that finishes in minutes. `event_log:` logs every packet of every run, or a
random sample, and checks its release times ({threshold: 10ms, reject: true}
fails a run with a packet released later than that; `within: 0.99` lets 1 %
be). `expect:` lists figures of a study that
cells of the matrix should reproduce, checked after the batch.
"""

import copy
import fnmatch
import itertools
import math
import re
from dataclasses import dataclass
from pathlib import Path

from ..model.fields import Section, choice, int_in, safe_name, shown_name
from ..model.files import load_yaml
from ..model.profile import DIRECTIONS, ProfileError, load_profile, parse_profile
from .experiment_schema import (AXES, EXPERIMENT, FLOW, GRID, MATRIX_BLOCK, MAX_HOSTS,
                                metric)
from .tcp_config import HostTcp, parse_host_tcp

MAX_RUNS = 100_000   # days of runs; more is a slip, and would not fit in memory


class ExperimentError(ValueError):
    """An experiment file that cannot be run; lists every problem found."""

    def __init__(self, source, problems):
        self.source = source
        self.problems = problems
        super().__init__("\n".join([f"{source}: invalid experiment"] +
                                   [f"  {p}" for p in problems]))


@dataclass(frozen=True)
class Flow:
    """One program pair of a workload, between hosts h1..hN. For http and
    bulk the server sends its objects to the client; for udp and iperf
    (written `from`/`to`) the client sends to the server."""

    app: str
    server: str
    client: str
    start_s: float
    page: str = None            # http
    http: str = None            # http: "1.0" or "1.1"
    inline: str = None          # http: when HTTP/1.0 in-line connections start
    parallel: int = 1           # http: connections at once; iperf: parallel streams
    bytes: int = None           # bulk
    payload: int = None         # udp payload bytes; iperf write length
    interval_s: float = None    # udp
    duration_s: float = None    # udp, iperf
    dscp: int = 0               # udp
    window: int = None          # iperf socket buffer (-w)
    udp_rate_bps: float = None  # iperf: a UDP stream at this rate instead of TCP

    @property
    def sender(self):
        return self.server if self.app in ("http", "bulk") else self.client

    @property
    def receiver(self):
        return self.client if self.app in ("http", "bulk") else self.server


@dataclass(frozen=True)
class Run:
    """One run of the batch: a cell of the matrix and its replication."""

    profile: str
    tcp: str
    workload: str
    replication: int

    @property
    def run_id(self):
        return f"{self.profile}_{self.tcp}_{self.workload}_r{self.replication:02d}"

    @property
    def cell(self):
        return (self.profile, self.tcp, self.workload)


@dataclass(frozen=True)
class EventLogCheck:
    """Log every packet's fate in each run, or a random `sample` of them,
    and check its release times: the check fails when more than 1 - `within`
    of the logged packets were released more than `threshold_us` late, and
    with `reject` the run fails (the same command runs it again)."""

    threshold_us: int
    reject: bool
    sample: float = 1.0
    within: float = 1.0


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    fixed: int
    mobile: int
    profiles: dict          # name -> Profile
    tcp: dict               # name -> {host: HostTcp}
    workloads: dict         # name -> tuple of Flow
    matrix: tuple           # blocks: {"profile"/"tcp"/"workload": tuple of names}
    replications: int
    seed: int
    run_timeout_s: float
    keep_captures: bool
    event_log: EventLogCheck | None = None
    expectations: tuple = ()  # of Expectation, for cells of this (full or short) matrix
    shard: object = None      # a shards.Shard: runs() gives only its share

    @property
    def hosts(self):
        return tuple(f"h{i}" for i in range(1, self.fixed + self.mobile + 1))

    def side(self, host):
        return "fixed" if int(host[1:]) <= self.fixed else "mobile"

    def cells(self):
        """The (profile, tcp, workload) cells of every block, once each."""
        return _cells(self.matrix)

    def runs(self):
        """Every run, grouped by profile (one network per profile), then by
        replication, so that an interrupted batch has whole replications."""
        cells = self.cells()
        profiles = list(dict.fromkeys(p for p, _, _ in cells))
        runs = [Run(p, t, w, r) for p in profiles for r in range(self.replications)
                for (cp, t, w) in cells if cp == p]
        return runs if self.shard is None else self.shard.select(runs)


def _names(section, key, known, what):
    """A list of names, each one of `known` or a pattern (fnmatch: * ?)
    that matches some of them."""
    values = section.data.get(key)
    section.known.add(key)
    path = section.sub_path(key)
    if not isinstance(values, list) or not values:
        section.problem(path, values, f"expected a list of {what} names")
        return ()
    names = []
    for i, value in enumerate(values):
        matched = [n for n in known if fnmatch.fnmatchcase(n, value)] \
            if isinstance(value, str) else []
        if not matched:
            shown = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
            section.problem(f"{path}[{i}]", value, f"no such {what}; defined: {shown or 'none'}")
        names += matched
    if len(set(names)) != len(names):
        section.problem(path, values, "names a cell twice")
    return tuple(names)


def _host(hosts):
    def convert(value):
        if value not in hosts:
            raise ValueError(f"expected a host, one of h1 to h{len(hosts)}")
        return value
    return convert


def _flow(section, hosts, fixed, side):
    host = _host(hosts)
    app = section.field("app")
    fields = {"app": app, "start_s": section.field("start")}
    # By default data flows from the first fixed host to the first mobile one.
    first_fixed, first_mobile = "h1", f"h{fixed + 1}"
    if app in ("udp", "iperf"):
        fields["client"] = section.field("from", convert=host, default=first_fixed)
        fields["server"] = section.field("to", convert=host, default=first_mobile)
    else:
        fields["server"] = section.field("server", convert=host, default=first_fixed)
        fields["client"] = section.field("client", convert=host, default=first_mobile)
    if app == "http":
        fields["page"] = section.field("page", required=True)
        fields["http"] = section.field("http")
        fields["parallel"] = section.field("parallel", convert=int_in(1, 64, "connections"),
                                           default=4)
        fields["inline"] = section.field("inline")
        if fields["http"] == "1.1" and "inline" in section.data:
            section.problem(section.sub_path("inline"), section.data["inline"],
                            "HTTP/1.0 only; HTTP/1.1 pipelines the in-line requests")
    elif app == "bulk":
        fields["bytes"] = section.field("bytes", required=True)
    elif app == "udp":
        fields["payload"] = section.field("payload", required=True)
        fields["interval_s"] = section.field("interval", required=True)
        fields["duration_s"] = section.field("duration", required=True)
        fields["dscp"] = section.field("dscp")
    elif app == "iperf":
        fields["duration_s"] = section.field("duration", required=True)
        fields["parallel"] = section.field("parallel", convert=int_in(1, 128, "streams"),
                                           default=1)
        fields["window"] = section.field("window")
        fields["payload"] = section.field("length")
        fields["udp_rate_bps"] = section.field("udp_rate")
    section.reject_unknown()
    if fields["server"] is not None and fields["client"] is not None:
        if side(fields["server"]) == side(fields["client"]):
            section.problems.append(
                f"{section.path}: {fields['server']} and {fields['client']} are both on the "
                f"{side(fields['server'])} side; every flow must cross the link")
    return Flow(**fields) if app else None


def _workloads(section, hosts, fixed, side):
    workloads = {}
    for key, flows in section.data.items():
        path = section.sub_path(key)
        if not isinstance(flows, list) or not flows:
            section.problem(path, flows, "expected a list of flows")
        elif _named(section, key):
            workloads[key] = tuple(_flow(Section(f, f"{path}[{i}]", section.problems, FLOW),
                                         hosts, fixed, side)
                                   for i, f in enumerate(flows))
    return workloads


def _named(section, key):
    """Whether `key` of `section` is a name; a problem if not."""
    try:
        safe_name(key)
    except ValueError as err:
        section.problem(section.sub_path(key), key, str(err))
        return False
    return True


def _tcp_configs(section, hosts, side):
    """name -> {host: HostTcp}. A configuration's settings apply to every
    host; its `fixed:`, `mobile:` and `hN:` sub-sections override them there."""
    configs = {}
    for key in section.data:
        if not _named(section, key):
            continue
        config = section.section(key)
        scopes = ("fixed", "mobile", *hosts)
        base = parse_host_tcp(config, extra_keys=scopes)
        overrides = {scope: parse_host_tcp(config.section(scope))
                     for scope in scopes if scope in config.data}
        configs[key] = {host: base.merged(overrides.get(side(host), HostTcp()))
                                  .merged(overrides.get(host, HostTcp()))
                        for host in hosts}
    return configs


def _profile_file(value, base_dir, profile_dir):
    """A path (*.yaml) is relative to the experiment file; a name is a
    profile of `profile_dir`."""
    if value.endswith((".yaml", ".yml")):
        return base_dir / value
    return profile_dir / f"{value}.yaml"


def _set_field(data, key, value):
    """Sets a dotted field ("downlink.loss.p"); a key without a direction
    ("rate") sets it in both directions."""
    path = key.split(".")
    targets = [path] if path[0] in DIRECTIONS else [[d, *path] for d in DIRECTIONS]
    for target in targets:
        node = data
        for part in target[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"{part} is not a section of the profile")
        node[target[-1]] = value


def _grid(section, base_dir, profile_dir):
    """Profiles made from a base profile by setting fields to every
    combination of the given values; named by a template of the values."""
    base_name = section.field("base")
    template = section.field("name")
    values = section.section("set")
    section.reject_unknown()
    if base_name is None or template is None:
        return []
    axes = {}
    for key, options in values.data.items():
        values.known.add(key)
        if not isinstance(key, str):
            values.problem(values.sub_path(key), key, "expected a field's name as text, e.g. "
                           "rate or downlink.loss.p")
        elif not isinstance(options, list) or not options:
            values.problem(values.sub_path(key), options, "expected a list of values")
        else:
            axes[key] = options
    if len(axes) < len(values.data):
        return []
    count = math.prod(map(len, axes.values()))
    if count > MAX_RUNS:
        values.problems.append(f"{values.path}: makes {count} profiles; at most {MAX_RUNS}")
        return []
    file = _profile_file(base_name, base_dir, profile_dir)
    try:
        base = load_yaml(file)
    except ValueError as err:
        section.problem(section.sub_path("base"), base_name, f"{file}: {err}")
        return []
    if not isinstance(base, dict):
        section.problem(section.sub_path("base"), base_name,
                        f"{file}: expected a profile, a mapping of fields")
        return []
    made = []
    for combination in itertools.product(*axes.values()):
        data = copy.deepcopy(base)
        placeholders = {}
        for key, value in zip(axes, combination):
            try:
                _set_field(data, key, value)
            except ValueError as err:
                values.problem(values.sub_path(key), value, str(err))
                return made
            placeholders[key.split(".")[-1]] = value
        try:
            name = template.format(**placeholders)
        except (KeyError, IndexError, AttributeError, TypeError, ValueError) as err:
            section.problem(section.sub_path("name"), template,
                            f"cannot fill it: {type(err).__name__}: {shown_name(err)}; its "
                            f"fields are {', '.join(placeholders) or 'none'}")
            return made
        data["name"] = name
        made.append((name, data, f"{section.path} ({shown_name(name)})"))
    return made


def _profiles(section, key, base_dir, profile_dir, problems):
    """name -> Profile, from names or paths of profile files and grids."""
    section.known.add(key)
    values = section.data.get(key)
    path = section.sub_path(key)
    if not isinstance(values, list) or not values:
        section.problem(path, values, "expected a list of profile names, paths or grids")
        return {}
    profiles = {}
    for i, value in enumerate(values):
        entry_path = f"{path}[{i}]"
        if isinstance(value, dict) and set(value) == {"grid"}:
            grid = Section(value["grid"], f"{entry_path}.grid", problems, GRID)
            loaded = []
            for name, data, source in _grid(grid, base_dir, profile_dir):
                try:
                    loaded.append(parse_profile(data, source=source))
                except ProfileError as err:
                    problems.append(str(err).replace("\n", "\n    "))
        elif isinstance(value, str):
            try:
                loaded = [load_profile(_profile_file(value, base_dir, profile_dir))]
            except ProfileError as err:
                problems.append(f"{entry_path}: {err}".replace("\n", "\n    "))
                continue
        else:
            section.problem(entry_path, value, "expected a profile name or path, or {grid: ...}")
            continue
        for profile in loaded:
            if profile.name in profiles:
                section.problem(entry_path, value, f"a second profile named {profile.name}")
            profiles[profile.name] = profile
    return profiles


def _matrix(section, key, known, replications, problems):
    """Blocks of the matrix: a mapping of axis -> names (an absent axis takes
    every defined name), or a list of such mappings whose runs are joined."""
    section.known.add(key)
    value = section.data.get(key, {})
    if value == []:
        section.problem(section.sub_path(key), value, "expected a mapping of axes to names, "
                        "or a list of them; an empty list has no runs")
    blocks = value if isinstance(value, list) else [value]
    matrix = []
    for i, block in enumerate(blocks):
        path = section.sub_path(key) + (f"[{i}]" if isinstance(value, list) else "")
        block_section = Section(block, path, problems, MATRIX_BLOCK)
        cells = {axis: (_names(block_section, axis, known[axis], axis)
                        if axis in block_section.data else known[axis]) for axis in AXES}
        block_section.reject_unknown()
        matrix.append(cells)
    # Counted before the cells are listed: blocks may share cells, never more.
    runs = replications * sum(math.prod(map(len, block.values())) for block in matrix)
    if runs > MAX_RUNS:
        problems.append(f"{section.sub_path(key)}: up to {runs} runs (cells x replications); "
                        f"at most {MAX_RUNS}")
        return ()
    return tuple(matrix)


def _event_log(section):
    if section is None:
        return None
    check = EventLogCheck(threshold_us=section.field("threshold"),
                          reject=section.field("reject"), sample=section.field("sample"),
                          within=section.field("within"))
    section.reject_unknown()
    return check


# -- Expectations: the study's figures a cell should reproduce


@dataclass(frozen=True)
class Expectation:
    """`statistic` of the scalar `metric` over a cell's replications is
    within `within` (relative) of the study's figure `study`."""

    cell: tuple             # (profile, tcp, workload)
    metric: str
    study: float
    statistic: str
    within: float           # 0.1 for 10 %
    source: str = ""

    def describe(self):
        return (f"{' · '.join(self.cell)}: {self.statistic} {self.metric} = "
                f"{self.study:g} ± {100 * self.within:g} %")


def flow_label(index, flow):
    """The prefix of a flow's scalars: flow0.bulk for flow0.bulk.elapsed_s."""
    return f"flow{index}.{flow.app}"


def _cells(matrix):
    cells = {(p, t, w): None for block in matrix for p in block["profile"]
             for t in block["tcp"] for w in block["workload"]}
    return list(cells)


def _metric(flows):
    """A scalar's name; a flow's scalar (flowN.APP.*) must be of a flow of
    the workload, which catches the likeliest slip (flow numbers from 0)."""
    labels = [flow_label(i, f) for i, f in enumerate(flows or ()) if f is not None]

    def convert(value):
        value = metric(value)
        if flows is not None and re.match(r"flow\d+\.", value) \
                and not value.startswith(tuple(f"{label}." for label in labels)):
            raise ValueError(f"not a flow of the workload; its flows: {', '.join(labels)}")
        return value
    return convert


def _expectations(section, key, known, workloads, cells):
    """The `expect:` list; each names a cell of `cells` (tcp and workload
    may be left out when the experiment defines one)."""
    expectations = []
    for entry in section.entries(key, "expected a list of expectations", required=False):
        cell = []
        for axis in AXES:
            one = axis != "profile" and len(known[axis]) == 1
            cell.append(entry.field(axis, convert=choice(known[axis]), required=not one,
                                    default=known[axis][0] if one else None))
        fields = {"metric": entry.field("metric", convert=_metric(workloads.get(cell[2]))),
                  "study": entry.field("study"),
                  "statistic": entry.field("statistic"),
                  "within": entry.field("within"),
                  "source": entry.field("source")}
        entry.reject_unknown()
        if None in cell:
            continue
        if tuple(cell) not in cells:
            section.problems.append(f"{entry.path}: {' · '.join(cell)} is not a cell of "
                                    "the matrix")
            continue
        expectations.append(Expectation(cell=tuple(cell), **fields))
    return tuple(expectations)


def parse_experiment(data, source="experiment", base_dir=Path("."), short=False):
    """Validates parsed YAML into an Experiment, or raises ExperimentError.
    `short` applies the file's `short:` section."""
    problems = []
    top = Section(data, "", problems, EXPERIMENT)
    name = top.field("name")
    description = top.field("description")
    hosts_section = top.section("hosts") or Section({}, "hosts", problems,
                                                     EXPERIMENT.item("hosts"))
    fixed = hosts_section.field("fixed")
    mobile = hosts_section.field("mobile")
    hosts_section.reject_unknown()
    if fixed + mobile > MAX_HOSTS:
        problems.append(f"hosts: {fixed} + {mobile} hosts; at most {MAX_HOSTS}")
    hosts = tuple(f"h{i}" for i in range(1, fixed + mobile + 1))

    def side(host):
        return "fixed" if int(host[1:]) <= fixed else "mobile"

    profile_dir = base_dir / top.field("profile_dir")
    profiles = _profiles(top, "profiles", base_dir, profile_dir, problems)
    tcp = _tcp_configs(top.section("tcp"), hosts, side)
    workloads = _workloads(top.section("workloads"), hosts, fixed, side)
    for key in ("tcp", "workloads"):
        if top.data.get(key) == {}:
            problems.append(f"{key}: empty; define at least one, or the batch has no runs")
    replications = top.field("replications")
    seed = top.field("seed")
    run_timeout_s = top.field("run_timeout")
    keep_captures = top.field("keep_captures")
    event_log = _event_log(top.section("event_log"))
    known = {"profile": tuple(profiles), "tcp": tuple(tcp), "workload": tuple(workloads)}
    matrix = _matrix(top, "matrix", known, replications, problems)
    expectations = _expectations(top, "expect", known, workloads, _cells(matrix))
    short_section = top.section("short")
    if short_section is not None:
        short_replications = short_section.field("replications")
        short_matrix = _matrix(short_section, "matrix", known, short_replications, problems)
        short_section.reject_unknown()
        if short:
            replications, matrix = short_replications, short_matrix
    elif short:
        problems.append("short: missing; this experiment has no short form")
    # The short form checks only the expectations of its own cells.
    expectations = tuple(e for e in expectations if e.cell in _cells(matrix))
    top.reject_unknown()
    if problems:
        raise ExperimentError(source, problems)
    return Experiment(name=name, description=description, fixed=fixed, mobile=mobile,
                      profiles=profiles, tcp=tcp, workloads=workloads, matrix=matrix,
                      replications=replications, seed=seed, run_timeout_s=run_timeout_s,
                      keep_captures=keep_captures, event_log=event_log,
                      expectations=expectations)


def load_experiment(path, short=False):
    """Reads and validates an experiment file; profiles are found relative
    to it (`profile_dir`, default ../profiles)."""
    path = Path(path)
    try:
        data = load_yaml(path)
    except ValueError as err:
        raise ExperimentError(path, [str(err)]) from None
    return parse_experiment(data, str(path), path.parent, short)
