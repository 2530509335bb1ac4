"""Reading YAML mappings field by field, recording every problem with its
path, the value found and what is allowed (profiles and experiment files)."""

import re
import reprlib

from .units import UnitError, parse_time_us

# Values and keys are echoed in messages this long at most: a mistake may be
# a whole file pasted into a field.
_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = _SHOWN.maxlong = 60
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxset = 8
_SHOWN.maxdict = 6
_SHOWN.maxlevel = 3


def shown(value):
    """repr() of `value`, shortened."""
    return _SHOWN.repr(value)


def shown_name(key):
    """A key or name as it is, or shown() when it is long or holds a line
    break or another unprintable character."""
    text = str(key)
    return text if len(text) <= _SHOWN.maxstring and text.isprintable() else shown(text)


class Section:
    """Reads the fields of one mapping, recording problems with their paths."""

    def __init__(self, data, path, problems):
        self.path = path
        self.problems = problems
        if not isinstance(data, dict):
            self.problem(path or "(top level)", data, "expected a mapping of fields")
            data = {}
        self.data = data
        self.known = set()

    def problem(self, path, value, allowed):
        self.problems.append(f"{path}: {shown(value)}: {allowed}")

    def field(self, key, convert, default=None, required=False):
        self.known.add(key)
        path = self.sub_path(key)
        if key not in self.data:
            if required:
                self.problems.append(f"{path}: missing; this field is required")
            return default
        value = self.data[key]
        try:
            return convert(value)
        except (UnitError, ValueError, TypeError) as err:
            self.problem(path, value, str(err))
            return default
        except OverflowError:   # an integer beyond any float
            self.problem(path, value, "too large a number")
            return default

    def sub_path(self, key):
        name = shown_name(key)
        return f"{self.path}.{name}" if self.path else name

    def section(self, key, required=True):
        """The sub-mapping `key`; None when it is optional and absent."""
        self.known.add(key)
        if key not in self.data:
            if not required:
                return None
            self.problems.append(f"{self.sub_path(key)}: missing; this section is required")
        return Section(self.data.get(key, {}), self.sub_path(key), self.problems)

    def entries(self, key, expected, required=True):
        """The Sections of the non-empty list `key`, [] with a problem when it
        is something else (or absent and required)."""
        self.known.add(key)
        if key not in self.data and not required:
            return []
        items = self.data.get(key)
        path = self.sub_path(key)
        if not isinstance(items, list) or not items:
            self.problem(path, items, expected)
            return []
        return [Section(item, f"{path}[{i}]", self.problems) for i, item in enumerate(items)]

    def reject_unknown(self):
        for key in self.data:
            if key not in self.known:
                path = self.sub_path(key)
                allowed = ", ".join(sorted(self.known))
                self.problem(path, self.data[key], f"unknown field; allowed: {allowed}")


def int_in(low, high, what):
    def convert(value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected a whole number of {what} in [{low}, {high}]")
        if not low <= value <= high:
            raise ValueError(f"out of range; allowed {low} to {high} {what}")
        return value
    return convert


def boolean(value):
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def text(value):
    if not isinstance(value, str):
        raise ValueError("expected text")
    return value


NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")


def safe_name(value):
    """A name that is also a safe file name: results and records are stored
    under names (a run's folder joins three)."""
    if not isinstance(value, str):
        raise ValueError("expected a name as text: quote it")
    if not NAME.fullmatch(value):
        raise ValueError("expected a name of letters, digits, _ . + -, starting with a "
                         "letter or digit, at most 64 characters")
    return value


def choice(allowed):
    def convert(value):
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return value
    return convert


def positive_time_us(value):
    us = parse_time_us(value)
    if us <= 0:
        raise ValueError("must be longer than 0s")
    return us


def non_negative_time_us(value):
    us = parse_time_us(value)
    if us < 0:
        raise ValueError("must not be negative")
    return us
