"""A P4Info made from table entries, for tests without p4c: the tables, match
fields and action parameters that a profile's entries name, of the widths
and sizes a test chooses (not the program's: those come from its P4Info)."""

from p4.config.v1 import p4info_pb2

from linkemu.model.link_states import constant_errors
from linkemu.model.profile import parse_profile
from linkemu.switch.entities import Lpm, Range, Ternary
from linkemu.switch.p4info import P4Info
from linkemu.switch.push import profile_entries

MATCH_KINDS = {Ternary: p4info_pb2.MatchField.TERNARY, Range: p4info_pb2.MatchField.RANGE,
               Lpm: p4info_pb2.MatchField.LPM}
RED = {"min": 2, "max": 7, "max_p": 0.1, "weight": 0.002}
# Between them, every table and action a push writes.
PROFILES = (
    {"downlink": {"rate": "1Mbit", "delay": "10ms", "queue": 20, "queue_bytes": "30000B",
                  "arq": {"delay": "100ms", "max_retransmissions": 2, "in_order": False},
                  "loss": {"model": "bernoulli", "p": 0.01}, "red": RED,
                  "priority": {"match": [{"dscp": 46, "protocol": "tcp", "port": 5001}],
                               "queue": 5, "red": {**RED, "gentle": True}, "share": 0.5},
                  "jitter": {"distribution": "normal", "jitter": "5ms"},
                  "delay_spikes": {"probability": 0.01, "length": "100ms"},
                  "reorder": 0.01, "duplicate": 0.01, "corrupt": 0.01},
     "uplink": {"rate": "1Mbit", "sojourn_ramp": {"target": "5ms"}},
     "link_states": constant_errors({"downlink": 0.1, "uplink": 0})},
    {"downlink": {"rate": "10Mbit", "cobalt": {}}, "uplink": {}},
    {"downlink": {}, "uplink": {}},
)


def p4info(widths=None, sizes=None):
    """Fields and parameters `widths.get(name, 64)` bits wide, tables of
    `sizes.get(table, 4096)` entries."""
    widths, sizes = widths or {}, sizes or {}
    info = p4info_pb2.P4Info()
    tables, actions = {}, {}
    for data in PROFILES:
        for table, entries in profile_entries(parse_profile(data)).items():
            fields = tables.setdefault(table, {})
            for entry in entries:
                fields.update({k: type(v) for k, v in entry.match.items()})
                actions.setdefault(entry.action, set()).update(entry.params)
    for number, (name, fields) in enumerate(tables.items(), 1):
        table = info.tables.add(size=sizes.get(name, 4096))
        table.preamble.id, table.preamble.name = number, name
        table.preamble.alias = name.rsplit(".", 1)[1]
        for i, (field, kind) in enumerate(fields.items(), 1):
            table.match_fields.add(id=i, name=field, bitwidth=widths.get(field, 64),
                                   match_type=MATCH_KINDS.get(kind, p4info_pb2.MatchField.EXACT))
    for number, (name, params) in enumerate(actions.items(), 1000):
        action = info.actions.add()
        action.preamble.id, action.preamble.name = number, name
        action.preamble.alias = name.rsplit(".", 1)[1]
        for i, param in enumerate(sorted(params), 1):
            action.params.add(id=i, name=param, bitwidth=widths.get(param, 64))
    return P4Info(info)
