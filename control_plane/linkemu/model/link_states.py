"""The Markov chain of link states, walked in time (spec: link-model.md, section 3).

Each state has a per-packet error probability per direction, a duration
distribution and next-state probabilities; a start vector picks the first
state. Both directions share one timeline. A seed makes the walk repeatable,
and a recorded timeline can be replayed instead of drawn.
"""

import csv
import io
import math
import random
from dataclasses import dataclass
from pathlib import Path

from .fields import shown
from .files import read_text

MAX_SEGMENTS = 1_000_000          # a replayed timeline is held in memory
MAX_TIMELINE_BYTES = 64 << 20     # room for MAX_SEGMENTS rows


@dataclass(frozen=True)
class Duration:
    """How long a state lasts, in microseconds.

    static: always `value_us`. uniform: on [min_us, max_us]. exponential: of
    mean `mean_us`, truncated to [min_us, max_us] (the distribution
    conditioned on the interval), drawn by its inverse CDF: redrawing until a
    value falls inside never ends when the interval is far in the tail.
    """

    distribution: str
    value_us: int = 0
    mean_us: int = 0
    min_us: int = 0
    max_us: int = 0

    def draw(self, rng):
        if self.distribution == "static":
            return self.value_us
        if self.distribution == "uniform":
            return round(rng.uniform(self.min_us, self.max_us))
        # x = min - mean ln(1 - u (1 - e^-(max-min)/mean)), u uniform on [0, 1).
        span = math.expm1(-(self.max_us - self.min_us) / self.mean_us)
        return round(self.min_us - self.mean_us * math.log1p(rng.random() * span))


@dataclass(frozen=True)
class LinkState:
    name: str
    error: dict        # direction name -> per-packet error probability
    duration: Duration
    next: dict         # state name -> probability


@dataclass(frozen=True)
class StateChain:
    start: dict        # state name -> probability
    states: dict       # state name -> LinkState
    seed: int | None = None

    def has_errors(self, direction):
        """Whether some state errs frames of `direction`: the data plane
        draws no link error for a direction that has none."""
        return any(state.error[direction] > 0 for state in self.states.values())


def constant_errors(errors):
    """A profile's `link_states` section for a link whose error probabilities
    never change ({direction: p}): one state, which lasts for ever."""
    return {"start": {"constant": 1}, "states": {"constant": {
        "error": errors, "duration": {"distribution": "static", "value": "3600s"},
        "next": {"constant": 1}}}}


@dataclass(frozen=True)
class Segment:
    """One stay in a state, in microseconds from the start of the run."""

    state: str
    start_us: int
    end_us: int


def _pick(rng, probabilities):
    names = list(probabilities)
    return rng.choices(names, weights=[probabilities[n] for n in names])[0]


def walk(chain, seed=None):
    """An endless iterator of Segments, repeatable for a given seed."""
    rng = random.Random(chain.seed if seed is None else seed)
    state = _pick(rng, chain.start)
    now = 0
    while True:
        length = chain.states[state].duration.draw(rng)
        yield Segment(state, now, now + length)
        now += length
        state = _pick(rng, chain.states[state].next)


TIMELINE_FIELDS = ("state", "start_s", "end_s")


def timeline_row(segment):
    """A segment as a row of TIMELINE_FIELDS."""
    return (segment.state, f"{segment.start_us / 1e6:.6f}", f"{segment.end_us / 1e6:.6f}")


class TimelineError(ValueError):
    pass


def write_timeline(segments, path):
    """Writes `segments` as they come, at most MAX_SEGMENTS (more would not
    be replayed); returns how many."""
    count = 0
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(TIMELINE_FIELDS)
        for count, segment in enumerate(segments, 1):
            if count > MAX_SEGMENTS:
                break
            writer.writerow(timeline_row(segment))
    if count > MAX_SEGMENTS:
        Path(path).unlink()
        raise TimelineError(f"{path}: more than {MAX_SEGMENTS} segments, the most a replay "
                            "holds: draw a shorter timeline")
    return count


def read_timeline(path, chain):
    """Segments of a recorded timeline, checked against the chain's states."""
    path = Path(path)
    try:
        text = read_text(path, MAX_TIMELINE_BYTES)
    except ValueError as err:
        raise TimelineError(f"{path}: {err}") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        rows = [(reader.line_num, row) for row in reader]
    except csv.Error as err:
        raise TimelineError(f"{path}: not CSV after line {reader.line_num}: {err}") from None
    if len(rows) > MAX_SEGMENTS:
        raise TimelineError(f"{path}: more than {MAX_SEGMENTS} segments, the most a replay "
                            "holds")
    segments = []
    previous_end = 0
    for line, row in rows:
        try:
            segment = Segment(row["state"], round(float(row["start_s"]) * 1e6),
                              round(float(row["end_s"]) * 1e6))
        except (KeyError, TypeError, ValueError, OverflowError):
            raise TimelineError(f"{path}:{line}: expected columns "
                                f"{', '.join(TIMELINE_FIELDS)}: {shown(row)}") from None
        if segment.state not in chain.states:
            raise TimelineError(f"{path}:{line}: unknown state {shown(segment.state)}; the "
                                f"profile has {', '.join(chain.states)}")
        if segment.start_us != previous_end or segment.end_us <= segment.start_us:
            raise TimelineError(f"{path}:{line}: segments must follow each other without "
                                f"gaps and last more than 0 s")
        previous_end = segment.end_us
        segments.append(segment)
    if not segments:
        raise TimelineError(f"{path}: no segments")
    return segments
