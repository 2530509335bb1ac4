"""The compiled program, as BMv2 loads it."""

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from linkemu.switch import dataplane
from linkemu.switch.p4runtime import P4Info

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
BMV2_JSON = BUILD / "linkemu.json"
sys.path.insert(0, str(ROOT / "util"))
from gen_p4_constants import OUTPUT, render  # noqa: E402


@pytest.mark.skipif(not BMV2_JSON.exists(), reason="build/linkemu.json is missing (needs p4c)")
def test_each_digest_is_one_learn_list():
    # p4c makes a learn list of every digest call. P4Runtime configures only
    # one list of a name; another keeps BMv2's defaults (16 samples or 1 s),
    # so its events came late or were still in the switch when the log stopped.
    lists = json.loads(BMV2_JSON.read_text())["learn_lists"]
    names = Counter(entry["name"] for entry in lists)
    assert names == {"event_digest_t": 1}


@pytest.mark.skipif(not BMV2_JSON.exists(), reason="build/linkemu.json is missing (needs p4c)")
def test_the_generated_constants_are_what_this_build_gives():
    # Names, header sizes and constants the controller takes from the program:
    # a change to p4src needs 'make constants' and the file committed with it.
    generated = render(P4Info.from_file(BUILD / "linkemu.p4info.txtpb"),
                       json.loads(BMV2_JSON.read_text()))
    assert OUTPUT.read_text() == generated, "run 'make constants'"


@pytest.mark.skipif(not BMV2_JSON.exists(), reason="build/linkemu.json is missing (needs p4c)")
def test_the_controller_takes_off_as_many_bytes_as_a_held_packet_carries():
    program = json.loads(BMV2_JSON.read_text())
    sizes = {c["name"].rsplit(".", 1)[-1]: c["size"] for c in program["counter_arrays"]}
    for name in dataplane.HELD_CELLS + dataplane.HELD_ONLY:
        cells = 4 if name in dataplane.QUEUE_COUNTERS else 2
        assert sizes[name] == (2 * cells if name in dataplane.HELD_CELLS else cells), name
