import dataclasses
from pathlib import Path

import pytest

from linkemu.model.profile import ProfileError, load_profile, parse_profile
from linkemu.model.profile_schema import DEFAULT_QUEUE_PACKETS

PROFILES = Path(__file__).resolve().parents[2] / "profiles"


def valid():
    return {
        "name": "t", "mtu": 576,
        "downlink": {"rate": "64kbit", "delay": "300ms", "queue": 20},
        "uplink": {"rate": "64kbit", "delay": "300ms", "queue": 1, "overhead": 4},
    }


def problems(data):
    with pytest.raises(ProfileError) as info:
        parse_profile(data, source="t.yaml")
    return info.value.problems


def test_valid_profile():
    profile = parse_profile(valid())
    assert profile.mtu == 576
    assert profile.downlink.rate_bps == 64_000
    assert profile.downlink.delay_us == 300_000
    assert profile.downlink.queue_packets == 20
    assert profile.uplink.overhead_bytes == 4


def test_defaults():
    profile = parse_profile({"downlink": {}, "uplink": {"rate": "unlimited"}})
    assert profile.mtu == 1500
    assert profile.uplink.rate_bps is None and profile.downlink.rate_bps is None
    assert profile.downlink.delay_us == 0
    assert profile.downlink.queue_packets == DEFAULT_QUEUE_PACKETS


@pytest.mark.parametrize("path, value, fragment", [
    (("downlink", "rate"), "64kbps", "kbit"),
    (("downlink", "rate"), "500bit", "allowed 1kbit to 10Gbit"),
    (("downlink", "rate"), "20Gbit", "allowed 1kbit to 10Gbit"),
    (("uplink", "delay"), "2min", "duration"),
    (("uplink", "delay"), "61s", "allowed 0s to 60s"),
    (("downlink", "queue"), 0, "allowed 1 to 100000 packets"),
    (("downlink", "queue"), "20", "whole number"),
    (("downlink", "queue"), 2.5, "whole number"),
    (("downlink", "queue"), True, "whole number"),
    (("uplink", "overhead"), -1, "allowed 0 to 1000 bytes"),
    (("uplink", "link_buffer"), "579B", "a frame of the MTU with its overhead, 580 bytes"),
    (("downlink", "link_buffer"), "0B", "more than 0 bytes"),
    (("mtu",), 67, "allowed 68 to 9000 bytes"),
    (("mtu",), 65536, "allowed 68 to 9000 bytes"),
    (("name",), 5, "expected a name as text: quote it"),
    (("name",), "../../results/x", "expected a name of letters, digits, _ . + -"),
    (("name",), ".hidden", "starting with a letter or digit"),
    (("name",), "a/b", "at most 64 characters"),
    (("downlink", "delay"), "0.4us", "shorter than the switch clock's 1us"),
])
def test_bad_field_reports_path_value_and_allowed(path, value, fragment):
    data = valid()
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    (problem,) = problems(data)
    assert problem.startswith(".".join(path) + f": {value!r}: ")
    assert fragment in problem


def test_unknown_fields_are_rejected_with_the_allowed_ones():
    data = valid()
    data["downlink"]["bandwidth"] = "1Mbit"
    data["colour"] = "blue"
    found = problems(data)
    assert any(p.startswith("downlink.bandwidth: '1Mbit': unknown field; allowed: ")
               and "rate" in p for p in found)
    assert any(p.startswith("colour: 'blue': unknown field") for p in found)


def test_huge_values_and_keys_are_echoed_shortened():
    data = valid()
    data["downlink"]["rate"] = "9" * 5_000_000
    data["uplink"]["k" * 1_000_000] = list(range(1_000_000))
    found = problems(data)
    assert found[0].startswith("downlink.rate: '99999") and "..." in found[0]
    assert found[1].startswith("uplink.'kkkk") and "[0, 1, 2" in found[1]
    assert all(len(p) < 500 for p in found)
    assert problems({"downlink": {}, "uplink": {}, "a\nb": 1}) == [
        "'a\\nb': 1: unknown field; allowed: description, downlink, link_states, mtu, name, "
        "uplink"]


@pytest.mark.parametrize("field, value, fragment", [
    ("delay", "1" + "0" * 400 + "ms", "too large: a number of 401 characters"),
    ("queue_bytes", "1" + "0" * 400 + "B", "too large: a number of 401 characters"),
    ("arq", {"delay": "9" * 400 + "s", "max_retransmissions": 1}, "arq.delay: '999"),
    ("red", {"min": 10**400, "max": 10**401, "max_p": 0.1, "weight": 0.002},
     "red.max: 1000000000000000000000000000..."),
    ("red", {"min": float("nan"), "max": float("inf"), "max_p": 0.1, "weight": 0.002},
     "red.min: nan: expected a number of packets, 0 or more"),
])
def test_numbers_too_large_or_not_finite_are_problems(field, value, fragment):
    data = valid()
    data["downlink"][field] = value
    assert any(fragment in p for p in problems(data)), problems(data)


def test_names_are_safe_file_names():
    assert parse_profile({**valid(), "name": "x" * 64}).name == "x" * 64
    assert problems({**valid(), "name": "x" * 65})[0].endswith("at most 64 characters")
    assert parse_profile({**valid(), "name": "smix2-r0_1.5+"}).name == "smix2-r0_1.5+"


def test_state_names_must_be_text():
    static = {"distribution": "static", "value": "1s"}
    found = problems({"downlink": {}, "uplink": {}, "link_states": {
        "start": {1: 1}, "states": {1: {"error": 0, "duration": static, "next": {1: 1}}}}})
    assert found[0] == "link_states.states.1: 1: expected a state name as text: quote it"


def test_every_problem_is_reported_at_once():
    data = valid()
    data["downlink"]["rate"] = "fast"
    data["uplink"]["queue"] = -3
    del data["uplink"]["delay"]
    data["mtu"] = "big"
    assert len(problems(data)) == 3


def test_missing_direction_and_wrong_shapes():
    assert problems({"downlink": {}}) == ["uplink: missing; this section is required"]
    assert problems({"downlink": [1], "uplink": {}})[0].startswith("downlink: [1]: expected a mapping")
    assert problems("rate: 1Mbit")[0].startswith("(top level)")


def test_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("downlink: {rate: 1Mbit\n")
    with pytest.raises(ProfileError, match="(?s)bad.yaml.*not valid YAML"):
        load_profile(bad)
    with pytest.raises(ProfileError, match="cannot read"):
        load_profile(tmp_path / "missing.yaml")


def test_name_defaults_to_file_stem(tmp_path):
    path = tmp_path / "my-link.yaml"
    path.write_text("downlink: {}\nuplink: {}\n")
    assert load_profile(path).name == "my-link"


@pytest.mark.parametrize("path", sorted(PROFILES.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_profiles_are_valid(path):
    load_profile(path)


def test_gprs_optimal_matches_the_studies():
    profile = load_profile(PROFILES / "gprs-optimal.yaml")
    assert profile.mtu == 576
    for direction in (profile.downlink, profile.uplink):
        assert direction.rate_bps == 64_000
        assert direction.delay_us == 300_000
    assert profile.downlink.queue_packets == 20
    assert profile.uplink.queue_packets == 1
    assert profile.downlink.send_buffer == profile.uplink.send_buffer == 9600


# Spec table (link-model.md, section 3): good duration, bad duration,
# bad-state error, max retransmissions (None: no ARQ).
EXP = "exponential"
STUDY_LINKS = {
    "swww-low-arq": ((EXP, 6e6, 0, 9e6), (200e3, 1.9e6), 0.63, 1),
    "swww-medium-arq": ((EXP, 6e6, 0, 9e6), (200e3, 1.9e6), 0.63, 2),
    "swww-high-arq": ((EXP, 6e6, 0, 9e6), (200e3, 1.9e6), 0.63, 3),
    "smix1-r1": ((EXP, 15e6, 1e6, 20e6), (200e3, 1.5e6), 0.63, 1),
    "smix1-r3": ((EXP, 15e6, 1e6, 20e6), (200e3, 1.5e6), 0.63, 3),
    "smix1-r6": ((EXP, 15e6, 1e6, 20e6), (400e3, 4e6), 0.95, 6),
    **{f"smix2-r{n}-{test}": (("uniform", 0, *good), bad, 0.83, n or None)
       for n in (0, 2, 4)
       for test, good, bad in (("http-short", (2.8e6, 3.5e6), (1.4e6, 3e6)),
                               ("http-long", (8e6, 12e6), (1.4e6, 3e6)),
                               ("mix", (10e6, 25e6), (1.8e6, 4e6)))},
}


@pytest.mark.parametrize("name", sorted(STUDY_LINKS))
def test_study_profiles_match_the_spec(name):
    (kind, mean, low, high), (bad_low, bad_high), error, retx = STUDY_LINKS[name]
    profile = load_profile(PROFILES / f"{name}.yaml")
    chain = profile.states
    good, bad = chain.states["good"], chain.states["bad"]
    assert chain.start == {"good": 0.5, "bad": 0.5}
    assert (good.duration.distribution, good.duration.mean_us, good.duration.min_us,
            good.duration.max_us) == (kind, mean, low, high)
    assert (bad.duration.distribution, bad.duration.min_us, bad.duration.max_us) == (
        "uniform", bad_low, bad_high)
    assert good.error == {"downlink": 0, "uplink": 0}
    assert bad.error == {"downlink": error, "uplink": error}
    assert good.next == {"bad": 1} and bad.next == {"good": 1}
    for direction in profile.directions().values():
        assert direction.rate_bps == 64_000 and direction.delay_us == 300_000
        assert direction.send_buffer == (12000 if name.startswith("smix2") else 9600)
        if retx is None:
            assert direction.arq is None
        else:
            assert (direction.arq.delay_us, direction.arq.max_retransmissions) == (700_000, retx)
            assert direction.arq.in_order


def red_profile(**red):
    base = {"min": 2, "max": 7, "max_p": 0.1, "weight": 0.002}
    base.update(red)
    return {"mtu": 576, "downlink": {"rate": "64kbit", "queue": 20, "red": base}, "uplink": {}}


def test_red_in_packets_and_bytes():
    red = parse_profile(red_profile(gentle=True, ecn=True)).downlink.red
    assert (red.mode, red.min_th, red.max_th, red.max_p, red.weight) == ("packets", 2, 7, 0.1, 0.002)
    assert red.gentle and red.ecn and red.mean_packet_bytes == 576
    data = red_profile(mode="bytes", min="2000B", max="6000B", mean_packet="500B")
    data["downlink"]["queue_bytes"] = "11kB"
    direction = parse_profile(data).downlink
    assert (direction.red.min_th, direction.red.max_th) == (2000, 6000)
    assert direction.red.mean_packet_bytes == 500 and direction.queue_bytes == 11000


@pytest.mark.parametrize("red, fragment", [
    ({"min": 7, "max": 7}, "downlink.red: min 7 must be less than max 7"),
    ({"min": 8, "max": 7}, "min 8 must be less than max 7"),
    ({"max_p": 0}, "downlink.red.max_p: 0: out of range; allowed (0, 1]"),
    ({"max_p": 1.5}, "downlink.red.max_p: 1.5: out of range"),
    ({"weight": 0}, "downlink.red.weight: 0: out of range; allowed (0, 1)"),
    ({"weight": 1}, "downlink.red.weight: 1: out of range"),
    ({"mode": "bits"}, "downlink.red.mode: 'bits': expected one of packets, bytes"),
    ({"mode": "bytes", "min": 2, "max": "6000B"}, "downlink.red.min: 2: expected a size"),
    ({"min": -1}, "downlink.red.min: -1: expected a number of packets"),
])
def test_bad_red(red, fragment):
    found = problems_of(red_profile(**red))
    assert any(fragment in p for p in found), found


def test_red_needs_a_rate_and_limits_are_positive():
    data = red_profile()
    data["downlink"]["rate"] = "unlimited"
    assert any("RED needs a rate" in p for p in problems_of(data))
    data = red_profile()
    data["downlink"]["queue_bytes"] = "0B"
    assert any("downlink.queue_bytes: '0B': must be more than 0 bytes" in p
               for p in problems_of(data))


def problems_of(data):
    with pytest.raises(ProfileError) as info:
        parse_profile(data)
    return info.value.problems


def priority_data(**priority):
    base = {"match": [{"protocol": "udp"}], "queue": 10}
    base.update(priority)
    return {"downlink": {"rate": "64kbit", "queue": 22, "priority": base}, "uplink": {}}


def test_priority_class():
    data = priority_data(match=[{"protocol": "udp"}, {"dscp": 46},
                                {"protocol": 6, "src_port": 80, "dst_port": 1024}],
                         share=0.5, best_effort_share=0.5, queue_bytes="3000B",
                         red={"min": 2, "max": 7, "max_p": 0.1, "weight": 0.002})
    p = parse_profile(data).downlink.priority
    assert [(m.dscp, m.protocol, m.src_port, m.dst_port) for m in p.match] == [
        (None, 17, None, None), (46, None, None, None), (None, 6, 80, 1024)]
    assert (p.queue_packets, p.queue_bytes, p.share, p.best_effort_share) == (10, 3000, 0.5, 0.5)
    assert p.red.max_th == 7
    assert "priority class (udp or dscp 46 or tcp src port 80 dst port 1024)" in \
        parse_profile(data).downlink.describe()


@pytest.mark.parametrize("priority, fragment", [
    ({"match": []}, "downlink.priority.match: []: expected a list of matches"),
    ({"match": {"protocol": "udp"}}, "downlink.priority.match: {'protocol': 'udp'}: expected a list"),
    ({"match": [{}]}, "downlink.priority.match[0]: empty"),
    ({"match": [{"port": 80}]}, "downlink.priority.match[0]: port needs protocol tcp or udp"),
    ({"match": [{"protocol": "icmp", "dst_port": 80}]}, "dst_port needs protocol tcp or udp"),
    ({"match": [{"protocol": "tcp", "port": 80, "src_port": 1}]}, "not both"),
    ({"match": [{"protocol": "sctp"}]}, "downlink.priority.match[0].protocol: 'sctp': expected tcp"),
    ({"match": [{"dscp": 64}]}, "downlink.priority.match[0].dscp: 64: out of range"),
    ({"match": [{"protocol": "udp", "port": 70000}]}, "match[0].port: 70000: out of range"),
    ({"match": [{"protocol": "udp", "vlan": 3}]}, "match[0].vlan: 3: unknown field"),
    ({"share": 0}, "downlink.priority.share: 0: out of range; allowed (0, 1]"),
    ({"best_effort_share": 1.5}, "downlink.priority.best_effort_share: 1.5: out of range"),
    ({"queue": 0}, "downlink.priority.queue: 0: out of range"),
    ({"red": {"min": 3, "max": 2, "max_p": 0.1, "weight": 0.002}},
     "downlink.priority.red: min 3 must be less than max 2"),
])
def test_bad_priority(priority, fragment):
    found = problems_of(priority_data(**priority))
    assert any(fragment in p for p in found), found


def test_priority_limits_best_effort_and_rejects_what_it_cannot_do():
    data = priority_data()
    data["downlink"]["queue"] = 2000
    assert any("downlink.queue: 2000: with a priority class, a varying rate or a link buffer "
               "with ARQ, best effort queues at most 1024" in p for p in problems_of(data))
    data = priority_data()
    data["downlink"]["rate"] = "unlimited"
    assert any("downlink.priority: a priority class needs a rate" in p for p in problems_of(data))
    data = priority_data()
    data["downlink"]["sojourn_ramp"] = {"target": "5ms"}
    assert any("downlink.sojourn_ramp: cannot be combined with priority" in p
               for p in problems_of(data))


@pytest.mark.parametrize("base", [f"smix2-{link}{red}" for link in ("e0", "r0-mix", "r2-mix",
                                                                      "r4-mix")
                                  for red in ("", "-red")])
def test_smix2_priority_profiles_split_udp_from_their_base(base):
    plain = load_profile(PROFILES / f"{base}.yaml")
    split = load_profile(PROFILES / f"{base}-priority.yaml")
    priority = split.downlink.priority
    assert [(m.protocol, m.dscp, m.src_port, m.dst_port) for m in priority.match] == [
        (17, None, None, None)]
    # The study's HTB classes lie far above the link: UDP first, neither capped.
    assert (priority.queue_packets, priority.share, priority.best_effort_share) == (22, None, None)
    assert priority.red is None
    assert split.downlink == dataclasses.replace(plain.downlink, priority=priority)
    assert split.uplink == plain.uplink and split.states == plain.states


@pytest.mark.parametrize("variant", ["", "-red", "-priority", "-red-priority"])
def test_smix2_e0_is_r0_without_link_states(variant):
    e0 = load_profile(PROFILES / f"smix2-e0{variant}.yaml")
    r0 = load_profile(PROFILES / f"smix2-r0-mix{variant}.yaml")
    assert e0.states is None and r0.states is not None
    assert e0.directions() == r0.directions()


def test_cobalt_defaults_are_cakes():
    data = valid()
    data["downlink"]["cobalt"] = {}
    data["uplink"]["cobalt"] = {"target": "10ms", "interval": "200ms", "ecn": False}
    profile = parse_profile(data)
    down, up = profile.downlink.cobalt, profile.uplink.cobalt
    assert (down.target_us, down.interval_us, down.ecn, down.mtu) == (5000, 100000, True, 576)
    assert (up.target_us, up.interval_us, up.ecn) == (10000, 200000, False)
    assert "COBALT target 10ms interval 200ms without ECN" in profile.uplink.describe()


@pytest.mark.parametrize("cobalt, fragment", [
    ({"target": "100ms"}, "downlink.cobalt.target: '100ms': must be less than the interval, "
                          "100ms"),
    ({"target": "0ms"}, "downlink.cobalt.target: '0ms'"),
    ({"interval": -1}, "downlink.cobalt.interval: -1"),
    ({"ecn": "yes"}, "downlink.cobalt.ecn: 'yes': expected true or false"),
    ({"quantum": "0B", "isolation": "flows"},
     "downlink.cobalt.quantum: '0B': out of range; allowed 256 B to 65536 B"),
    ({"quantum": "1MB", "isolation": "flows"}, "downlink.cobalt.quantum: '1MB': out of range"),
    ({"quantum": "600B"}, "downlink.cobalt.quantum: '600B': a quantum needs flow isolation"),
    ({"quantom": 600}, "downlink.cobalt.quantom: 600: unknown field; allowed: ecn, interval, "
                       "isolation, quantum, target"),
    ({"isolation": "triple"}, "downlink.cobalt.isolation: 'triple': expected one of flowblind, "
                               "flows"),
])
def test_bad_cobalt(cobalt, fragment):
    data = valid()
    data["downlink"]["cobalt"] = cobalt
    found = problems(data)
    assert any(fragment in p for p in found), found


@pytest.mark.parametrize("other, value", [
    ("red", {"min": 2, "max": 7, "max_p": 0.1, "weight": 0.002}),
    ("priority", {"match": [{"protocol": "udp"}]}),
    ("link_buffer", "10kB"),
    ("rate_changes", [{"at": "1s", "rate": "32kbit"}]),
])
def test_cobalt_cannot_share_its_queue(other, value):
    data = valid()
    data["downlink"]["cobalt"] = {}
    data["downlink"][other] = value
    assert any(f"downlink.cobalt: cannot be combined with {other}" in p for p in problems(data))


def test_cobalt_needs_a_rate():
    data = valid()
    data["downlink"].update(rate="unlimited", cobalt={})
    assert any("downlink.cobalt: COBALT needs a rate" in p for p in problems(data))


@pytest.mark.parametrize("other, value, fragment", [
    ("queue", 5000, "downlink.queue: 5000: with flow isolation at most 4096 packets"),
    ("arq", {"delay": "100ms", "max_retransmissions": 2},
     "downlink.cobalt.isolation: triple-isolate cannot be combined with arq.in_order"),
])
def test_flow_isolation_limits(other, value, fragment):
    data = valid()
    data["downlink"]["cobalt"] = {"isolation": "triple-isolate"}
    data["downlink"][other] = value
    assert any(fragment in p for p in problems(data)), problems(data)
    data["downlink"]["cobalt"] = {"isolation": "flowblind"}
    assert not any("isolation" in p for p in problems_or_none(data))


def problems_or_none(data):
    try:
        parse_profile(data)
    except ProfileError as err:
        return err.problems
    return []
