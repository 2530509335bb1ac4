"""Values as P4Runtime carries them: canonical byte strings, and match
fields (exact, ternary, range, lpm) to and from their protobuf form."""

from p4.v1 import p4runtime_pb2

from ..model.fields import shown
from .entities import Lpm, Range, Ternary
from .errors import P4RuntimeError


def encode(value, bitwidth, what="value"):
    """Canonical P4Runtime byte string of an unsigned value; `what` names it
    in the error."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise P4RuntimeError(f"{what}: {shown(value)}: not a whole number")
    if not 0 <= value < (1 << bitwidth):
        raise P4RuntimeError(f"{what}: {shown(value)}: does not fit in {bitwidth} bits; "
                             f"allowed 0 to {(1 << bitwidth) - 1}")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def decode(data):
    """The unsigned value of a P4Runtime byte string."""
    return int.from_bytes(data, "big")


def mac_to_int(mac):
    return int(mac.replace(":", ""), 16)


def encode_match(spec, value, what):
    """The protobuf FieldMatch of match field `spec` (a P4Info MatchField)
    holding `value` (an int, Ternary, Range or Lpm); None for a ternary
    wildcard, which P4Runtime expresses by leaving the field out."""
    match = p4runtime_pb2.FieldMatch(field_id=spec.id)
    if isinstance(value, Ternary):
        if value.mask == 0:
            return None
        match.ternary.value = encode(value.value & value.mask, spec.bitwidth, what)
        match.ternary.mask = encode(value.mask, spec.bitwidth, what)
    elif isinstance(value, Range):
        if value.low > value.high:
            raise P4RuntimeError(f"{what}: range {value.low} to {value.high} is empty")
        match.range.low = encode(value.low, spec.bitwidth, what)
        match.range.high = encode(value.high, spec.bitwidth, what)
    elif isinstance(value, Lpm):
        if not 0 < value.prefix_len <= spec.bitwidth or \
                value.value & ((1 << (spec.bitwidth - value.prefix_len)) - 1):
            raise P4RuntimeError(f"{what}: {value.value}/{value.prefix_len} is not a prefix "
                                 f"of {spec.bitwidth} bits")
        match.lpm.value = encode(value.value, spec.bitwidth, what)
        match.lpm.prefix_len = value.prefix_len
    else:
        match.exact.value = encode(value, spec.bitwidth, what)
    return match


def decode_match(match):
    """The int, Ternary, Range or Lpm of a protobuf FieldMatch."""
    kind = match.WhichOneof("field_match_type")
    if kind == "exact":
        return decode(match.exact.value)
    if kind == "ternary":
        return Ternary(decode(match.ternary.value), decode(match.ternary.mask))
    if kind == "lpm":
        return Lpm(decode(match.lpm.value), match.lpm.prefix_len)
    return Range(decode(match.range.low), decode(match.range.high))
