"""QueueParams: each traffic class's router queue (its limits, its share of
the rate, whether its starts are decided late, whether RED watches it)."""

from dataclasses import dataclass

from ...program import constants as p4
from ..codes import byte_cost_q, queue_index
from ..entities import TableEntry
from .link_params import defers_best_effort


@dataclass(frozen=True)
class ClassQueue:
    """The router queue of one traffic class of a direction."""

    direction: str
    cls: str
    packets: int
    octets: int | None
    share: float | None
    red: object
    rate_bps: float | None
    deferred: bool   # its starts are decided late (defers_best_effort)

    def key(self):
        return {"queue": queue_index(self.direction, self.cls)}


def class_queues(profile):
    """Every class's router queue: best effort per direction, and priority
    where the profile splits the traffic."""
    queues = []
    for name, d in profile.directions().items():
        p = d.priority
        queues.append(ClassQueue(name, "best_effort", d.queue_packets, d.queue_bytes,
                                 p.best_effort_share if p else None, d.red, d.rate_bps,
                                 deferred=defers_best_effort(profile, name)))
        if p:
            queues.append(ClassQueue(name, "priority", p.queue_packets, p.queue_bytes,
                                     p.share, p.red, d.rate_bps, deferred=False))
    return queues


def queue_params_entries(profile):
    return [TableEntry(p4.TABLE_QUEUE_PARAMS, q.key(), p4.ACTION_SET_QUEUE,
                       {"queue_limit": q.packets, "queue_bytes_limit": q.octets or 0,
                        "share_cost_q": byte_cost_q(q.rate_bps * q.share) if q.share else 0,
                        "deferred": int(q.deferred), "aqm": int(q.red is not None)})
            for q in class_queues(profile)]
