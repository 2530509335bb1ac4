"""The compiled program, as BMv2 loads it and as the controller writes to it."""

import json
import sys
from collections import Counter

from conftest import BUILD, ROOT, compiled_program, environment
from linkemu.model.profile import load_profile, parse_profile
from linkemu.switch.counters import HELD_CELLS, HELD_ONLY, QUEUE_COUNTERS
from linkemu.switch.p4info import P4Info
from linkemu.switch.push import entry_problems

BMV2_JSON = BUILD / "linkemu.json"
P4INFO = BUILD / "linkemu.p4info.txtpb"
sys.path.insert(0, str(ROOT / "util"))
from gen_p4_constants import OUTPUT, render  # noqa: E402

pytestmark = environment(compiled_program)


def test_each_digest_is_one_learn_list():
    # p4c makes a learn list of every digest call. P4Runtime configures only
    # one list of a name; another keeps BMv2's defaults (16 samples or 1 s),
    # so its events came late or were still in the switch when the log stopped.
    lists = json.loads(BMV2_JSON.read_text())["learn_lists"]
    names = Counter(entry["name"] for entry in lists)
    assert names == {"event_digest_t": 1}


def test_the_generated_constants_are_what_this_build_gives():
    # Names, header sizes and constants the controller takes from the program:
    # a change to p4src needs 'make constants' and the file committed with it.
    generated = render(P4Info.from_file(P4INFO),
                       json.loads(BMV2_JSON.read_text()))
    assert OUTPUT.read_text() == generated, "run 'make constants'"


def test_the_controller_takes_off_as_many_bytes_as_a_held_packet_carries():
    program = json.loads(BMV2_JSON.read_text())
    sizes = {c["name"].rsplit(".", 1)[-1]: c["size"] for c in program["counter_arrays"]}
    for name in HELD_CELLS + HELD_ONLY:
        cells = 4 if name in QUEUE_COUNTERS else 2
        assert sizes[name] == (2 * cells if name in HELD_CELLS else cells), name


def profile(**downlink):
    return parse_profile({"downlink": downlink, "uplink": {}})


def test_the_programs_widths_refuse_what_push_could_not_write():
    info = P4Info.from_file(P4INFO)
    for path in sorted((ROOT / "profiles").glob("*.yaml")):
        assert entry_problems(load_profile(path), info) == [], path
    for bad, field in [
            (profile(queue_bytes="5000MB"), "queue_bytes_limit"),
            (profile(arq={"delay": "400000000s", "max_retransmissions": 1}), "retx_delay_us"),
            (profile(delay_spikes={"probability": 0.1, "length": "400000000s"}), "length_us"),
            (profile(jitter={"distribution": "uniform", "jitter": "400000000s"}), "stall_us"),
            (profile(rate="1kbit", priority={"match": [{"protocol": "udp"}], "share": 1e-9}),
             "share_cost_q")]:
        problems = entry_problems(bad, info)
        assert any(f" {field}: " in p and "does not fit in" in p for p in problems), problems


def test_timed_departure_names_a_field_of_the_program_and_the_bench_hold():
    # simple_switch reads the departure instant from the field the launcher
    # names: the program's (and the benchmark's bare hold's) as p4c named it.
    from linkemu.testbed.bmv2 import DEPARTURE_FIELD
    header, field = DEPARTURE_FIELD.split(".", 1)
    for program in (BMV2_JSON, BUILD / "hold.json"):
        bmv2 = json.loads(program.read_text())
        kind = next(h["header_type"] for h in bmv2["headers"] if h["name"] == header)
        fields = next(t["fields"] for t in bmv2["header_types"] if t["name"] == kind)
        assert [field, 48, False] in fields, program
