"""LinkParams: a direction's rate, delay, overhead, link send buffer and the
features bitmap that lets the data plane skip what the profile does not use
(read by the arrival of a direction with optional features, and by a
deferred packet's passes)."""

from ...program import constants as p4
from ..codes import DIRECTION_IDS, DIRECTION_NAMES, byte_cost_q
from ..entities import TableEntry


def link_errors(profile, name):
    return profile.states is not None and profile.states.has_errors(name)


def defers_best_effort(profile, name):
    """Whether direction `name` decides a best-effort packet's start late: a
    priority class may go first, the rate in force then applies, or a link
    send buffer waits for a frame retransmitted by ARQ."""
    d = profile.directions()[name]
    return bool(d.priority or d.rate_schedule or
                (d.send_buffer and d.arq and link_errors(profile, name)))


def features(profile, name):
    """The features bitmap of direction `name`: the data plane skips the rest."""
    direction = profile.directions()[name]
    return ((p4.FEATURE_LOSS_MODEL if direction.loss else 0)
            | (p4.FEATURE_SOJOURN_RAMP if direction.sojourn_target_us else 0)
            | (p4.FEATURE_DEFERRED if defers_best_effort(profile, name) else 0)
            | (p4.FEATURE_DELAY_VARIATION if direction.jitter or direction.delay_spikes else 0)
            | (p4.FEATURE_PACKET_FAULTS if direction.reorder or direction.duplicate
               or direction.corrupt else 0)
            | (p4.FEATURE_PRIORITY if direction.priority else 0)
            | (p4.FEATURE_COBALT if direction.cobalt and not direction.isolates_flows else 0)
            | (p4.FEATURE_FLOWS if direction.isolates_flows else 0)
            | (p4.FEATURE_LINK_ERRORS if link_errors(profile, name) else 0))


def buffer_hold_us(direction):
    """How long a frame keeps its place in the link send buffer after its
    serialization: until its link-layer acknowledgement is back, a round
    trip of the propagation delay (docs/link-model.md)."""
    return 2 * direction.delay_us if direction.send_buffer else 0


def link_params_entry(profile, name, rate_bps, down=False):
    """Direction `name`'s parameters at `rate_bps` (the rate over time changes
    only that), or with the link down (an outage)."""
    direction = profile.directions()[name]
    return TableEntry(
        table=p4.TABLE_LINK_PARAMS,
        match={"dir": DIRECTION_IDS[name]},
        action=p4.ACTION_SET_PARAMS,
        params={
            "byte_cost_q": byte_cost_q(rate_bps),
            "overhead_bytes": direction.overhead_bytes,
            "delay_us": direction.delay_us,
            "features": features(profile, name),
            "down": int(down),
            "send_buffer": direction.send_buffer or 0,
            "buffer_hold_us": buffer_hold_us(direction),
        })


def link_params_entries(profile):
    """At the profile's rate: a RateDriver takes the rate over time from there."""
    return [link_params_entry(profile, name, direction.rate_bps)
            for name, direction in profile.directions().items()]


def link_error_directions(switch):
    """The directions for which the profile on the switch draws link errors."""
    return {DIRECTION_NAMES[e.match["dir"]] for e in switch.read_table(p4.TABLE_LINK_PARAMS)
            if e.params["features"] & p4.FEATURE_LINK_ERRORS}
