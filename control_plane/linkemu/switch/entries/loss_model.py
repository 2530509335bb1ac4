"""LossModel: Bernoulli or Gilbert-Elliott loss, a good and a bad state per
direction."""

from ...program import constants as p4
from ..codes import DIRECTION_IDS, threshold
from ..entities import TableEntry


def loss_model_entries(profile):
    entries = []
    for name, direction in profile.directions().items():
        loss = direction.loss
        if loss is None:
            continue
        dir_id = DIRECTION_IDS[name]
        entries.append(TableEntry(p4.TABLE_LOSS_MODEL, {"dir": dir_id, "bad": 0},
                                  p4.ACTION_SET_GOOD,
                                  {"to_bad": threshold(loss.to_bad),
                                   "loss": threshold(loss.good_loss)}))
        entries.append(TableEntry(p4.TABLE_LOSS_MODEL, {"dir": dir_id, "bad": 1},
                                  p4.ACTION_SET_BAD,
                                  {"to_good": threshold(loss.to_good),
                                   "loss": threshold(loss.bad_loss)}))
    return entries
