"""DelayVariation: jitter (a table of delays drawn by a random index) and
delay spikes."""

from ...model.jitter import delay_table
from ...program import constants as p4
from ..codes import DIRECTION_IDS, threshold
from ..entities import TableEntry


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
