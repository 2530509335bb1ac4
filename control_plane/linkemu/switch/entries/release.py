"""Release: how long a due packet of each direction waits for earlier ones
(in-order release)."""

from ...model.jitter import delay_table
from ...program import constants as p4
from ..codes import DIRECTION_IDS
from ..entities import TableEntry

# With in-order release, a packet waits past its due instant for earlier
# packets at most the longest ARQ hold plus this margin; only a predecessor
# that vanished from the hold loop (a pipeline change) takes that long.
STALL_MARGIN_US = 1_000_000


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


def release_entries(profile):
    return [TableEntry(p4.TABLE_RELEASE, {"dir": DIRECTION_IDS[name]}, p4.ACTION_DECIDE,
                       {"stall_us": stall_us(direction)})
            for name, direction in profile.directions().items()]
