"""Probes: frames the controller sends into the pipeline on the CPU port,
which linkemu's program sends straight back, stamped in their packet-in
metadata with the switch's clock at their ingress (`ingress_us`) and the
router queue that their destination address names as it was then
(`waiting`, `waiting_bytes`: packets and L3 bytes)."""

import threading
import time

from ..program import constants as p4
from .errors import P4RuntimeError

PROBE_TIMEOUT_S = 1.0
PROBE_ETHERTYPE = 0x88B5   # local experimental: no host stack answers it

# A switch sends every packet-in to its primary client: one probe at a time
# per process, so that each thread gets its own answer.
_one_at_a_time = threading.Lock()


def probe_frame(number, queue=0):
    """An Ethernet frame that names probe `number` and, in its destination
    address, router queue `queue` (queue_index)."""
    return (queue.to_bytes(6, "big") + bytes(6) + PROBE_ETHERTYPE.to_bytes(2, "big")
            + number.to_bytes(4, "big") + bytes(46))


def exchange(switch, frame):
    """(instant sent, instant back, {metadata name: int}) of `frame` sent to
    `switch` (a p4runtime.Switch, primary), as time.time(). A probe lost
    while another client (`linkemu push`) was primary is sent again once
    this one has taken the switch back (one that yields raises instead)."""
    with _one_at_a_time:
        for attempt in (1, 2):
            sent = time.time()
            switch.send_packet(frame)
            while answer := switch.next_packet_in(max(0.0, sent + PROBE_TIMEOUT_S - time.time())):
                back, payload, metadata = answer
                if payload == frame and "ingress_us" in metadata:
                    return sent, back, metadata
            if attempt == 1:
                switch.take_back()
    raise P4RuntimeError(
        f"the switch at {switch.address} sent no probe back within "
        f"{PROBE_TIMEOUT_S:g} s: run simple_switch_grpc with --cpu-port {p4.CPU_PORT} "
        "(as linkemu's own launchers do) and linkemu's program")
