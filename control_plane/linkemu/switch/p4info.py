"""The program's P4Info: its tables, actions, counters and digests by name
(full or alias), and table entries translated between names and the ids
and byte strings P4Runtime carries."""

import functools

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from .encoding import decode, decode_match, encode, encode_match
from .entities import TableEntry
from .errors import P4RuntimeError


class P4Info:
    """Name lookups in a P4Info message."""

    def __init__(self, message):
        self.message = message
        self._tables = {t.preamble.name: t for t in message.tables}
        self._actions = {a.preamble.name: a for a in message.actions}
        self._counters = {c.preamble.name: c for c in message.counters}
        self._digests = {d.preamble.name: d for d in message.digests}
        self._packet_metadata = {c.preamble.name: c for c in message.controller_packet_metadata}
        for objects in (self._tables, self._actions, self._counters, self._digests):
            for obj in list(objects.values()):
                objects.setdefault(obj.preamble.alias, obj)
        self._table_ids = {t.preamble.id: t for t in message.tables}
        self._action_ids = {a.preamble.id: a for a in message.actions}

    @classmethod
    def from_file(cls, path):
        message = p4info_pb2.P4Info()
        with open(path) as f:
            try:
                text_format.Parse(f.read(), message)
            except (text_format.ParseError, UnicodeDecodeError) as err:
                raise P4RuntimeError(f"{path}: not a P4Info in text form: {err}") from None
        return cls(message)

    def _lookup(self, objects, kind, name):
        try:
            return objects[name]
        except KeyError:
            raise P4RuntimeError(f"the P4 program has no {kind} named {name!r}") from None

    def table(self, name):
        return self._lookup(self._tables, "table", name)

    def action(self, name):
        return self._lookup(self._actions, "action", name)

    def counter(self, name):
        return self._lookup(self._counters, "counter", name)

    def digest(self, name):
        return self._lookup(self._digests, "digest", name)

    @functools.cached_property
    def packet_in_metadata(self):
        """{id: name} of the metadata the switch puts on a packet-in."""
        header = self._lookup(self._packet_metadata, "controller header", "packet_in")
        return {m.id: m.name for m in header.metadata}

    def struct_members(self, digest):
        """(name, bitwidth) of each member of a digest's struct, in order."""
        struct = self.message.type_info.structs[digest.type_spec.struct.name]
        return [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in struct.members]

    def table_entry(self, entry):
        """Protobuf TableEntry of a TableEntry; P4RuntimeError naming the
        table, the field and the value that does not fit."""
        table = self.table(entry.table)
        fields = {f.name: f for f in table.match_fields}
        message = p4runtime_pb2.TableEntry(table_id=table.preamble.id,
                                           priority=entry.priority)
        exact = ", ".join(f"{k} {v}" for k, v in entry.match.items() if isinstance(v, int))
        where = f"{table.preamble.alias}" + (f" ({exact})" if exact else "")
        for name, value in entry.match.items():
            if name not in fields:
                raise P4RuntimeError(f"table {entry.table!r} has no match field {name!r}")
            match = encode_match(fields[name], value, f"{where}: match {name}")
            if match is not None:
                message.match.append(match)
        action = self.action(entry.action)
        params = {p.name: p for p in action.params}
        unknown = set(entry.params) - set(params)
        missing = set(params) - set(entry.params)
        if unknown or missing:
            raise P4RuntimeError(f"action {entry.action!r} takes {sorted(params)}, "
                                 f"got {sorted(entry.params)}")
        message.action.action.action_id = action.preamble.id
        for name, value in entry.params.items():
            message.action.action.params.add(
                param_id=params[name].id,
                value=encode(value, params[name].bitwidth,
                             f"{where}: {action.preamble.alias} {name}"))
        return message

    def decode_entry(self, message):
        """TableEntry of a protobuf TableEntry, as table_entry() encodes it."""
        table = self._table_ids[message.table_id]
        fields = {f.id: f.name for f in table.match_fields}
        match = {fields[m.field_id]: decode_match(m) for m in message.match}
        action = self._action_ids[message.action.action.action_id]
        names = {p.id: p.name for p in action.params}
        params = {names[p.param_id]: decode(p.value) for p in message.action.action.params}
        return TableEntry(table.preamble.name, match, action.preamble.name, params,
                          message.priority)
