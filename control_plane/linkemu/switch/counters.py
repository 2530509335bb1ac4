"""The program's counters, read per direction (and the router queue's per
class), and what they say about the frames inside the link.

Their names and what each counts come from the program (program.constants'
COUNTERS, from each counter's @brief); how their cells are laid out and
which of them account for a frame's way through the link is said here."""

import time

from ..program import constants as p4
from .codes import CLASS_IDS, DIRECTION_IDS, DIRECTION_NAMES, queue_index

# Where a frame that entered the link ends: delivered, or dropped once
# (drop_aqm_ect is a part of drop_aqm; malformed frames never entered).
LINK_EXITS = ("link_out", "drop_queue", "drop_aqm", "drop_codel", "drop_blue",
              "drop_link_error", "drop_loss_model", "drop_hold")
# Where a frame comes in: to the link, as a duplicate, to a router queue.
ENTRY_COUNTERS = ("link_in", "duplicated", "queue_enter")
# The router queue's counters have a cell per class (queue_index).
QUEUE_COUNTERS = ("drop_queue", "drop_aqm", "drop_aqm_ect", "ecn_marks", "ramp_marks",
                  "drop_codel", "drop_blue", "cobalt_marks", "queue_enter")
# A held packet carries its state (link_state_h) ahead of the frame, and BMv2
# counts those bytes too. The counters that can count a held packet have a
# second half of cells for held packets (HELD_CELLS in
# p4src/v1model/include/define_v1model.p4), which counter_cells folds into the
# first less the state's bytes; COBALT's drops (when the packet leaves the
# router queue) count held packets only.
HELD_CELLS = ("link_out", "drop_link_error")
HELD_ONLY = ("drop_codel", "drop_blue")


def in_flight(counters, direction):
    """Frames that entered `direction` and have neither left nor been dropped,
    from a read_counters() reading (a duplicate leaves twice)."""
    return (counters["link_in"][direction][0] + counters["duplicated"][direction][0]
            - sum(counters[name][direction][0] for name in LINK_EXITS))


def wait_until_idle(switch, timeout_s, poll_s=0.1):
    """Reads the counters until no frame is inside the link, for at most
    `timeout_s`; returns the last reading and {direction: frames} still
    inside then (empty once idle)."""
    deadline = time.monotonic() + timeout_s
    while True:
        counters = read_counters(switch)
        inside = {d: n for d in DIRECTION_IDS if (n := in_flight(counters, d)) > 0}
        if not inside or time.monotonic() > deadline:
            return counters, inside
        time.sleep(poll_s)


def counter_cells(switch, name):
    """{index: (packets, bytes)} of a counter, every byte count the frame's."""
    cells = {c.index: (c.packets, c.bytes) for c in switch.read_counter(name)}
    if name in HELD_ONLY:
        return {i: (packets, octets - p4.LINK_STATE_BYTES * packets)
                for i, (packets, octets) in cells.items()}
    if name not in HELD_CELLS:
        return cells
    half = len(cells) // 2
    return {i: (packets + cells[i + half][0],
                octets + cells[i + half][1] - p4.LINK_STATE_BYTES * cells[i + half][0])
            for i, (packets, octets) in cells.items() if i < half}


def read_counters(switch):
    """{counter: {direction: (packets, bytes)}} for every counter of the
    program, in its order.

    The router queue's counters also have a cell per class, keyed
    "direction/class" (e.g. "downlink/priority"); the direction's cell is the
    sum of its classes."""
    queues = {queue_index(d, c): (d, f"{d}/{c}") for d in DIRECTION_IDS for c in CLASS_IDS}
    counters = {}
    # Frames keep flowing between the reads: the ways in are read last, so a
    # reading never shows fewer frames inside than there are.
    for name in sorted(p4.COUNTERS, key=lambda name: name in ENTRY_COUNTERS):
        cells = {}
        for index, (packets, octets) in counter_cells(switch, name).items():
            if name not in QUEUE_COUNTERS:
                if index in DIRECTION_NAMES:
                    cells[DIRECTION_NAMES[index]] = (packets, octets)
                continue
            if index not in queues:
                continue
            direction, queue = queues[index]
            cells[queue] = (packets, octets)
            total = cells.get(direction, (0, 0))
            cells[direction] = (total[0] + packets, total[1] + octets)
        counters[name] = cells
    return {name: counters[name] for name in p4.COUNTERS}
