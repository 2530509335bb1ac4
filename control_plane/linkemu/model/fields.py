"""Reading YAML mappings field by field, recording every problem with its
path, the value found and what is allowed (profiles and experiment files).

A file's schema is declared once, as a tree of Blocks (mappings) of Fields,
each Field's Kind converting its value and saying what is allowed: the
readers take every field's conversion, default and requirement from it, and
the reference and the JSON Schema are generated from it (model.schema)."""

import re
import reprlib
from dataclasses import dataclass

from .units import RATE_UNITS, SIZE_UNITS, TIME_UNITS, UnitError, parse_time_us

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


@dataclass(frozen=True)
class Kind:
    """How a field's value is read: `convert` returns it typed or raises
    ValueError saying what is allowed; `allowed` says so in the reference,
    `json` in the JSON Schema."""

    convert: object
    allowed: str
    json: dict

    def __call__(self, value):
        return self.convert(value)


@dataclass(frozen=True)
class Field:
    """A field of a mapping. `default` is the value it takes when absent
    (for a required one, the stand-in while the other problems are
    collected); `shown` is that default as a file would write it, for the
    reference ("" for none). `block` declares a mapping that a value of
    the kind may be or hold (a grid of profiles), for the reference."""

    key: str
    kind: Kind
    doc: str
    default: object = None
    shown: str = ""
    required: bool = False
    block: object = None


@dataclass(frozen=True)
class Block:
    """A mapping of fields: Fields, Blocks, Entries, Names and Eithers;
    `named` ((regex, item), ...) declares keys the file names by a pattern
    (a host's h1, h2, ...), each item's key standing for them."""

    key: str
    doc: str
    items: tuple
    required: bool = False
    named: tuple = ()

    def item(self, key):
        for item in self.items:
            if item.key == key:
                return item
        for pattern, item in self.named:
            if isinstance(key, str) and re.fullmatch(pattern, key):
                return item
        raise KeyError(f"{self.key or 'the top level'} declares no {key!r}")


@dataclass(frozen=True)
class Entries:
    """A non-empty list of mappings, each a `block`."""

    key: str
    doc: str
    block: Block
    required: bool = False


@dataclass(frozen=True)
class Names:
    """A mapping whose keys the file names (link states, variants), each
    value a Block, an Entries or of a Kind."""

    key: str
    doc: str
    value: object
    required: bool = False


@dataclass(frozen=True)
class Either:
    """A value of `kind`, or a mapping `block` (one probability for both
    directions, or one for each)."""

    key: str
    doc: str
    kind: Kind
    block: Block
    default: object = None
    shown: str = ""
    required: bool = False


_FROM_SPEC = object()


class Section:
    """Reads the fields of one mapping, recording problems with their paths;
    `spec` (a Block, or a Names for a mapping of names) declares them."""

    def __init__(self, data, path, problems, spec):
        self.path = path
        self.problems = problems
        self.spec = spec
        if not isinstance(data, dict):
            self.problem(path or "(top level)", data, "expected a mapping of fields")
            data = {}
        self.data = data
        self.known = set()

    def problem(self, path, value, allowed):
        self.problems.append(f"{path}: {shown(value)}: {allowed}")

    def _declared(self, key):
        if isinstance(self.spec, Names):
            return self.spec.value
        return self.spec.item(key)

    def field(self, key, required=None, default=_FROM_SPEC, convert=None):
        """The value of `key` as its Field declares it; `required` and
        `default` where they depend on other fields, `convert` where what is
        allowed depends on the file (its hosts, its names)."""
        spec = self._declared(key)
        kind = spec if isinstance(spec, Kind) else spec.kind
        convert = convert or kind
        if default is _FROM_SPEC:
            default = None if isinstance(spec, Kind) else spec.default
        if required is None:
            required = not isinstance(spec, Kind) and spec.required
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

    def section(self, key, required=None):
        """The sub-mapping `key`; None when it is optional and absent."""
        spec = self._declared(key)
        block = spec.block if isinstance(spec, Either) else spec
        required = spec.required if required is None else required
        self.known.add(key)
        if key not in self.data:
            if not required:
                return None
            self.problems.append(f"{self.sub_path(key)}: missing; this section is required")
        return Section(self.data.get(key, {}), self.sub_path(key), self.problems, block)

    def entries(self, key, expected, required=None):
        """The Sections of the non-empty list `key`, [] with a problem when it
        is something else (or absent and required)."""
        spec = self._declared(key)
        required = spec.required if required is None else required
        self.known.add(key)
        if key not in self.data and not required:
            return []
        items = self.data.get(key)
        path = self.sub_path(key)
        if not isinstance(items, list) or not items:
            self.problem(path, items, expected)
            return []
        return [Section(item, f"{path}[{i}]", self.problems, spec.block)
                for i, item in enumerate(items)]

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
    return Kind(convert, f"whole number, {low} to {high}",
                {"type": "integer", "minimum": low, "maximum": high})


def _boolean(value):
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


boolean = Kind(_boolean, "true or false", {"type": "boolean"})


def _text(value):
    if not isinstance(value, str):
        raise ValueError("expected text")
    return value


text = Kind(_text, "text", {"type": "string"})

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")


def _safe_name(value):
    """A name that is also a safe file name: results and records are stored
    under names (a run's folder joins three)."""
    if not isinstance(value, str):
        raise ValueError("expected a name as text: quote it")
    if not NAME.fullmatch(value):
        raise ValueError("expected a name of letters, digits, _ . + -, starting with a "
                         "letter or digit, at most 64 characters")
    return value


safe_name = Kind(_safe_name, "a name: letters, digits, _ . + -, at most 64",
                 {"type": "string", "pattern": f"^{NAME.pattern}$"})


def choice(allowed):
    def convert(value):
        if value not in allowed:
            raise ValueError(f"expected one of {', '.join(map(str, allowed))}")
        return value
    return Kind(convert, "one of " + ", ".join(f"`{a}`" for a in allowed),
                {"enum": list(allowed)})


def quantity_pattern(units):
    """A JSON Schema pattern of a number and one of `units`, any case (as
    units.py reads them)."""
    def any_case(unit):
        return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() and c.isascii() else c
                       for c in unit)
    alternatives = "|".join(any_case(u) for u in sorted(units, key=len, reverse=True))
    return rf"^\s*([0-9]+(\.[0-9]*)?|\.[0-9]+)\s*({alternatives})\s*$"


TIME_JSON = {"type": "string", "pattern": quantity_pattern(TIME_UNITS)}
RATE_JSON = {"type": "string", "pattern": quantity_pattern(RATE_UNITS)}
SIZE_JSON = {"type": "string", "pattern": quantity_pattern(SIZE_UNITS)}


def _positive_time_us(value):
    us = parse_time_us(value)
    if us <= 0:
        raise ValueError("must be longer than 0s")
    return us


positive_time_us = Kind(_positive_time_us, "a duration above 0 (us, ms, s)", TIME_JSON)


def _non_negative_time_us(value):
    us = parse_time_us(value)
    if us < 0:
        raise ValueError("must not be negative")
    return us


non_negative_time_us = Kind(_non_negative_time_us, "a duration (us, ms, s)", TIME_JSON)


def up_to_one(what):
    """A number in (0, 1]: `what` names it in the error."""
    def convert(value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected {what} in (0, 1]")
        if not 0 < value <= 1:
            raise ValueError("out of range; allowed (0, 1]")
        return float(value)
    return Kind(convert, f"{what}, above 0 and at most 1",
                {"type": "number", "exclusiveMinimum": 0, "maximum": 1})
