import pytest

from linkemu.model.units import UnitError, format_rate, format_time_us, parse_rate, parse_time_us


@pytest.mark.parametrize("text, bps", [
    ("64kbit", 64_000), ("1Mbit", 1_000_000), ("1.5Mbit", 1_500_000),
    ("10 Mbit", 10_000_000), ("2Gbit", 2e9), ("9600bit", 9600), ("64KBIT", 64_000),
])
def test_rates(text, bps):
    assert parse_rate(text) == bps


@pytest.mark.parametrize("text, us", [
    ("300ms", 300_000), ("1.5s", 1_500_000), ("250us", 250), ("250µs", 250),
    ("0ms", 0), ("0.0006ms", 1), (".5s", 500_000),
])
def test_times(text, us):
    assert parse_time_us(text) == us


@pytest.mark.parametrize("text", ["64kbps", "64", "fast", "", "-1Mbit", "1e6bit", 64000, None, True])
def test_bad_rates_name_the_allowed_units(text):
    with pytest.raises(UnitError, match="kbit"):
        parse_rate(text)


@pytest.mark.parametrize("text", ["300", "5min", "ms", 0.3, "-5ms"])
def test_bad_times(text):
    with pytest.raises(UnitError, match="ms"):
        parse_time_us(text)


@pytest.mark.parametrize("text", ["0.4us", "0.5us", "0.0001ms"])
def test_a_time_below_the_clocks_microsecond_is_not_made_0(text):
    with pytest.raises(UnitError, match="shorter than the switch clock's 1us; give 0us or at "
                                        "least 1us"):
        parse_time_us(text)


def test_formatting_round_trips():
    assert format_rate(64_000) == "64kbit"
    assert format_rate(1.5e6) == "1.5Mbit"
    assert format_time_us(300_000) == "300ms"
    assert format_time_us(1_500_000) == "1.5s"
    assert format_time_us(20) == "20us"
