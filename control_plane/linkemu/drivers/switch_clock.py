"""The switch's clock, read from this host.

BMv2 time-stamps packets in microseconds since it started, on the host's
real-time clock, so a switch instant is a host instant (time.time()) less
the switch's start. P4Runtime cannot read that start; probes
(switch.probe) find it. A probe comes back stamped with its ingress time:
it entered between the instants it was sent and came back, which bounds
the start; the start is the same for every probe, so it lies where all
their bounds meet.
"""

import itertools
import time
from dataclasses import dataclass

from ..switch.probe import exchange, probe_frame

MIN_PROBES = 16
TARGET_UNCERTAINTY_S = 0.0002
PROBE_BUDGET_S = 2.0         # more probes while the bound is wider than the target


@dataclass(frozen=True)
class ProbeSample:
    sent: float       # host instants, time.time()
    back: float
    stamp_us: int     # the switch's clock at the probe's ingress


@dataclass(frozen=True)
class SwitchClock:
    """The switch's start, known to lie between two host instants."""

    earliest: float
    latest: float

    @property
    def start_unix(self):
        """The host instant of the switch's 0."""
        return (self.earliest + self.latest) / 2

    @property
    def uncertainty_s(self):
        """The start is within this either side of start_unix."""
        return (self.latest - self.earliest) / 2

    def switch_us(self, unix):
        """The switch's clock (microseconds) at host instant `unix`."""
        return max(0, round((unix - self.start_unix) * 1e6))

    def narrowed(self, sample):
        """The bounds that this clock and one more probe meet in."""
        # A stamp is whole microseconds, rounded down.
        return SwitchClock(max(self.earliest, sample.sent - sample.stamp_us / 1e6 - 1e-6),
                           min(self.latest, sample.back - sample.stamp_us / 1e6))

    @classmethod
    def unknown(cls):
        return cls(float("-inf"), float("inf"))


def measure(switch):
    """The clock of `switch` (a p4runtime.Switch, primary), from probes sent
    one after another: at least MIN_PROBES, and more until its uncertainty is
    within TARGET_UNCERTAINTY_S or PROBE_BUDGET_S has passed (a busy host
    answers slowly)."""
    clock = SwitchClock.unknown()
    deadline = time.time() + PROBE_BUDGET_S
    for number in itertools.count():
        clock = clock.narrowed(probe(switch, number))
        if number + 1 >= MIN_PROBES and (clock.uncertainty_s <= TARGET_UNCERTAINTY_S
                                         or time.time() >= deadline):
            return clock


def probe(switch, number):
    """One probe's sample."""
    sent, back, metadata = exchange(switch, probe_frame(number))
    return ProbeSample(sent, back, metadata["ingress_us"])
