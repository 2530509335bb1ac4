from linkemu.drivers.fidelity import Frame, compare, frame_fields, model_due
from linkemu.model.profile import Direction, parse_profile


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
