"""LinkArrival: how each direction's arrival goes, a plain direction's with
its parameters in place (its link_params and its best effort's queue), the
others' through link_params and the rest."""

from ...program import constants as p4
from ..codes import DIRECTION_NAMES
from ..entities import TableEntry
from .link_params import features, link_params_entries
from .queue_params import class_queues


def is_plain(profile, name):
    """Whether direction `name` has no optional feature but link errors and
    no RED: its arrival then takes the data plane's cheapest path."""
    direction = profile.directions()[name]
    return features(profile, name) & ~p4.FEATURE_LINK_ERRORS == 0 and direction.red is None


def link_entries(profile):
    best_effort = {q.direction: q for q in class_queues(profile) if q.cls == "best_effort"}
    entries = []
    for link in link_params_entries(profile):
        name = DIRECTION_NAMES[link.match["dir"]]
        if not is_plain(profile, name):
            entries.append(TableEntry(p4.TABLE_LINK, link.match, p4.ACTION_FEATURED))
            continue
        queue = best_effort[name]
        entries.append(TableEntry(p4.TABLE_LINK, link.match, p4.ACTION_PLAIN, {
            **{key: link.params[key] for key in ("byte_cost_q", "overhead_bytes", "delay_us",
                                                 "send_buffer", "buffer_hold_us")},
            "queue_limit": queue.packets,
            "queue_bytes_limit": queue.octets or 0,
            "link_errors": int(bool(link.params["features"] & p4.FEATURE_LINK_ERRORS))}))
    return entries
