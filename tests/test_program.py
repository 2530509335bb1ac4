"""The compiled program, as BMv2 loads it."""

import json
from collections import Counter
from pathlib import Path

import pytest

from linkemu.drivers import event_log
from linkemu.switch import dataplane

BMV2_JSON = Path(__file__).resolve().parent.parent / "build" / "linkemu.json"


@pytest.mark.skipif(not BMV2_JSON.exists(), reason="build/linkemu.json is missing (needs p4c)")
def test_each_digest_is_one_learn_list():
    # p4c makes a learn list of every digest call. P4Runtime configures only
    # one list of a name; another keeps BMv2's defaults (16 samples or 1 s),
    # so its events came late or were still in the switch when the log stopped.
    lists = json.loads(BMV2_JSON.read_text())["learn_lists"]
    names = Counter(entry["name"] for entry in lists)
    assert names == {"event_digest_t": 1}


@pytest.mark.skipif(not BMV2_JSON.exists(), reason="build/linkemu.json is missing (needs p4c)")
def test_the_controller_unpacks_the_event_as_the_program_packs_it():
    # The digest sends event_t's members end to end in one field.
    program = json.loads(BMV2_JSON.read_text())
    feature, = (t for t in program["header_types"] if t["name"] == "feature_pass_h")
    assert tuple(bits for name, bits, _ in feature["fields"]
                 if name.startswith("_event_")) == event_log.FIELD_BITS


@pytest.mark.skipif(not BMV2_JSON.exists(), reason="build/linkemu.json is missing (needs p4c)")
def test_the_controller_takes_off_as_many_bytes_as_a_held_packet_carries():
    program = json.loads(BMV2_JSON.read_text())
    widths = {t["name"]: sum(f[1] for f in t["fields"]) for t in program["header_types"]}
    assert widths["link_state_h"] == 8 * dataplane.LINK_STATE_BYTES
    sizes = {c["name"].rsplit(".", 1)[-1]: c["size"] for c in program["counter_arrays"]}
    for name in dataplane.HELD_CELLS + dataplane.HELD_ONLY:
        cells = 4 if name in dataplane.QUEUE_COUNTERS else 2
        assert sizes[name] == (2 * cells if name in dataplane.HELD_CELLS else cells), name
