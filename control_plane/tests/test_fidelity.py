from linkemu.drivers.aqm_model import CobaltState, flow_of
from linkemu.drivers.fidelity import Frame, compare, frame_fields, model_due
from linkemu.model.profile import Direction, parse_profile
from linkemu.switch.entries.cobalt import CobaltParams


def burst(count, length=500, t0=1.0, gap=0.0):
    return [Frame(t0 + i * gap, i.to_bytes(4, "big"), length) for i in range(count)]


def test_model_spaces_a_burst_by_serialization_and_adds_delay():
    link = Direction(rate_bps=64_000, delay_us=300_000, queue_packets=100, overhead_bytes=0)
    dues = model_due(burst(3), link)
    tx = (500 - 14) * 8 / 64_000  # 60.75 ms
    assert [round(d - 1.0, 6) for d in dues] == [round(0.3 + tx * (i + 1), 6) for i in range(3)]


def test_model_tail_drops_beyond_queue_plus_one_on_the_link():
    link = Direction(rate_bps=64_000, delay_us=0, queue_packets=20, overhead_bytes=0)
    dues = model_due(burst(30), link)
    assert [d is None for d in dues] == [False] * 21 + [True] * 9


def test_queue_drains_as_serialization_starts():
    link = Direction(rate_bps=64_000, delay_us=0, queue_packets=1, overhead_bytes=0)
    # 60.75 ms per frame; the third frame comes once the second has started.
    frames = [Frame(1.0, b"a", 500), Frame(1.001, b"b", 500), Frame(1.0616, b"c", 500)]
    assert all(d is not None for d in model_due(frames, link))


def test_unlimited_rate_is_pure_delay():
    link = Direction(rate_bps=None, delay_us=20_000, queue_packets=1, overhead_bytes=0)
    assert model_due(burst(5), link) == [1.02] * 5


def test_compare_measures_errors_and_disagreements():
    link = Direction(rate_bps=None, delay_us=10_000, queue_packets=10, overhead_bytes=0)
    arrivals = burst(4, gap=0.1)
    departures = [Frame(f.ts + 0.0102, f.data, f.length) for f in arrivals[:3]]
    result = compare(arrivals, departures, link)
    assert result.delivered == 3 and result.unexpected_drops == 1
    assert all(abs(e - 0.0002) < 1e-9 for e in result.errors)
    assert abs(result.summary()["p50_ms"] - 0.2) < 1e-6


def test_repeated_contents_are_left_out():
    link = Direction(rate_bps=None, delay_us=0, queue_packets=10, overhead_bytes=0)
    arrivals = [Frame(1.0, b"same", 60), Frame(2.0, b"same", 60), Frame(3.0, b"x", 60)]
    departures = [Frame(2.0001, b"same", 60), Frame(3.0001, b"x", 60)]
    result = compare(arrivals, departures, link)
    assert result.ambiguous == 1 and result.delivered == 1 and result.unexpected_drops == 0
    # Each error is paired with the departure it measures.
    assert [f.data for f in result.matched] == [b"x"]


def udp(dport, length=500, tag=0, dscp=0):
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    frame = Ether() / IP(tos=dscp << 2) / UDP(sport=40000, dport=dport) / tag.to_bytes(4, "big")
    return bytes(frame) + b"\0" * (length - len(frame))


def test_frame_fields_as_the_parser_sees_them():
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import ARP, Ether
    assert frame_fields(udp(9, dscp=46)) == (46, 17, 40000, 9)
    assert frame_fields(bytes(Ether() / IPv6(tc=0xb8) / TCP(sport=1, dport=2))) == (46, 6, 1, 2)
    # Options or a later fragment: no ports.
    assert frame_fields(bytes(Ether() / IP(options=b"\x01" * 4) / TCP())) == (0, 6, None, None)
    assert frame_fields(bytes(Ether() / IP(frag=10, proto=17) / (b"x" * 8))) == (0, 17, None, None)
    assert frame_fields(bytes(Ether() / ARP())) == (None, None, None, None)
    # Cut short: the parser extracts 8 bytes of TCP or UDP header, or none.
    whole = bytes(Ether() / IP() / UDP(sport=1, dport=2))
    assert frame_fields(whole) == (0, 17, 1, 2)
    assert frame_fields(whole[:-1]) == (0, 17, None, None)
    assert frame_fields(whole[:33]) == (None, None, None, None)   # no whole IPv4 header


def split_link(queue=10, priority_queue=10, **shares):
    priority = {"match": [{"protocol": "udp", "dst_port": 5000}], "queue": priority_queue}
    return parse_profile({"downlink": {"rate": "64kbit", "queue": queue,
                                       "priority": {**priority, **shares}},
                          "uplink": {}}).downlink


TX = (500 - 14) * 8 / 64_000  # 60.75 ms


def test_priority_goes_after_the_frame_on_the_link_ahead_of_queued_best_effort():
    link = split_link()
    frames = [Frame(1.0 + i * 1e-4, udp(9, tag=i), 500) for i in range(3)]
    frames.append(Frame(1.010, udp(5000), 500))
    dues = model_due(frames, link)
    assert round(dues[3] - 1.0, 6) == round(2 * TX, 6)     # after best effort 0 only
    assert round(dues[1] - 1.0, 6) == round(3 * TX, 6)     # then best effort 1, 2
    assert round(dues[2] - 1.0, 6) == round(4 * TX, 6)


def test_best_effort_backlog_never_drops_priority():
    link = split_link(queue=2, priority_queue=3)
    frames = [Frame(1.0 + i * 1e-4, udp(9, tag=i), 500) for i in range(20)]
    frames += [Frame(1.01 + i * 1e-4, udp(5000, tag=i), 500) for i in range(4)]
    dues = model_due(frames, link)
    # Best effort: one on the link, two waiting. Priority: its own three places.
    assert [d is None for d in dues] == [False] * 3 + [True] * 17 + [False] * 3 + [True]


def test_shares_cap_each_class():
    link = split_link(share=0.5, best_effort_share=0.5)
    priority = [Frame(1.0, udp(5000, tag=i), 500) for i in range(3)]
    dues = model_due(priority, link)
    # Back to back at half the rate: starts 2 x TX apart.
    assert [round(d - 1.0, 6) for d in dues] == [round(TX + 2 * TX * i, 6) for i in range(3)]
    best_effort = [Frame(1.0 + i * 1e-4, udp(9, tag=i), 500) for i in range(3)]
    dues = model_due(best_effort, link)
    assert [round(d - 1.0, 6) for d in dues] == [round(TX + 2 * TX * i, 6) for i in range(3)]
    # Best effort takes the link while priority waits for its cap, and
    # priority, which claims the link on arrival, goes next.
    mixed = [Frame(1.0, udp(5000, tag=0), 500), Frame(1.0 + TX, udp(9, tag=1), 500),
             Frame(1.0 + TX + 1e-4, udp(5000, tag=2), 500)]
    dues = model_due(mixed, link)
    assert round(dues[1] - 1.0, 6) == round(2 * TX, 6)
    assert round(dues[2] - 1.0, 6) == round(3 * TX, 6)


def test_loss_bursts_are_runs_of_consecutive_losses():
    from linkemu.drivers.fidelity import loss_bursts
    assert loss_bursts([]) == []
    assert loss_bursts([True, True, False, True, False, False, True, True, True]) == [2, 1, 3]


def test_the_link_send_buffer_takes_frames_before_the_router_queue():
    """3000 B of buffer hold five 576-byte packets (the frame on the link
    among them); the sixth waits in the 1-packet router queue, the rest are
    dropped there."""
    buffered = Direction(rate_bps=64_000, delay_us=0, queue_packets=1, overhead_bytes=0,
                         send_buffer=3000)
    dues = model_due(burst(9, length=590), buffered)
    assert [d is None for d in dues] == [False] * 6 + [True] * 3
    tx = 576 * 8 / 64_000
    assert [round(d - 1.0, 6) for d in dues[:6]] == [round(tx * (i + 1), 6) for i in range(6)]
    plain = Direction(rate_bps=64_000, delay_us=0, queue_packets=1, overhead_bytes=0)
    assert sum(d is not None for d in model_due(burst(9, length=590), plain)) == 2


def test_the_router_queue_drains_into_the_buffer_as_it_finds_room():
    """The seventh packet comes once 456 B of the buffer have been sent: the
    sixth has moved into the buffer and the router queue has room again."""
    link = Direction(rate_bps=64_000, delay_us=0, queue_packets=1, overhead_bytes=0,
                     send_buffer=3000)
    early = burst(6, length=590) + [Frame(1.0 + 456 * 8 / 64_000 - 0.001, b"g", 590)]
    late = burst(6, length=590) + [Frame(1.0 + 456 * 8 / 64_000 + 0.001, b"g", 590)]
    assert model_due(early, link)[6] is None
    assert model_due(late, link)[6] is not None


def test_a_buffered_frame_keeps_its_place_until_acknowledged():
    """At 300 ms each way a frame holds its place for 600 ms after its
    serialization: 9600 B leave 528 ms of the link (7.3 frames of 576 B)
    to frames waiting for it, so eight enter at once, the ninth waits in
    the 1-packet router queue and the rest are dropped."""
    link = Direction(rate_bps=64_000, delay_us=300_000, queue_packets=1, overhead_bytes=0,
                     send_buffer=9600)
    dues = model_due(burst(20, length=590), link)
    assert [d is None for d in dues] == [False] * 9 + [True] * 11


COBALT_LINK = {"rate": "4Mbit", "queue": 1000, "cobalt": {}}


def ip_frame(seq, ecn, t, length=1000):
    """An IPv4 frame (its ECN bits set) sent at t."""
    data = bytes(12) + b"\x08\x00" + bytes([0x45, ecn]) + seq.to_bytes(4, "big") * 8
    return Frame(t, data, length)


def cobalt_burst(count, ecn=0):
    return [ip_frame(i, ecn, 1.0) for i in range(count)]


def test_cobalt_signals_an_interval_after_the_sojourn_passes_target_then_faster():
    """4 Mbit/s, 1000-byte frames: one leaves every 1.972 ms. Cake's threshold
    is 12 ms (4 frames of the MTU): from the 7th frame on, a burst's frames
    wait beyond it. The first signal falls an interval (100 ms) later, the
    next ones 100/sqrt(2), 100/sqrt(3) ms apart; a drop takes no link time."""
    direction = parse_profile({"downlink": COBALT_LINK, "uplink": {}}).downlink
    marked = []
    dues = model_due(cobalt_burst(200, ecn=2), direction, marked=marked)
    assert None not in dues
    tx = (1000 - 14) * 8 / 4e6
    leave = [i * tx for i in range(200)]        # all sent at once
    first_over = next(i for i in range(200) if leave[i] > 0.012)
    assert first_over == 7
    assert leave[marked[0]] >= leave[first_over] + 0.1 - 1e-6
    assert leave[marked[0] - 1] < leave[first_over] + 0.1
    for k, (a, b) in enumerate(zip(marked, marked[1:]), start=2):
        assert abs((leave[b] - leave[a]) - 0.1 / k**0.5) < tx, (k, marked)
    # Not ECN-capable: the same signals are drops, each one taking the
    # frame off the link, so those behind it leave a frame's time earlier.
    dues = model_due(cobalt_burst(200), direction, marked=marked)
    dropped = [i for i, due in enumerate(dues) if due is None]
    assert dropped[0] == marked[0] and len(dropped) >= 4
    delivered = [due for due in dues if due is not None]
    assert all(abs((b - a) - tx) < 1e-5 for a, b in zip(delivered, delivered[1:]))


def test_cobalt_spares_the_last_packet_of_its_queue():
    direction = parse_profile({"downlink": COBALT_LINK, "uplink": {}}).downlink
    first_drop = model_due(cobalt_burst(200), direction).index(None)
    dues = model_due(cobalt_burst(first_drop + 1), direction)
    assert None not in dues
    tx = (1000 - 14) * 8 / 4e6
    assert abs(dues[-1] - 1.0 - (first_drop + 1) * tx) < 2e-6
    # One more behind it, and it is dropped after all.
    assert model_due(cobalt_burst(first_drop + 2), direction)[first_drop] is None


def test_cobalt_decays_its_count_after_the_episode():
    """A second episode soon after the first starts where the first left off
    (its next signal sooner than an interval); one long after starts anew."""
    direction = parse_profile({"downlink": COBALT_LINK, "uplink": {}}).downlink

    def first_signal_after_first_over(gap):
        marked = []
        frames = cobalt_burst(200, ecn=2) + [ip_frame(1000 + i, 2, 1.0 + gap) for i in range(200)]
        model_due(frames, direction, marked=marked)
        second = [i - 200 for i in marked if i >= 200]
        return second[0]
    tx = (1000 - 14) * 8 / 4e6
    assert first_signal_after_first_over(0.5) < 7 + 0.1 / tx - 5
    assert first_signal_after_first_over(5.0) == first_signal_after_first_over(60.0)
    assert abs(first_signal_after_first_over(5.0) - (7 + 0.1 / tx)) <= 1


def test_blue_rises_on_overflow_at_most_once_a_target_and_falls_when_empty():
    direction = parse_profile({"downlink": COBALT_LINK, "uplink": {}}).downlink
    blue = CobaltState(CobaltParams.of(direction.cobalt, direction.rate_bps, 0))
    blue.overflow(1_000_000)
    blue.overflow(1_004_000)                 # within the target (5 ms)
    assert blue.p_drop == 1 << 24 and blue.dropping and blue.count == 1
    blue.overflow(1_006_000)
    assert blue.p_drop == 2 << 24
    blue.found_empty(1_008_000)              # within the target of the last change
    assert blue.p_drop == 2 << 24
    blue.found_empty(1_012_000)
    assert blue.p_drop == (2 << 24) - (1 << 20)


def flow_udp(seq, port, t, length=600, ecn=0, src=1, dst=2):
    """An IPv4 UDP frame from 10.0.0.`src`:40000 to 10.0.0.`dst`:`port`, sent at t."""
    data = (bytes(12) + b"\x08\x00" + bytes([0x45, ecn]) + bytes(6) + bytes([64, 17, 0, 0])
            + bytes([10, 0, 0, src, 10, 0, 0, dst]) + (40000).to_bytes(2, "big")
            + port.to_bytes(2, "big") + bytes(4) + seq.to_bytes(4, "big"))
    return Frame(t, data, length)


FQ_LINK = {"rate": "2Mbit", "queue": 1000,
           "cobalt": {"isolation": "flows", "target": "4s", "interval": "8s"}}


def departure_order(frames, link=FQ_LINK):
    direction = parse_profile({"downlink": link, "uplink": {}}).downlink
    dues = model_due(frames, direction)
    return [int.from_bytes(f.data[-4:], "big") for _, f in sorted(
        (d, f) for d, f in zip(dues, frames) if d is not None)]


def test_flows_hash_as_the_data_plane_does():
    # BMv2's crc32 of the 5-tuple, mod 1024, seen on the switch for these two.
    assert flow_of(flow_udp(0, 5001, 0).data) == 1015 and flow_of(flow_udp(0, 5002, 0).data) == 589
    assert flow_of(bytes(14)) == 0   # not IP: flow 0


def test_drr_gives_each_backlogged_flow_a_quantum_in_turn():
    """600-byte frames (586 link bytes), a quantum of 1500: a flow sends 3
    frames a turn (1500 - 3 x 586 < 0), then the other."""
    frames = [flow_udp(i, 5001, 1.0) for i in range(6)] + [flow_udp(100 + i, 5002, 1.0) for i in range(6)]
    assert departure_order(frames) == [0, 1, 2, 100, 101, 102, 3, 4, 5, 103, 104, 105]


def test_a_flow_that_turns_up_goes_first():
    """A frame of a new flow goes before the backlog of the others: after
    the frames already sent (0, 1, 2 of the first flow, 100 and 101 of the
    second, by 10 ms) and the rest of the second's first turn (102), which
    is new itself."""
    frames = ([flow_udp(i, 5001, 1.0) for i in range(10)]
              + [flow_udp(100 + i, 5002, 1.0) for i in range(10)]
              + [flow_udp(200, 5003, 1.01)])
    assert departure_order(frames).index(200) == 6


def test_flowblind_keeps_arrival_order():
    frames = [flow_udp(i, 5001, 1.0) for i in range(3)] + [flow_udp(100 + i, 5002, 1.0) for i in range(3)]
    link = {**FQ_LINK, "cobalt": {"isolation": "flowblind", "target": "4s", "interval": "8s"}}
    assert departure_order(frames, link) == [0, 1, 2, 100, 101, 102]


def test_each_flow_queue_has_its_own_codel():
    """A flow whose queue stays long is signalled; a sparse one beside it
    never is, though the link is as busy for both."""
    link = {**FQ_LINK, "cobalt": {"isolation": "flows"}}   # target 5 ms, interval 100 ms
    frames = sorted([flow_udp(i, 5001, 1.0 + i * 0.001, ecn=2) for i in range(600)] +
                    [flow_udp(10000 + i, 5002, 1.0 + i * 0.02, ecn=2) for i in range(30)],
                    key=lambda f: f.ts)
    direction = parse_profile({"downlink": link, "uplink": {}}).downlink
    marked = []
    model_due(frames, direction, marked=marked)
    seqs_marked = [int.from_bytes(frames[i].data[-4:], "big") for i in marked]
    assert seqs_marked and all(seq < 10000 for seq in seqs_marked)


def test_triple_isolate_shares_between_hosts_first():
    """Sender 1 with one flow to receiver 3, sender 2 with four to receiver
    4, all backlogged: in triple-isolate the hosts share the link, so the
    one flow sends about as much as the four; with flows alone, a fifth."""
    frames = [flow_udp(i, 6001, 1.0, src=1, dst=3) for i in range(100)]
    for n in range(4):
        frames += [flow_udp(1000 * (n + 1) + i, 6002 + n, 1.0, src=2, dst=4) for i in range(100)]

    def lone_share(isolation):
        link = {**FQ_LINK, "cobalt": {"isolation": isolation, "target": "4s", "interval": "8s"}}
        first_200 = departure_order(frames, link)[:200]
        return sum(1 for seq in first_200 if seq < 1000) / 200

    assert abs(lone_share("triple-isolate") - 0.5) < 0.03
    assert abs(lone_share("flows") - 0.2) < 0.03
