"""Generated bad input: profiles, rate traces and experiment files, valid
ones mutated and raw text. The only outcomes allowed are a valid object or
the project's own error, every problem with its path, within a time and a
memory bound (a hang or a blow-up fails the example, it does not stall the
run)."""

import contextlib
import copy
import itertools
import math
import re
import signal
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fake_p4info
from linkemu.experiments.experiment import (MAX_RUNS, ExperimentError, load_experiment,
                                            parse_experiment)
from linkemu.model.files import load_yaml
from linkemu.model.link_states import walk
from linkemu.model.profile import ProfileError, load_profile, parse_profile
from linkemu.model.rate_schedule import read_trace_file
from linkemu.switch.push import entry_problems

ROOT = Path(__file__).resolve().parents[2]
SECONDS = 10              # per example, the slowest valid profiles included
PEAK_BYTES = 200 << 20    # Python allocations per example
SETTINGS = settings(max_examples=100, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))
P4INFO = fake_p4info.p4info(widths={"queue_bytes_limit": 32, "send_buffer": 32})


@contextlib.contextmanager
def bounded(seconds=SECONDS):
    def expired(signum, frame):
        raise TimeoutError(f"took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    tracemalloc.start()
    try:
        yield
        peak = tracemalloc.get_traced_memory()[1]
        assert peak < PEAK_BYTES, f"{peak >> 20} MB allocated"
    finally:
        tracemalloc.stop()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def assert_reported(err):
    """Every problem names its path (or file) first, and is short."""
    assert err.problems
    for problem in err.problems:
        head = problem.split("\n", 1)[0]
        assert ": " in head and len(head) < 600, problem


def use_profile(profile):
    """What the tools do with a valid profile: none of it may fail."""
    for direction in profile.directions().values():
        direction.describe()
    assert isinstance(entry_problems(profile, P4INFO), list)
    if profile.states is not None:
        list(itertools.islice(walk(profile.states, seed=1), 50))
    for direction in profile.directions().values():
        if direction.rate_schedule is not None:
            list(itertools.islice(direction.rate_schedule.segments(direction.rate_bps), 50))


# -- Values as YAML gives them, and valid files to mutate

NUMBER_TEXT = st.one_of(st.integers(0, 10**6).map(str), st.just("0.4"), st.just("1" + "0" * 400),
                        st.floats(0, 1e6).map(lambda x: f"{x:f}"), st.just(".5"))
UNITS = st.sampled_from(["us", "ms", "s", "bit", "kbit", "Mbit", "Gbit", "B", "kB", "MB", "%",
                         "", "min", "kbps"])
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 70_000), st.integers(-10**400, 10**400),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.builds(lambda n, u: n + u, NUMBER_TEXT, UNITS), st.just("unlimited"),
    st.sampled_from(["exponential", "uniform", "static", "normal", "pareto", "table",
                     "bernoulli", "gilbert-elliott", "bytes", "packets", "http", "bulk", "udp",
                     "iperf", "{rate}", "g-{0}", "../x", "s+2s", "h1", "h9", "10%"]))


def yaml_values(keys):
    return st.recursive(SCALARS, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)), max_leaves=8)


def key_names(*documents):
    names = set()

    def collect(node):
        if isinstance(node, dict):
            names.update(k for k in node if isinstance(k, str))
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    for document in documents:
        collect(document)
    return st.one_of(st.sampled_from(sorted(names)), st.text(max_size=6), st.integers(-2, 2),
                     st.booleans())


def paths(node, prefix=()):
    """Every place in a document: the keys and indexes leading to it."""
    yield prefix
    items = node.items() if isinstance(node, dict) else \
        enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield from paths(value, prefix + (key,))


QUANTITY = re.compile(r"([0-9.]+)\s*([a-zA-Zµ%]+)")
MAGNITUDES = st.sampled_from(["0", "0.4", "1", "1000000000", "400000000", "9" * 30, "0.000001",
                              "1" + "0" * 400])
FACTORS = st.sampled_from([0, -1, 1e-300, 1e-17, 1e-9, 1e9, 1e17, 1e300, math.nan, math.inf])


@st.composite
def extreme(draw, value):
    """`value` of the same kind, at an extreme: most fields still valid."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and abs(value) < 1e300:
        scaled = value * draw(FACTORS)
        return round(scaled) if isinstance(value, int) and math.isfinite(scaled) else scaled
    match = QUANTITY.fullmatch(value) if isinstance(value, str) else None
    return draw(MAGNITUDES) + match[2] if match else value


@st.composite
def mutated(draw, bases, keys):
    """A base document with a few values replaced, pushed to an extreme,
    removed or added."""
    data = copy.deepcopy(draw(st.sampled_from(bases)))
    for _ in range(draw(st.integers(1, 3))):
        places = list(paths(data))[1:]   # the raw text tests try other tops
        if not places:
            break
        path = draw(st.sampled_from(places))
        value = draw(yaml_values(keys))
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["extreme"] * 4 + ["replace", "remove", "add"]))
        if action == "extreme":
            parent[path[-1]] = draw(extreme(parent[path[-1]]))
        elif action == "remove":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(keys)] = value
        elif action == "add":
            parent.append(value)
        else:
            parent[path[-1]] = value
    return data


STATES = {"seed": 3, "start": {"good": 0.5, "bad": 0.5}, "states": {
    "good": {"error": 0, "next": {"bad": 1},
             "duration": {"distribution": "exponential", "mean": "1s", "min": "59s",
                          "max": "60s"}},
    "bad": {"error": {"downlink": 0.5, "uplink": 0.1}, "next": {"good": 1},
            "duration": {"distribution": "uniform", "min": "200ms", "max": "1900ms"}}}}
PROFILES = [
    *fake_p4info.PROFILES,
    {"name": "states", "mtu": 576, "link_states": STATES,
     "downlink": {"rate": "64kbit", "delay": "300ms", "queue": 20, "link_buffer": "9600B",
                  "arq": {"delay": "700ms", "max_retransmissions": 2}},
     "uplink": {"rate": "64kbit", "delay": "300ms", "queue": 1,
                "jitter": {"distribution": "table", "table": ["0ms", "2ms", "10ms"]}}},
    {"downlink": {"rate": "10Mbit", "rate_changes": [{"at": "1s", "rate": "2Mbit"},
                                                     {"at": "2s", "outage": "500ms"}],
                  "red": {"mode": "bytes", "min": "3000B", "max": "9000B", "max_p": 0.1,
                          "weight": 0.002}},
     "uplink": {"rate_trace": {"file": "traces/steps-6mbit-1200kbit.trace", "window": "10ms"}}},
]
PROFILE_KEYS = key_names(*PROFILES)


@SETTINGS
@given(mutated(PROFILES, PROFILE_KEYS))
def test_mutated_profiles(data):
    with bounded():
        try:
            profile = parse_profile(data, source="p.yaml", base_dir=ROOT / "profiles")
        except ProfileError as err:
            assert_reported(err)
            return
        use_profile(profile)


# Raw text: YAML's corners (anchors, aliases, merges, tags, repeated keys)
# among plain profile lines.
FRAGMENTS = st.sampled_from([
    "downlink: {}\n", "uplink: {}\n", "downlink:\n  rate: 1Mbit\n  delay: 10ms\n",
    "  delay: 20ms\n", "a: &a [x, x, x, x, x, x, x, x]\n", "b: &b [*a, *a, *a, *a, *a, *a]\n",
    "c: [*b, *b, *b, *b, *b, *b, *b, *b]\n", "d: &d {<<: *a}\n", "e: *zz\n", "f: &f [*f]\n",
    "name: !!binary aGVsbG8=\n", "name: !!python/object:os.system x\n", "mtu: 2001-13-45\n",
    "mtu: 1" + "0" * 5000 + "\n", "--- \n", "name: [\n", "\t\x07\n", "name: ..\n",
    "link_states: {start: {1: 1}, states: {1: {}}}\n", "? [a]\n: 1\n", "%YAML 1.1\n"])


@SETTINGS
@given(st.lists(st.one_of(FRAGMENTS, st.text(max_size=20)), max_size=8))
def test_raw_profile_text(tmp_path_factory, parts):
    path = tmp_path_factory.mktemp("raw") / "p.yaml"
    path.write_text("".join(parts), errors="surrogatepass")   # a surrogate: not UTF-8
    with bounded():
        try:
            profile = load_profile(path)
        except ProfileError as err:
            assert_reported(err)
            return
        use_profile(profile)


TRACE_LINES = st.one_of(st.integers(-5, 10**7).map(str), st.text(max_size=8), st.just(""),
                        st.just("1" * 400))


@SETTINGS
@given(st.lists(TRACE_LINES, max_size=30), st.sampled_from(["5ms", "10ms", "3ms", "1s"]))
def test_traces(tmp_path_factory, lines, window):
    folder = tmp_path_factory.mktemp("trace")
    (folder / "t.trace").write_text("\n".join(lines))
    with bounded():
        try:
            read_trace_file(folder / "t.trace")
        except ValueError as err:
            assert str(err).startswith(str(folder / "t.trace")) and len(str(err)) < 600
        try:
            profile = parse_profile({"downlink": {"rate_trace": {"file": "t.trace",
                                                                 "window": window}},
                                     "uplink": {}}, base_dir=folder)
        except ProfileError as err:
            assert_reported(err)
            return
        use_profile(profile)


EXPERIMENTS = [load_yaml(path) for path in sorted((ROOT / "experiments").glob("*.yaml"))]
EXPERIMENT_KEYS = key_names(*EXPERIMENTS)


@settings(SETTINGS, max_examples=40)
@given(mutated(EXPERIMENTS, EXPERIMENT_KEYS), st.booleans())
def test_mutated_experiments(data, short):
    with bounded():
        try:
            experiment = parse_experiment(data, "x.yaml", ROOT / "experiments", short)
        except ExperimentError as err:
            assert_reported(err)
            return
        assert 0 < len(experiment.runs()) <= MAX_RUNS
        assert all(0 < len(run.run_id) < 255 and "/" not in run.run_id
                   for run in experiment.runs())


@SETTINGS
@given(st.lists(st.one_of(FRAGMENTS, st.sampled_from(
    ["name: x\n", "profiles: [gprs-optimal]\n", "tcp: {t: {}}\n", "tcp: {}\n",
     "workloads: {w: [{app: bulk, bytes: 100}]}\n", "matrix: []\n", "replications: 0\n"])),
    max_size=8))
def test_raw_experiment_text(tmp_path_factory, parts):
    path = tmp_path_factory.mktemp("raw") / "x.yaml"
    path.write_text("".join(parts))
    with bounded():
        try:
            load_experiment(path)
        except ExperimentError as err:
            assert_reported(err)


def test_the_bound_catches_a_hang():
    """The bound has teeth: a loop without end fails, it does not stall."""
    with pytest.raises(TimeoutError), bounded(seconds=0.2):
        while True:
            pass
