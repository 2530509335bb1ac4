"""Delay variation and packet faults: the profile fields, the inverse-CDF
tables the data plane draws from, and their table entries."""

import numpy as np
import pytest
from scipy import stats

from linkemu.model.jitter import TABLE_SIZE, Jitter, delay_table
from linkemu.model.profile import ProfileError, parse_profile
from linkemu.program import constants as p4
from linkemu.switch.entities import Range
from linkemu.switch.entries.delay_variation import delay_spike_entries, jitter_entries
from linkemu.switch.entries.link_params import link_params_entries
from linkemu.switch.entries.release import stall_us


def direction(**fields):
    return parse_profile({"downlink": fields, "uplink": {}}).downlink


def problems(**fields):
    with pytest.raises(ProfileError) as err:
        direction(**fields)
    return str(err.value)


def test_uniform_table_spans_delay_plus_minus_jitter_evenly():
    table = delay_table(Jitter("uniform", 10_000), 50_000)
    assert len(table) == TABLE_SIZE and table == sorted(table)
    assert 40_000 <= table[0] < 40_020 and 59_980 < table[-1] <= 60_000
    assert stats.kstest(table, stats.uniform(40_000, 20_000).cdf).statistic < 0.002


@pytest.mark.parametrize("kind", ["normal", "paretonormal"])
def test_tables_have_the_delay_as_mean_and_the_jitter_as_standard_deviation(kind):
    table = np.array(delay_table(Jitter(kind, 10_000), 100_000))
    assert abs(table.mean() - 100_000) < 300
    assert abs(table.std() - 10_000) < 1_200   # the tails beyond 1/2048 are cut


def test_normal_table_is_the_normal_inverse_cdf():
    table = delay_table(Jitter("normal", 5_000), 100_000)
    assert stats.kstest(table, stats.norm(100_000, 5_000).cdf).statistic < 0.002


def test_pareto_table_is_paretos_inverse_cdf_shifted_and_scaled():
    # Shape 3, scale 1: mean 3/2, standard deviation sqrt(3)/2. Scaled to
    # standard deviation 10 ms and shifted to mean 100 ms:
    scale = 10_000 / (3 ** 0.5 / 2)
    reference = stats.pareto(3, loc=100_000 - 1.5 * scale, scale=scale)
    table = delay_table(Jitter("pareto", 10_000), 100_000)
    assert stats.kstest(table, reference.cdf).statistic < 0.002


def test_pareto_has_a_long_tail_of_late_packets():
    table = np.array(delay_table(Jitter("pareto", 10_000), 100_000))
    assert table.max() - 100_000 > 5 * (100_000 - table.min())


def test_delays_are_clamped_at_zero():
    assert min(delay_table(Jitter("normal", 10_000), 5_000)) == 0


def test_user_table_is_resampled_and_added_to_the_delay():
    jitter = direction(delay="20ms", jitter={"distribution": "table",
                                             "table": ["0ms", "1ms", "10ms"]}).jitter
    table = delay_table(jitter, 20_000)
    assert table == sorted(table)
    assert table[0] == pytest.approx(20_000, abs=20)
    assert table[-1] == pytest.approx(30_000, abs=20)
    assert table[TABLE_SIZE // 2] == pytest.approx(21_000, abs=20)


def test_profile_reads_jitter_and_spikes():
    d = direction(delay="50ms", jitter={"distribution": "normal", "jitter": "5ms"},
                  delay_spikes={"probability": 0.01, "length": "300ms"})
    assert d.jitter == Jitter("normal", 5_000)
    assert (d.delay_spikes.probability, d.delay_spikes.length_us) == (0.01, 300_000)
    assert "jitter normal 5ms" in d.describe() and "spikes of 300ms" in d.describe()


@pytest.mark.parametrize("fields, message", [
    ({"jitter": {"distribution": "cauchy", "jitter": "1ms"}},
     "downlink.jitter.distribution: 'cauchy': expected one of"),
    ({"jitter": {"distribution": "normal"}}, "downlink.jitter.jitter: missing"),
    ({"jitter": {"distribution": "table", "table": []}},
     "downlink.jitter.table: []: expected a non-empty list"),
    ({"jitter": {"distribution": "table", "table": ["2ms", "1ms"]}},
     "downlink.jitter.table: ['2ms', '1ms']: not monotone: entry 1"),
    ({"jitter": {"distribution": "table", "table": ["1ms", "lots"]}}, "downlink.jitter.table"),
    ({"jitter": {"distribution": "normal", "jitter": "1ms", "table": ["1ms"]}},
     "downlink.jitter.table: only with distribution table"),
    ({"delay_spikes": {"probability": 1.5, "length": "1s"}},
     "downlink.delay_spikes.probability: 1.5: out of range"),
    ({"delay_spikes": {"probability": 0.1}}, "downlink.delay_spikes.length: missing"),
    ({"jitter": {"distribution": "uniform", "jitter": "1ms", "reorder": True},
      "arq": {"delay": "100ms", "max_retransmissions": 2}},
     "downlink.jitter.reorder: cannot be combined with arq.in_order"),
])
def test_bad_input_is_named_with_its_path(fields, message):
    assert message in problems(**fields)


@pytest.mark.parametrize("fault", ["reorder", "duplicate", "corrupt"])
def test_packet_fault_probabilities_are_checked(fault):
    assert direction(**{fault: 0.01}).describe().endswith(f"{fault} 0.01")
    assert f"downlink.{fault}: -0.1: out of range" in problems(**{fault: -0.1})
    assert f"downlink.{fault}: 'often': expected a probability" in problems(**{fault: "often"})


def test_in_order_release_waits_out_the_longest_jitter_and_spike():
    plain = stall_us(direction(delay="50ms"))
    jittery = direction(delay="50ms", jitter={"distribution": "uniform", "jitter": "10ms"},
                        delay_spikes={"probability": 0.01, "length": "300ms"})
    assert stall_us(jittery) == pytest.approx(plain + 10_000 + 300_000, abs=20)
    reordering = direction(jitter={"distribution": "uniform", "jitter": "10ms",
                                   "reorder": True})
    assert stall_us(reordering) == 0


def test_entries_hold_the_table_per_direction_and_set_the_feature():
    profile = parse_profile({
        "downlink": {"delay": "50ms", "jitter": {"distribution": "uniform", "jitter": "10ms"}},
        "uplink": {"delay_spikes": {"probability": 0.5, "length": "20ms"}}})
    jitter = jitter_entries(profile)
    assert len(jitter) == TABLE_SIZE and {e.match["dir"] for e in jitter} == {0}
    assert sorted(e.match["rand_index"] for e in jitter) == list(range(TABLE_SIZE))
    assert [e.params["delay_us"] for e in jitter] == delay_table(profile.downlink.jitter, 50_000)
    (spike,) = delay_spike_entries(profile)
    assert spike.match == {"dir": 1, "rand_spike": Range(0, (1 << 15) - 1)}
    assert spike.params == {"length_us": 20_000}
    down, up = link_params_entries(profile)
    assert down.params["features"] == up.params["features"] == p4.FEATURE_DELAY_VARIATION


@pytest.mark.parametrize("probability, draws", [(1.0, Range(0, 0xffff)), (1e-6, None)])
def test_a_spike_takes_the_draws_below_its_probability(probability, draws):
    profile = parse_profile({"downlink": {"delay_spikes": {"probability": probability,
                                                           "length": "20ms"}},
                             "uplink": {}})
    entries = delay_spike_entries(profile)
    assert [e.match["rand_spike"] for e in entries] == ([draws] if draws else [])
