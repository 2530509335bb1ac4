"""Quantities with units, as written in link profiles: 64kbit, 300ms, 1.5s."""

import math
import re

_NUMBER = r"(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"

RATE_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}
TIME_UNITS = {"us": 1, "µs": 1, "ms": 10**3, "s": 10**6}
SIZE_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6}


class UnitError(ValueError):
    """A value that is not a quantity of the expected kind."""


def _parse(text, units, kind, example):
    if isinstance(text, bool) or not isinstance(text, str):
        raise UnitError(f"expected a {kind} with a unit as a string, e.g. {example!r}")
    match = re.fullmatch(_NUMBER + r"\s*(?P<unit>[a-zA-Zµ]+)", text.strip())
    unit = match and match.group("unit").lower()
    if not match or unit not in units:
        allowed = ", ".join(sorted(units, key=units.get))
        raise UnitError(f"expected a {kind}: a number and one of {allowed}, e.g. {example!r}")
    number = float(match.group("num")) * units[unit]
    if math.isinf(number):
        raise UnitError(f"too large: a number of {len(match.group('num'))} characters")
    return number


def parse_rate(text):
    """Rate in bit/s. Units are tc's: kbit = 1000 bit/s; 'kbps' (bytes) is refused."""
    return _parse(text, RATE_UNITS, "rate", "64kbit")


def parse_time_us(text):
    """Duration in microseconds, rounded to the microsecond of the switch clock;
    one that would round to 0 is refused rather than made 0."""
    us = _parse(text, TIME_UNITS, "duration", "300ms")
    if round(us) == 0 < us:
        raise UnitError("shorter than the switch clock's 1us; give 0us or at least 1us")
    return round(us)


def parse_size(text):
    """Size in bytes: 11000B, 11kB (kB = 1000 bytes)."""
    return round(_parse(text, SIZE_UNITS, "size", "11000B"))


def format_rate(bps):
    for unit, scale in (("Gbit", 10**9), ("Mbit", 10**6), ("kbit", 10**3)):
        if bps >= scale:
            return f"{bps / scale:g}{unit}"
    return f"{bps:g}bit"


def format_time_us(us):
    if us >= 10**6:
        return f"{us / 10**6:g}s"
    if us >= 10**3:
        return f"{us / 10**3:g}ms"
    return f"{us}us"
