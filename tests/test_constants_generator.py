"""The generator of program/constants.py reads the event log's outcomes and
flags from p4src (tests/test_program.py checks the generated file against
the build)."""

import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "util"))
import gen_p4_constants  # noqa: E402


def event_codes(monkeypatch, tmp_path, source):
    (tmp_path / "defines.p4").write_text(source)
    monkeypatch.setattr(gen_p4_constants, "P4SRC", tmp_path)
    return gen_p4_constants.event_codes(gen_p4_constants.source_constants())


def test_outcomes_come_by_value_with_their_comments_and_the_rest_are_flags(monkeypatch,
                                                                           tmp_path):
    outcomes, flags = event_codes(monkeypatch, tmp_path, """
const bit<8> EVENT_DROP_QUEUE = 1;   // router queue full
const bit<8> EVENT_RELEASED   = 0;   // left the far end
const bit<8> EVENT_HELD       = 2;   // held behind a retransmission
const bit<8> EVENT_MARKED     = 1;
""")
    assert list(outcomes.items()) == [("released", "left the far end"),
                                      ("drop_queue", "router queue full")]
    assert flags == {"held": 2, "marked": 1}


@pytest.mark.parametrize("source, message", [
    ("const bit<8> EVENT_RELEASED = 0; // out\nconst bit<8> EVENT_DROP_AQM = 2; // RED\n",
     "not numbered 0, 1"),
    ("const bit<8> EVENT_RELEASED = 0;\n", "EVENT_RELEASED: no comment says what it means"),
])
def test_outcomes_out_of_order_or_without_a_meaning_are_refused(monkeypatch, tmp_path,
                                                               source, message):
    with pytest.raises(SystemExit, match=message):
        event_codes(monkeypatch, tmp_path, source)
