"""DelayVariation: jitter (a table of delays drawn by a random index) and
delay spikes."""

from ...model.jitter import delay_table
from ...program import constants as p4
from ..codes import DIRECTION_IDS, draws_below
from ..entities import Range, TableEntry


def jitter_entries(profile):
    return [TableEntry(p4.TABLE_JITTER, {"dir": DIRECTION_IDS[name], "rand_index": index},
                       p4.ACTION_SET_DELAY, {"delay_us": delay})
            for name, direction in profile.directions().items() if direction.jitter
            for index, delay in enumerate(delay_table(direction.jitter, direction.delay_us))]


def delay_spike_entries(profile):
    """A spike where the packet's 16-bit draw is below its probability's
    threshold; none for a probability that rounds to 0."""
    entries = []
    for name, d in profile.directions().items():
        draws = d.delay_spikes and draws_below(d.delay_spikes.probability)
        if draws:
            entries.append(TableEntry(p4.TABLE_DELAY_SPIKES,
                                      {"dir": DIRECTION_IDS[name], "rand_spike": Range(*draws)},
                                      p4.ACTION_ADD_SPIKE, {"length_us": d.delay_spikes.length_us},
                                      priority=1))
    return entries
