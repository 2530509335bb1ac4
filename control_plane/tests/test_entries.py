"""The table entries a profile asks for, control by control."""

import pytest

from linkemu.model.link_states import constant_errors
from linkemu.model.profile import parse_profile
from linkemu.program import constants as p4
from linkemu.switch.codes import CLASS_IDS, DIRECTION_IDS, byte_cost_q, queue_index, threshold
from linkemu.switch.entities import Ternary
from linkemu.switch.entries.cobalt import (cobalt_decay_entries, cobalt_entries,
                                           cobalt_law_entries, decay_end, flow_queue_entries,
                                           grid_count, inv_sqrt_q32, law_sum_q16)
from linkemu.switch.entries.link_arrival import is_plain, link_entries
from linkemu.switch.entries.link_errors import arq_entries
from linkemu.switch.entries.link_params import (buffer_hold_us, defers_best_effort,
                                                link_params_entries)
from linkemu.switch.entries.packet_faults import packet_fault_entries
from linkemu.switch.entries.queue_params import class_queues, queue_params_entries
from linkemu.switch.entries.red import red_curve, red_decay, red_entries
from linkemu.switch.entries.release import STALL_MARGIN_US, release_entries
from linkemu.switch.entries.sojourn_ramp import sojourn_ramp, sojourn_ramp_entries
from linkemu.switch.entries.traffic_class import traffic_class_entries
from linkemu.switch.push import push_profile


def test_byte_cost_is_microseconds_per_byte_in_q20():
    assert byte_cost_q(None) == 0
    assert byte_cost_q(64_000) == 125 << 20          # 125 us per byte
    assert byte_cost_q(8e6) == 1 << 20               # 1 us per byte
    # 10 Gbit/s keeps 0.1 % precision.
    exact = 8e6 / 10e9 * (1 << 20)
    assert abs(byte_cost_q(10e9) - exact) / exact < 1e-3


def test_link_params_entries_carry_each_direction():
    profile = parse_profile({
        "downlink": {"rate": "64kbit", "delay": "300ms", "queue": 20},
        "uplink": {"rate": "1Mbit", "delay": "1.5s", "queue": 1, "overhead": 8}})
    down, up = link_params_entries(profile)
    assert down.match == {"dir": 0} and up.match == {"dir": 1}
    assert down.params["delay_us"] == 300_000 and up.params["delay_us"] == 1_500_000
    assert up.params["overhead_bytes"] == 8
    assert up.params["byte_cost_q"] == 8 << 20
    assert down.params["features"] == up.params["features"] == 0


def test_features_name_what_a_direction_uses():
    profile = parse_profile({
        "downlink": {"loss": {"model": "bernoulli", "p": 0.01}, "sojourn_ramp": {"target": "5ms"}},
        "uplink": {"rate": "1Mbit", "priority": {"match": [{"protocol": "udp"}], "queue": 5}}})
    down, up = link_params_entries(profile)
    assert down.params["features"] == (p4.FEATURE_LOSS_MODEL
                                       | p4.FEATURE_SOJOURN_RAMP)
    assert up.params["features"] == p4.FEATURE_DEFERRED | p4.FEATURE_PRIORITY


def test_link_errors_feature_only_where_a_state_errs():
    """A direction no state errs draws no link error: its frames need no pass
    at the end of their serialization."""
    static = {"distribution": "static", "value": "1s"}
    profile = parse_profile({"downlink": {}, "uplink": {}, "link_states": {
        "start": {"good": 1}, "states": {
            "good": {"error": 0, "duration": static, "next": {"bad": 1}},
            "bad": {"error": {"downlink": 0.3, "uplink": 0}, "duration": static,
                    "next": {"good": 1}}}}})
    down, up = link_params_entries(profile)
    assert down.params["features"] == p4.FEATURE_LINK_ERRORS
    assert up.params["features"] == 0
    constant = parse_profile({"downlink": {}, "uplink": {},
                              "link_states": constant_errors({"downlink": 0, "uplink": 0.1})})
    down, up = link_params_entries(constant)
    assert (down.params["features"], up.params["features"]) == (0, p4.FEATURE_LINK_ERRORS)


def test_a_plain_direction_takes_its_parameters_in_its_arrival():
    """A direction with no optional feature but link errors, and no RED, is
    plain: its link entry carries the whole arrival's parameters."""
    profile = parse_profile({
        "downlink": {"rate": "64kbit", "delay": "300ms", "queue": 20, "queue_bytes": "3000B",
                     "overhead": 8, "link_buffer": "9600B"},
        "uplink": {"rate": "1Mbit", "loss": {"model": "bernoulli", "p": 0.01}},
        "link_states": constant_errors({"downlink": 0.1, "uplink": 0})})
    assert is_plain(profile, "downlink") and not is_plain(profile, "uplink")
    down, up = link_entries(profile)
    assert down.match == {"dir": 0} and down.action.endswith("link_arrival.plain")
    assert down.params == {"byte_cost_q": byte_cost_q(64_000), "overhead_bytes": 8,
                           "delay_us": 300_000, "queue_limit": 20, "queue_bytes_limit": 3000,
                           "link_errors": 1, "send_buffer": 9600,
                           "buffer_hold_us": buffer_hold_us(profile.downlink)}
    assert up.match == {"dir": 1} and up.action.endswith("link_arrival.featured")
    assert up.params == {}


def test_red_takes_a_direction_off_the_plain_arrival():
    profile = parse_profile({"downlink": {"rate": "1Mbit", "queue": 100, "red": {
        "min": 5, "max": 15, "max_p": 0.1, "weight": 0.002}}, "uplink": {}})
    assert not is_plain(profile, "downlink") and is_plain(profile, "uplink")


def test_release_and_arq_have_entries_of_their_own():
    profile = parse_profile({
        "downlink": {"delay": "300ms",
                     "arq": {"delay": "700ms", "max_retransmissions": 2, "in_order": True}},
        "uplink": {"arq": {"delay": "100ms", "max_retransmissions": 1, "in_order": False}}})
    down, up = release_entries(profile)
    assert down.params == {"stall_us": 2 * 700_000 + STALL_MARGIN_US}
    assert up.params == {"stall_us": 0}
    down, up = arq_entries(profile)
    assert (down.match, down.params) == ({"dir": 0},
                                         {"max_retx": 2, "retx_delay_us": 700_000})
    assert (up.match, up.params) == ({"dir": 1}, {"max_retx": 1, "retx_delay_us": 100_000})
    assert arq_entries(parse_profile({"downlink": {}, "uplink": {}})) == []


class TableSwitch:
    """Keeps the entries a push writes, table by table; without a P4Info
    (widths unchecked)."""

    p4info = None

    def __init__(self):
        self.tables = {}

    def sync_tables(self, tables):
        self.tables.update(tables)


def test_push_profile_writes_the_errors_only_a_single_state_fixes():
    def pushed_errors(link_states):
        data = {"downlink": {}, "uplink": {}}
        if link_states:
            data["link_states"] = link_states
        switch = TableSwitch()
        push_profile(switch, parse_profile(data))
        return [e.params["threshold"] for e in switch.tables.get(p4.TABLE_LINK_STATE, [])]

    assert pushed_errors(None) == [0, 0]
    assert pushed_errors(constant_errors({"downlink": 0.5, "uplink": 0})) == [
        threshold(0.5), 0]
    static = {"distribution": "static", "value": "1s"}
    assert pushed_errors({"start": {"a": 1}, "states": {
        "a": {"error": 0.1, "duration": static, "next": {"b": 1}},
        "b": {"error": 0.2, "duration": static, "next": {"a": 1}}}}) == []


def red(**fields):
    base = {"min": 2, "max": 7, "max_p": 0.1, "weight": 0.002}
    base.update(fields)
    return parse_profile({"mtu": 576, "downlink": {"rate": "64kbit", "red": base},
                          "uplink": {}}).downlink.red


@pytest.mark.parametrize("gentle", [False, True])
def test_red_curve_is_contiguous_and_follows_classic_red(gentle):
    rows = red_curve(red(gentle=gentle))
    assert rows[0][0] == 2 << 16
    for (_, high, _), (low, _, _) in zip(rows, rows[1:]):
        assert low == high + 1
    probabilities = [p for _, _, p in rows[:-1]]
    assert probabilities == sorted(probabilities)
    assert rows[-1][2] is None and rows[-1][1] == 2**64 - 1
    assert rows[-1][0] == (14 if gentle else 7) << 16
    for low, high, p in rows[:32]:
        mid = (low + high) / 2 / 65536
        assert abs(p - 0.1 * (mid - 2) / 5) < 0.1 / 32
    if gentle:
        assert abs(rows[32][2] - 0.1) < 0.9 / 32 and rows[-2][2] > 0.95


def test_red_decay_is_the_idle_time_power_of_one_minus_w():
    link = red()
    rows = red_decay(link, 64_000)
    tx_us = 576 * 8 / 64_000 * 1e6
    assert rows[0][0] == 0
    for (_, high, _), (low, _, _) in zip(rows, rows[1:]):
        assert low == high + 1
    for low, high, factor in rows:
        assert (1 - 0.002) ** ((high + 1) / tx_us) <= factor <= (1 - 0.002) ** (low / tx_us)
    assert rows[-1][2] < 1.1e-4


def test_sojourn_ramp_rises_from_half_the_target_to_the_target():
    rows = sojourn_ramp(5000)
    assert rows[0][0] == 2500 and rows[-1] == (5000, 2**48 - 1, 1.0)
    for (_, high, p), (low, _, q) in zip(rows, rows[1:]):
        assert low == high + 1 and q > p
    for low, high, p in rows[:-1]:
        assert abs(p - ((low + high) / 2 - 2500) / 2500) < 1 / 32


def test_sojourn_ramp_goes_where_the_queue_is_judged():
    """Flow isolation judges a packet's sojourn in its flow queue, when the
    flow queue is served; one FIFO queue judges it on arrival."""
    profile = parse_profile({
        "downlink": {"rate": "10Mbit", "sojourn_ramp": {"target": "5ms"},
                     "cobalt": {"isolation": "flows"}},
        "uplink": {"rate": "10Mbit", "sojourn_ramp": {"target": "4ms"}}})
    tables = sojourn_ramp_entries(profile)
    fifo = tables[p4.TABLE_ADMISSION_SOJOURN_RAMP_SOJOURN_RAMP]
    flows = tables[p4.TABLE_FLOW_STEP_SOJOURN_RAMP_SOJOURN_RAMP]
    assert {e.match["dir"] for e in fifo} == {DIRECTION_IDS["uplink"]}
    assert {e.match["dir"] for e in flows} == {DIRECTION_IDS["downlink"]}
    assert all(e.action == p4.ACTION_FLOW_STEP_SOJOURN_RAMP_MARK_WITH for e in flows)
    assert len(flows) == len(sojourn_ramp(5000)) and len(fifo) == len(sojourn_ramp(4000))


def priority_profile():
    return parse_profile({
        "downlink": {"rate": "64kbit", "queue": 20, "queue_bytes": "11000B",
                     "red": {"min": 2, "max": 7, "max_p": 0.1, "weight": 0.002},
                     "priority": {"match": [{"protocol": "udp"},
                                            {"dscp": 46, "protocol": "tcp", "port": 5001}],
                                  "queue": 5, "share": 0.5, "best_effort_share": 0.25}},
        "uplink": {"rate": "1Mbit", "queue": 7}})


def test_without_priority_each_direction_has_one_immediate_queue():
    profile = parse_profile({"downlink": {"rate": "64kbit", "queue": 20,
                                          "queue_bytes": "3000B"},
                             "uplink": {"queue": 1}})
    entries = queue_params_entries(profile)
    assert [(e.match, e.params) for e in entries] == [
        ({"queue": 0}, {"queue_limit": 20, "queue_bytes_limit": 3000,
                              "share_cost_q": 0, "deferred": 0, "aqm": 0}),
        ({"queue": 1}, {"queue_limit": 1, "queue_bytes_limit": 0,
                              "share_cost_q": 0, "deferred": 0, "aqm": 0})]
    assert traffic_class_entries(profile) == []


def test_priority_split_gives_two_queues_with_shares_and_deferred_best_effort():
    entries = {e.match["queue"]: e.params
               for e in queue_params_entries(priority_profile())}
    downlink, priority = (queue_index("downlink", c) for c in CLASS_IDS)
    uplink, uplink_priority = (queue_index("uplink", c) for c in CLASS_IDS)
    assert entries[downlink] == {"queue_limit": 20, "queue_bytes_limit": 11000,
                               "share_cost_q": byte_cost_q(16_000), "deferred": 1,
                               "aqm": 1}
    assert entries[priority] == {"queue_limit": 5, "queue_bytes_limit": 0,
                               "share_cost_q": byte_cost_q(32_000), "deferred": 0,
                               "aqm": 0}
    assert entries[uplink]["deferred"] == 0 and uplink_priority not in entries


def test_traffic_class_entries_match_what_is_given_and_port_either_way():
    entries = traffic_class_entries(priority_profile())
    wild, exact8, exact16 = Ternary(0, 0), 0xff, 0xffff
    assert all(e.params == {"cls": 1} and e.match["dir"] == 0 and e.match["is_ip"] == 1
               for e in entries)
    udp, tcp_src, tcp_dst = (e.match for e in entries)
    assert udp["protocol"] == Ternary(17, exact8) and udp["dscp"] == wild
    assert udp["src_port"] == wild and udp["dst_port"] == wild
    assert tcp_src["dscp"] == Ternary(46, 0x3f) and tcp_src["protocol"] == Ternary(6, exact8)
    assert tcp_src["src_port"] == Ternary(5001, exact16) and tcp_src["dst_port"] == wild
    assert tcp_dst["dst_port"] == Ternary(5001, exact16) and tcp_dst["src_port"] == wild


def test_red_entries_are_keyed_by_class():
    entries = red_entries(priority_profile())
    params = entries[p4.TABLE_RED_PARAMS]
    best_effort = queue_index("downlink", "best_effort")
    assert [e.match for e in params] == [{"queue": best_effort}]
    assert all(e.match["queue"] == best_effort for e in entries[p4.TABLE_RED_CURVE])
    again = red_entries(priority_profile(), generation=9)[p4.TABLE_RED_PARAMS]
    assert [e.params["generation"] for e in again] == [9]


def test_packet_faults_are_thresholds_per_direction_and_a_feature():
    profile = parse_profile({"downlink": {"reorder": 0.25, "duplicate": 0.5},
                             "uplink": {"corrupt": 1}})
    down, up = packet_fault_entries(profile)
    assert down.params == {"reorder": 1 << 14, "duplicate": 1 << 15, "corrupt": 0}
    assert up.params == {"reorder": 0, "duplicate": 0, "corrupt": 1 << 16}
    assert all(e.params["features"] == p4.FEATURE_PACKET_FAULTS
               for e in link_params_entries(profile))
    assert packet_fault_entries(parse_profile({"downlink": {}, "uplink": {}})) == []


def test_a_link_buffer_with_arq_decides_best_effort_starts_late():
    """Behind a retransmitted frame the buffer may be full: a best-effort
    frame's start waits for it, so the direction defers best effort."""
    arq = {"delay": "700ms", "max_retransmissions": 2}
    data = {"downlink": {"rate": "64kbit", "link_buffer": "9600B", "arq": arq},
            "uplink": {"rate": "64kbit", "link_buffer": "9600B"},
            "link_states": constant_errors({"downlink": 0.1, "uplink": 0.1})}
    profile = parse_profile(data)
    assert defers_best_effort(profile, "downlink")
    assert not defers_best_effort(profile, "uplink")   # no ARQ: nothing to wait for
    errorless = parse_profile({**data, "link_states": constant_errors(
        {"downlink": 0, "uplink": 0})})
    assert not defers_best_effort(errorless, "downlink")
    (down, _) = [q for q in class_queues(profile) if q.cls == "best_effort"]
    assert down.deferred


def test_cobalt_takes_cakes_parameters_for_the_rate():
    """Cake raises the target to 1.5 frames of the MTU and the interval by
    as much, and counts a sojourn as above target only beyond 4 frames."""
    profile = parse_profile({
        "downlink": {"rate": "100Mbit", "cobalt": {}},
        "uplink": {"rate": "1Mbit", "overhead": 20, "cobalt": {"ecn": False}}})
    entries = cobalt_entries(profile)
    down, up = entries[p4.TABLE_ROUTER_COBALT_COBALT_COBALT_PARAMS]
    assert down.match == {"queue": queue_index("downlink", "best_effort")}
    assert down.params == {"target_us": 5000, "threshold_us": 5000, "interval_us": 100000,
                           "per_interval_q32": round(2**32 / 100000), "ecn": 1,
                           "generation": 0}
    frame_us = 1520 * 8   # the MTU and its overhead at 1 Mbit/s: 12.16 ms
    assert up.params["target_us"] == round(1.5 * frame_us)
    assert up.params["interval_us"] == round(100000 + 1.5 * frame_us - 5000)
    assert up.params["threshold_us"] == 4 * frame_us and up.params["ecn"] == 0
    assert link_params_entries(profile)[0].params["features"] == p4.FEATURE_COBALT
    assert len(entries[p4.TABLE_ROUTER_COBALT_COBALT_COBALT_LAW]) == \
        len(entries[p4.TABLE_ROUTER_COBALT_COBALT_COBALT_DECAY]) + 1
    assert entries[p4.TABLE_FLOW_STEP_COBALT_COBALT_PARAMS] == []
    again = cobalt_entries(profile, generation=7)[p4.TABLE_ROUTER_COBALT_COBALT_COBALT_PARAMS]
    assert [e.params["generation"] for e in again] == [7, 7]
    empty = cobalt_entries(parse_profile({"downlink": {}, "uplink": {}}))
    assert all(entries == [] for entries in empty.values())


def test_flow_isolation_takes_the_other_cobalt_and_a_quantum():
    profile = parse_profile({"mtu": 1500,
                             "downlink": {"rate": "10Mbit", "overhead": 14,
                                          "cobalt": {"isolation": "flows"}},
                             "uplink": {}})
    entries = cobalt_entries(profile)
    assert entries[p4.TABLE_ROUTER_COBALT_COBALT_COBALT_PARAMS] == []
    (params,) = entries[p4.TABLE_FLOW_STEP_COBALT_COBALT_PARAMS]
    assert params.match == {"queue": queue_index("downlink", "best_effort")}
    assert entries[p4.TABLE_FLOW_STEP_COBALT_COBALT_LAW]
    tables = flow_queue_entries(profile)
    assert [(e.match, e.params) for e in tables[p4.TABLE_FQ_PARAMS]] == \
        [({"dir": 0}, {"quantum": 1514, "hosts": 0})]
    assert tables[p4.TABLE_FLOW_STEP_HOST_SHARE_FQ_SHARE] == []
    assert link_params_entries(profile)[0].params["features"] == p4.FEATURE_FLOWS
    given = parse_profile({"downlink": {"rate": "10Mbit",
                                        "cobalt": {"isolation": "flows", "quantum": "300B"}},
                           "uplink": {}})
    assert flow_queue_entries(given)[p4.TABLE_FQ_PARAMS][0].params["quantum"] == 300


def test_triple_isolate_shares_the_quantum_by_host_load_as_cake():
    profile = parse_profile({"downlink": {"rate": "10Mbit",
                                          "cobalt": {"isolation": "triple-isolate"}},
                             "uplink": {}})
    tables = flow_queue_entries(profile)
    assert tables[p4.TABLE_FQ_PARAMS][0].params == {"quantum": 1500, "hosts": 1}
    for table in (p4.TABLE_FLOW_ENQUEUE_HOST_SHARE_FQ_SHARE,
                  p4.TABLE_FLOW_STEP_HOST_SHARE_FQ_SHARE):
        shares = {e.match["load"]: e.params["share"] for e in tables[table]}
        assert shares[1] == (1500 * 65535) >> 16 == 1499
        assert shares[4] == (1500 * (65535 // 4)) >> 16 == 374
        assert len(shares) == p4.FQ_SHARE_SIZE // 2


def test_cobalt_law_covers_every_count_once():
    """The law's prefixes tile the 32-bit counts; each holds 1/sqrt of its
    count and of the ones beside it, and the sum of the steps below it."""
    entries = cobalt_law_entries("law", "law_action")
    covered = 0
    for entry in entries:
        value, prefix = entry.match["count"].value, entry.match["count"].prefix_len
        assert value == covered, value
        covered += 1 << (32 - prefix)
        assert entry.params["inv_sqrt_q32"] == inv_sqrt_q32(value)
        assert entry.params["prev_inv_sqrt_q32"] == inv_sqrt_q32(max(value - 1, 0))
        assert entry.params["next_inv_sqrt_q32"] == inv_sqrt_q32(value + 1)
    assert covered == 2**32
    assert inv_sqrt_q32(0) == inv_sqrt_q32(1) == 2**32 - 1
    assert inv_sqrt_q32(4) == 2**31
    assert len(entries) <= 512   # COBALT_LAW_SIZE
    # The sum: exact to 128, then the asymptotic series, which meets it.
    assert law_sum_q16(3) == (2 * (2**32 - 1) + round(2**32 / 2**0.5)) >> 16
    exact = sum(inv_sqrt_q32(j) for j in range(129)) / 2**32
    assert abs(law_sum_q16(129) / 2**16 - exact) < 1e-4


def test_cobalt_decay_ends_below_what_is_left():
    entries = cobalt_decay_entries("decay", "decay_to")
    for entry, after in zip(entries, entries[1:]):
        assert entry.match["sum_q16"].high + 1 == after.match["sum_q16"].low
        assert entry.params["sum_q16"] == law_sum_q16(entry.params["count"])
        assert entry.match["sum_q16"].low == entry.params["sum_q16"] + 1
    assert entries[0].params["count"] == 1 and entries[-1].match["sum_q16"].high == 2**64 - 1
    assert decay_end(law_sum_q16(10)) == 9 and decay_end(law_sum_q16(10) + 1) == 10
    assert decay_end(law_sum_q16(1)) == 0
    assert decay_end(law_sum_q16(1000) + 1) == grid_count(1000) == 960
