"""Values encoded as P4Runtime carries them, and table entries translated
by a P4Info."""

import pytest
from p4.config.v1 import p4info_pb2

from linkemu.switch.encoding import encode
from linkemu.switch.entities import Range, TableEntry, Ternary
from linkemu.switch.errors import P4RuntimeError
from linkemu.switch.p4info import P4Info


def test_encode_is_canonical():
    assert encode(0, 9) == b"\x00"
    assert encode(480, 9) == b"\x01\xe0"
    with pytest.raises(P4RuntimeError):
        encode(512, 9)


def small_p4info():
    info = p4info_pb2.P4Info()
    table = info.tables.add()
    table.preamble.id, table.preamble.name, table.preamble.alias = 1, "C.t", "t"
    table.match_fields.add(id=1, name="k", bitwidth=8, match_type=p4info_pb2.MatchField.EXACT)
    table.match_fields.add(id=2, name="m", bitwidth=48,
                           match_type=p4info_pb2.MatchField.TERNARY)
    table.match_fields.add(id=3, name="r", bitwidth=16, match_type=p4info_pb2.MatchField.RANGE)
    action = info.actions.add()
    action.preamble.id, action.preamble.name, action.preamble.alias = 2, "C.a", "a"
    action.params.add(id=1, name="p", bitwidth=16)
    return P4Info(info)


def test_table_entry_encoding():
    info = small_p4info()
    message = info.table_entry(TableEntry("t", {"k": 5, "m": Ternary(0xAB, 0xFF)}, "a",
                                          {"p": 258}, priority=3))
    assert message.table_id == 1 and message.priority == 3
    assert message.match[0].exact.value == b"\x05"
    assert (message.match[1].ternary.value, message.match[1].ternary.mask) == (b"\xab", b"\xff")
    assert message.action.action.params[0].value == b"\x01\x02"
    wildcard = info.table_entry(TableEntry("C.t", {"k": 1, "m": Ternary(0, 0)}, "a", {"p": 0}))
    assert len(wildcard.match) == 1  # a don't-care field is omitted


def test_decode_entry_reads_back_what_table_entry_wrote():
    info = small_p4info()
    entry = TableEntry("C.t", {"k": 5, "m": Ternary(0xAB, 0xFF), "r": Range(3, 700)}, "C.a",
                       {"p": 258}, priority=3)
    assert info.decode_entry(info.table_entry(entry)) == entry


def test_table_entry_errors_name_what_is_wrong():
    info = small_p4info()
    with pytest.raises(P4RuntimeError, match="no table named 'nope'"):
        info.table_entry(TableEntry("nope", {}, "a", {"p": 0}))
    with pytest.raises(P4RuntimeError, match="no match field 'x'"):
        info.table_entry(TableEntry("t", {"x": 1}, "a", {"p": 0}))
    with pytest.raises(P4RuntimeError, match="takes \\['p'\\]"):
        info.table_entry(TableEntry("t", {"k": 1}, "a", {}))
    with pytest.raises(P4RuntimeError, match="t \\(k 1\\): match r: range 9 to 8 is empty"):
        info.table_entry(TableEntry("t", {"k": 1, "r": Range(9, 8)}, "a", {"p": 0}))
