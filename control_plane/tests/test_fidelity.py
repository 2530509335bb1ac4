from linkemu.fidelity import Frame, compare, model_due
from linkemu.profile import Direction


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
