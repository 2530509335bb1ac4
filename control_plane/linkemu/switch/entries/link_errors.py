"""LinkErrors: each direction's link error probability (and the one that
takes over at an instant on the switch's clock), and link-layer
retransmission (ARQ) where the profile has it."""

from ...program import constants as p4
from ..codes import DIRECTION_IDS, threshold
from ..entities import TableEntry


def link_state_entries(errors, next_errors=None, at_us=0):
    """Entries for per-direction error probabilities {direction: p}; with
    `next_errors`, those take over at `at_us` on the switch's clock."""
    next_errors = errors if next_errors is None else next_errors
    return [TableEntry(p4.TABLE_LINK_STATE, {"dir": DIRECTION_IDS[name]},
                       p4.ACTION_SET_ERROR,
                       {"threshold": threshold(p), "next": threshold(next_errors[name]),
                        "at": at_us})
            for name, p in errors.items()]


def arq_entries(profile):
    return [TableEntry(p4.TABLE_ARQ, {"dir": DIRECTION_IDS[name]}, p4.ACTION_RETRANSMIT,
                       {"max_retx": direction.arq.max_retransmissions,
                        "retx_delay_us": direction.arq.delay_us})
            for name, direction in profile.directions().items() if direction.arq]
