import pytest
from p4.config.v1 import p4info_pb2

from linkemu.drivers import queue_monitor
from linkemu.model.link_states import constant_errors
from linkemu.model.profile import parse_profile
from linkemu.program import constants as p4
from linkemu.switch import dataplane
from linkemu.switch.dataplane import Port, PortLayout, byte_cost_q, link_params_entries
from linkemu.switch.p4runtime import P4Info, P4RuntimeError, TableEntry, Ternary, encode


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
    assert dataplane.is_plain(profile, "downlink") and not dataplane.is_plain(profile, "uplink")
    down, up = dataplane.link_entries(profile)
    assert down.match == {"dir": 0} and down.action.endswith("link_arrival.plain")
    assert down.params == {"byte_cost_q": byte_cost_q(64_000), "overhead_bytes": 8,
                           "delay_us": 300_000, "queue_limit": 20, "queue_bytes_limit": 3000,
                           "link_errors": 1, "send_buffer": 9600,
                           "buffer_hold_us": dataplane.buffer_hold_us(profile.downlink)}
    assert up.match == {"dir": 1} and up.action.endswith("link_arrival.featured")
    assert up.params == {}


def test_red_takes_a_direction_off_the_plain_arrival():
    profile = parse_profile({"downlink": {"rate": "1Mbit", "queue": 100, "red": {
        "min": 5, "max": 15, "max_p": 0.1, "weight": 0.002}}, "uplink": {}})
    assert not dataplane.is_plain(profile, "downlink") and dataplane.is_plain(profile, "uplink")


def test_release_and_arq_have_entries_of_their_own():
    profile = parse_profile({
        "downlink": {"delay": "300ms",
                     "arq": {"delay": "700ms", "max_retransmissions": 2, "in_order": True}},
        "uplink": {"arq": {"delay": "100ms", "max_retransmissions": 1, "in_order": False}}})
    down, up = dataplane.release_entries(profile)
    assert down.params == {"stall_us": 2 * 700_000 + dataplane.STALL_MARGIN_US}
    assert up.params == {"stall_us": 0}
    down, up = dataplane.arq_entries(profile)
    assert (down.match, down.params) == ({"dir": 0},
                                         {"max_retx": 2, "retx_delay_us": 700_000})
    assert (up.match, up.params) == ({"dir": 1}, {"max_retx": 1, "retx_delay_us": 100_000})
    assert dataplane.arq_entries(parse_profile({"downlink": {}, "uplink": {}})) == []


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
        dataplane.push_profile(switch, parse_profile(data))
        return [e.params["threshold"] for e in switch.tables.get(p4.TABLE_LINK_STATE, [])]

    assert pushed_errors(None) == [0, 0]
    assert pushed_errors(constant_errors({"downlink": 0.5, "uplink": 0})) == [
        dataplane.threshold(0.5), 0]
    static = {"distribution": "static", "value": "1s"}
    assert pushed_errors({"start": {"a": 1}, "states": {
        "a": {"error": 0.1, "duration": static, "next": {"b": 1}},
        "b": {"error": 0.2, "duration": static, "next": {"a": 1}}}}) == []


def test_port_parsing():
    assert Port.parse("3") == Port(3)
    assert Port.parse("2@00:00:00:00:00:0a") == Port(2, "00:00:00:00:00:0a")
    for bad in ("x", "1@zz:00:00:00:00:00", "1@00:00"):
        with pytest.raises(ValueError):
            Port.parse(bad)


def test_single_host_sides_forward_everything_to_the_one_port():
    layout = PortLayout(fixed=(Port(1),), mobile=(Port(2),))
    forward = [e for e in layout.table_entries() if e.table.endswith("forward")]
    assert {(e.match["dir"], e.params["port"]) for e in forward} == {(0, 2), (1, 1)}
    assert all(e.match["dst_addr"] == Ternary(0, 0) for e in forward)


def test_several_hosts_get_mac_entries_and_a_flood_group():
    layout = PortLayout(fixed=(Port(1, "00:00:00:00:00:01"),),
                        mobile=(Port(2, "00:00:00:00:00:02"), Port(3, "00:00:00:00:00:03")))
    entries = layout.table_entries()
    downlink = [e for e in entries if e.table.endswith("forward") and e.match["dir"] == 0]
    assert [(e.action.rsplit(".", 1)[1], e.priority) for e in downlink] == [
        ("to_port", 2), ("to_port", 2), ("flood", 1)]
    groups = {g.group_id: g.ports for g in layout.multicast_groups()}
    dup = p4.DUP_GROUP_BASE
    assert groups == {dataplane.FLOOD_GROUPS["downlink"]: (2, 3),
                      dataplane.FLOOD_GROUPS["uplink"]: (1,),
                      dup + 1: (1, 1), dup + 2: (2, 2), dup + 3: (3, 3)}


@pytest.mark.parametrize("fixed, mobile, message", [
    ((), (Port(2),), "fixed side needs at least one port"),
    ((Port(1),), (Port(1),), "listed twice"),
    ((Port(1),), (Port(480),), "higher ports hold packets"),
    ((Port(1),), (Port(2), Port(3, "00:00:00:00:00:03")), "needs each host's MAC"),
])
def test_bad_layouts(fixed, mobile, message):
    with pytest.raises(ValueError, match=message):
        PortLayout(fixed, mobile)


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
    entry = TableEntry("C.t", {"k": 5, "m": Ternary(0xAB, 0xFF)}, "C.a", {"p": 258}, priority=3)
    assert info.decode_entry(info.table_entry(entry)) == entry


def test_table_entry_errors_name_what_is_wrong():
    info = small_p4info()
    with pytest.raises(P4RuntimeError, match="no table named 'nope'"):
        info.table_entry(TableEntry("nope", {}, "a", {"p": 0}))
    with pytest.raises(P4RuntimeError, match="no match field 'x'"):
        info.table_entry(TableEntry("t", {"x": 1}, "a", {"p": 0}))
    with pytest.raises(P4RuntimeError, match="takes \\['p'\\]"):
        info.table_entry(TableEntry("t", {"k": 1}, "a", {}))


def red(**fields):
    base = {"min": 2, "max": 7, "max_p": 0.1, "weight": 0.002}
    base.update(fields)
    return parse_profile({"mtu": 576, "downlink": {"rate": "64kbit", "red": base},
                          "uplink": {}}).downlink.red


@pytest.mark.parametrize("gentle", [False, True])
def test_red_curve_is_contiguous_and_follows_classic_red(gentle):
    rows = dataplane.red_curve(red(gentle=gentle))
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
    rows = dataplane.red_decay(link, 64_000)
    tx_us = 576 * 8 / 64_000 * 1e6
    assert rows[0][0] == 0
    for (_, high, _), (low, _, _) in zip(rows, rows[1:]):
        assert low == high + 1
    for low, high, factor in rows:
        assert (1 - 0.002) ** ((high + 1) / tx_us) <= factor <= (1 - 0.002) ** (low / tx_us)
    assert rows[-1][2] < 1.1e-4


def test_sojourn_ramp_rises_from_half_the_target_to_the_target():
    rows = dataplane.sojourn_ramp(5000)
    assert rows[0][0] == 2500 and rows[-1] == (5000, 2**48 - 1, 1.0)
    for (_, high, p), (low, _, q) in zip(rows, rows[1:]):
        assert low == high + 1 and q > p
    for low, high, p in rows[:-1]:
        assert abs(p - ((low + high) / 2 - 2500) / 2500) < 1 / 32


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
    entries = dataplane.queue_params_entries(profile)
    assert [(e.match, e.params) for e in entries] == [
        ({"queue": 0}, {"queue_limit": 20, "queue_bytes_limit": 3000,
                              "share_cost_q": 0, "deferred": 0, "aqm": 0}),
        ({"queue": 1}, {"queue_limit": 1, "queue_bytes_limit": 0,
                              "share_cost_q": 0, "deferred": 0, "aqm": 0})]
    assert dataplane.traffic_class_entries(profile) == []


def test_priority_split_gives_two_queues_with_shares_and_deferred_best_effort():
    entries = {e.match["queue"]: e.params
               for e in dataplane.queue_params_entries(priority_profile())}
    downlink, priority = (dataplane.queue_index("downlink", c) for c in dataplane.CLASS_IDS)
    uplink, uplink_priority = (dataplane.queue_index("uplink", c) for c in dataplane.CLASS_IDS)
    assert entries[downlink] == {"queue_limit": 20, "queue_bytes_limit": 11000,
                               "share_cost_q": byte_cost_q(16_000), "deferred": 1,
                               "aqm": 1}
    assert entries[priority] == {"queue_limit": 5, "queue_bytes_limit": 0,
                               "share_cost_q": byte_cost_q(32_000), "deferred": 0,
                               "aqm": 0}
    assert entries[uplink]["deferred"] == 0 and uplink_priority not in entries


def test_traffic_class_entries_match_what_is_given_and_port_either_way():
    entries = dataplane.traffic_class_entries(priority_profile())
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
    entries = dataplane.red_entries(priority_profile())
    params = entries[p4.TABLE_RED_PARAMS]
    best_effort = dataplane.queue_index("downlink", "best_effort")
    assert [e.match for e in params] == [{"queue": best_effort}]
    assert all(e.match["queue"] == best_effort for e in entries[p4.TABLE_RED_CURVE])


class FakeCounterSwitch:
    """Answers read_counter with one cell per index, packets = index + 1, and
    held packets' cells (HELD_CELLS) with no packets."""

    def read_counter(self, name):
        from types import SimpleNamespace
        size = 4 if name in dataplane.QUEUE_COUNTERS else 2
        cells = [SimpleNamespace(index=i, packets=i + 1, bytes=10 * (i + 1)) for i in range(size)]
        if name in dataplane.HELD_CELLS:
            cells += [SimpleNamespace(index=size + i, packets=0, bytes=0) for i in range(size)]
        return cells


def test_held_packets_cells_are_folded_in_without_the_state_they_carry():
    from types import SimpleNamespace

    class Switch:
        def read_counter(self, name):
            return [SimpleNamespace(index=0, packets=2, bytes=200),   # downlink, fresh
                    SimpleNamespace(index=1, packets=1, bytes=100),
                    SimpleNamespace(index=2, packets=3, bytes=300 + 3 * p4.LINK_STATE_BYTES),
                    SimpleNamespace(index=3, packets=0, bytes=0)]

    assert dataplane.counter_cells(Switch(), "link_out") == {0: (5, 500), 1: (1, 100)}
    assert dataplane.read_counters(Switch())["link_out"] == {"downlink": (5, 500),
                                                              "uplink": (1, 100)}


def test_a_counter_of_held_packets_only_loses_the_state_they_carry():
    from types import SimpleNamespace

    class Switch:
        def read_counter(self, name):
            return [SimpleNamespace(index=0, packets=2, bytes=200 + 2 * p4.LINK_STATE_BYTES),
                    SimpleNamespace(index=1, packets=0, bytes=0)]

    assert dataplane.counter_cells(Switch(), "queue_leave") == {0: (2, 200), 1: (0, 0)}


def test_queue_counters_are_read_per_class_and_summed_per_direction():
    counters = dataplane.read_counters(FakeCounterSwitch())
    assert counters["link_in"] == {"downlink": (1, 10), "uplink": (2, 20)}
    # A direction's best effort has its direction's index, priority 2 more.
    assert counters["drop_queue"] == {
        "downlink/best_effort": (1, 10), "downlink/priority": (3, 30), "downlink": (4, 40),
        "uplink/best_effort": (2, 20), "uplink/priority": (4, 40), "uplink": (6, 60)}


def test_in_flight_counts_each_frame_once():
    counters = {name: {"downlink": (0, 0)} for name in dataplane.COUNTERS}
    counters["link_in"]["downlink"] = (10, 0)
    counters["link_out"]["downlink"] = (5, 0)
    counters["drop_aqm"]["downlink"] = (3, 0)
    counters["drop_aqm_ect"]["downlink"] = (3, 0)    # a part of drop_aqm
    counters["drop_malformed"]["downlink"] = (4, 0)  # never entered the link
    assert dataplane.in_flight(counters, "downlink") == 2


def test_packet_faults_are_thresholds_per_direction_and_a_feature():
    profile = parse_profile({"downlink": {"reorder": 0.25, "duplicate": 0.5},
                             "uplink": {"corrupt": 1}})
    down, up = dataplane.packet_fault_entries(profile)
    assert down.params == {"reorder": 1 << 14, "duplicate": 1 << 15, "corrupt": 0}
    assert up.params == {"reorder": 0, "duplicate": 0, "corrupt": 1 << 16}
    assert all(e.params["features"] == p4.FEATURE_PACKET_FAULTS
               for e in link_params_entries(profile))
    assert dataplane.packet_fault_entries(parse_profile({"downlink": {}, "uplink": {}})) == []


def test_a_duplicate_leaves_twice_without_going_missing():
    counters = {name: {"downlink": (0, 0)} for name in dataplane.COUNTERS}
    counters["link_in"]["downlink"] = (10, 0)
    counters["duplicated"]["downlink"] = (2, 0)
    counters["link_out"]["downlink"] = (11, 0)
    counters["drop_queue"]["downlink"] = (1, 0)
    assert dataplane.in_flight(counters, "downlink") == 0


def test_a_link_buffer_with_arq_decides_best_effort_starts_late():
    """Behind a retransmitted frame the buffer may be full: a best-effort
    frame's start waits for it, so the direction defers best effort."""
    arq = {"delay": "700ms", "max_retransmissions": 2}
    data = {"downlink": {"rate": "64kbit", "link_buffer": "9600B", "arq": arq},
            "uplink": {"rate": "64kbit", "link_buffer": "9600B"},
            "link_states": constant_errors({"downlink": 0.1, "uplink": 0.1})}
    profile = parse_profile(data)
    assert dataplane.defers_best_effort(profile, "downlink")
    assert not dataplane.defers_best_effort(profile, "uplink")   # no ARQ: nothing to wait for
    errorless = parse_profile({**data, "link_states": constant_errors(
        {"downlink": 0, "uplink": 0})})
    assert not dataplane.defers_best_effort(errorless, "downlink")
    (down, _) = [q for q in dataplane.class_queues(profile) if q.cls == "best_effort"]
    assert down.deferred


def test_a_reading_taken_while_frames_flow_never_shows_too_few_inside():
    """Every read lets one frame in and out again at once: nothing is ever
    inside, and a reading must not show less than that."""
    from types import SimpleNamespace

    class FlowingSwitch:
        def __init__(self):
            self.passed = 0

        def read_counter(self, name):
            self.passed += 1
            packets = self.passed if name in ("link_in", "drop_queue", "queue_enter",
                                              "queue_leave") else 0
            cells = [SimpleNamespace(index=i, packets=packets, bytes=100 * packets)
                     for i in range(4)]
            if name in dataplane.HELD_CELLS:
                cells += [SimpleNamespace(index=4 + i, packets=0, bytes=0) for i in range(4)]
            return cells

    counters = dataplane.read_counters(FlowingSwitch())
    assert list(counters) == list(dataplane.COUNTERS)
    assert all(dataplane.in_flight(counters, d) >= 0 for d in dataplane.DIRECTION_IDS)
    assert all(packets >= 0 for packets, _ in queue_monitor.sample(FlowingSwitch()).values())
