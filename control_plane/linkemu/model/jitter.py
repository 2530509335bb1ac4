"""Delay variation of a direction: jitter drawn from a distribution, and
random delay spikes.

The data plane has no floating point: it indexes a table of TABLE_SIZE
per-packet delays with a random number. The table is the delay's inverse CDF
at the probabilities (i + 0.5) / TABLE_SIZE, computed here.

Distributions (`jitter` is NetEm's: the half-width of uniform, the standard
deviation of the others), all centred on the direction's `delay`, and clamped
at 0 as NetEm does:
- uniform: delay ± jitter;
- normal: mean delay, standard deviation jitter;
- pareto: Pareto with shape 3, shifted to mean delay and scaled to standard
  deviation jitter (a long tail of late packets);
- paretonormal: 0.25 x pareto + 0.75 x normal of independent standardized
  draws, scaled to standard deviation jitter (quantiles from a seeded sample);
- table: the user's inverse CDF, delays added to `delay` at equally spaced
  probabilities, non-decreasing; resampled to TABLE_SIZE by interpolation.
"""

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from ..program import constants as p4
from .fields import TIME_JSON, Kind
from .units import format_time_us, parse_time_us

TABLE_SIZE = p4.JITTER_SIZE // p4.NUM_DIRECTIONS   # a direction's delays: 10-bit draws
DISTRIBUTIONS = ("uniform", "normal", "pareto", "paretonormal", "table")
PARETO_SHAPE = 3.0
PARETO_MEAN = PARETO_SHAPE / (PARETO_SHAPE - 1)   # scale 1
PARETO_STD = (PARETO_SHAPE / ((PARETO_SHAPE - 1) ** 2 * (PARETO_SHAPE - 2))) ** 0.5
PARETONORMAL_SAMPLES = 400_000


@dataclass(frozen=True)
class Jitter:
    distribution: str
    jitter_us: int = 0
    table_us: tuple = ()     # distribution "table": offsets at equally spaced probabilities
    reorder: bool = False    # False: a packet never leaves before the one ahead of it

    def describe(self):
        spread = ("user table" if self.distribution == "table"
                  else f"{self.distribution} {format_time_us(self.jitter_us)}")
        return f"jitter {spread}{', may reorder' if self.reorder else ''}"


@dataclass(frozen=True)
class DelaySpikes:
    probability: float
    length_us: int

    def describe(self):
        return f"delay spikes of {format_time_us(self.length_us)} with p {self.probability:g}"


def _pareto_ppf(u):
    """Pareto's (scale 1, shape PARETO_SHAPE) inverse CDF."""
    return (1 - u) ** (-1 / PARETO_SHAPE)


def _standard_quantiles(distribution, u):
    """Quantiles of the standardized (mean 0, sd 1) distribution at u."""
    if distribution == "uniform":
        return 2 * u - 1   # half-width 1, as NetEm's jitter for uniform
    if distribution == "normal":
        return np.array([NormalDist().inv_cdf(p) for p in u])
    if distribution == "pareto":
        return (_pareto_ppf(u) - PARETO_MEAN) / PARETO_STD
    rng = np.random.default_rng(0)
    pareto = _pareto_ppf(rng.uniform(size=PARETONORMAL_SAMPLES))
    mix = (0.25 * (pareto - PARETO_MEAN) / PARETO_STD
           + 0.75 * rng.standard_normal(PARETONORMAL_SAMPLES))
    return np.quantile(mix / mix.std(), u)


def delay_table(jitter, delay_us, size=TABLE_SIZE):
    """The per-packet delays (µs, whole) the data plane draws from."""
    u = (np.arange(size) + 0.5) / size
    if jitter.distribution == "table":
        points = np.linspace(0, 1, len(jitter.table_us)) if len(jitter.table_us) > 1 \
            else np.zeros(1)
        offsets = np.interp(u, points, jitter.table_us)
    else:
        offsets = jitter.jitter_us * _standard_quantiles(jitter.distribution, u)
    return [max(0, round(delay_us + x)) for x in offsets]


def _delay_table(value):
    if not isinstance(value, list) or not value:
        raise ValueError("expected a non-empty list of delays, e.g. [0ms, 2ms, 10ms]")
    delays = [parse_time_us(v) for v in value]
    for i, (a, b) in enumerate(zip(delays, delays[1:])):
        if b < a:
            raise ValueError(f"not monotone: entry {i + 1} ({format_time_us(b)}) is less "
                             f"than entry {i} ({format_time_us(a)}); the table is an "
                             "inverse CDF, non-decreasing")
    return tuple(delays)


delay_table_kind = Kind(_delay_table, "a list of durations, non-decreasing",
                        {"type": "array", "items": TIME_JSON, "minItems": 1})


def read_jitter(section):
    if section is None:
        return None
    kind = section.field("distribution")
    is_table = kind == "table"
    jitter = Jitter(
        distribution=kind,
        jitter_us=0 if is_table else section.field("jitter"),
        table_us=section.field("table", required=True) if is_table else (),
        reorder=section.field("reorder"))
    if not is_table and "table" in section.data:
        section.known.add("table")
        section.problems.append(f"{section.sub_path('table')}: only with distribution table")
    section.reject_unknown()
    return jitter


def read_spikes(section):
    if section is None:
        return None
    spikes = DelaySpikes(probability=section.field("probability"),
                         length_us=section.field("length"))
    section.reject_unknown()
    return spikes
