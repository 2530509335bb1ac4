"""A small, typed P4Runtime client over the p4runtime protobuf bindings.

Names from the P4Info (tables, actions, counters) are resolved here, values
are encoded as canonical byte strings, and one Switch object holds the gRPC
channel, the arbitration stream and the primary election.
"""

import functools
import queue
import sys
import threading
import time
from dataclasses import dataclass, field

import grpc
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from ..model.fields import shown


class P4RuntimeError(RuntimeError):
    """The switch refused or could not be reached."""


class SwitchUnreachable(P4RuntimeError):
    """The connection to the switch broke; Switch.recover() makes it again."""


def encode(value, bitwidth, what="value"):
    """Canonical P4Runtime byte string of an unsigned value; `what` names it
    in the error."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise P4RuntimeError(f"{what}: {shown(value)}: not a whole number")
    if not 0 <= value < (1 << bitwidth):
        raise P4RuntimeError(f"{what}: {shown(value)}: does not fit in {bitwidth} bits; "
                             f"allowed 0 to {(1 << bitwidth) - 1}")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def mac_to_int(mac):
    return int(mac.replace(":", ""), 16)


@dataclass(frozen=True)
class Ternary:
    value: int
    mask: int


@dataclass(frozen=True)
class Range:
    low: int
    high: int


@dataclass(frozen=True)
class TableEntry:
    """A table entry by names; match values are ints, Ternary or Range."""

    table: str
    match: dict
    action: str
    params: dict = field(default_factory=dict)
    priority: int = 0


@dataclass(frozen=True)
class MulticastGroup:
    group_id: int
    ports: tuple


@dataclass(frozen=True)
class CounterValue:
    counter: str
    index: int
    packets: int
    bytes: int


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

    def decode_entry(self, message):
        """TableEntry of a protobuf TableEntry, as table_entry() encodes it."""
        table = next(t for t in self.message.tables if t.preamble.id == message.table_id)
        fields = {f.id: f.name for f in table.match_fields}
        match = {}
        for m in message.match:
            kind = m.WhichOneof("field_match_type")
            if kind == "exact":
                match[fields[m.field_id]] = int.from_bytes(m.exact.value, "big")
            elif kind == "ternary":
                match[fields[m.field_id]] = Ternary(int.from_bytes(m.ternary.value, "big"),
                                                    int.from_bytes(m.ternary.mask, "big"))
            else:
                match[fields[m.field_id]] = Range(int.from_bytes(m.range.low, "big"),
                                                  int.from_bytes(m.range.high, "big"))
        action = next(a for a in self.message.actions
                      if a.preamble.id == message.action.action.action_id)
        names = {p.id: p.name for p in action.params}
        params = {names[p.param_id]: int.from_bytes(p.value, "big")
                  for p in message.action.action.params}
        return TableEntry(table.preamble.name, match, action.preamble.name, params,
                          message.priority)

    def counter_names(self):
        return [c.preamble.name for c in self.message.counters]

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
            spec = fields[name]
            what = f"{where}: match {name}"
            if isinstance(value, Ternary):
                if value.mask == 0:
                    continue  # a wildcard is expressed by omitting the field
                message.match.add(field_id=spec.id).ternary.CopyFrom(
                    p4runtime_pb2.FieldMatch.Ternary(
                        value=encode(value.value & value.mask, spec.bitwidth, what),
                        mask=encode(value.mask, spec.bitwidth, what)))
            elif isinstance(value, Range):
                if value.low > value.high:
                    raise P4RuntimeError(f"{what}: range {value.low} to {value.high} is empty")
                message.match.add(field_id=spec.id).range.CopyFrom(
                    p4runtime_pb2.FieldMatch.Range(low=encode(value.low, spec.bitwidth, what),
                                                   high=encode(value.high, spec.bitwidth, what)))
            else:
                message.match.add(field_id=spec.id).exact.value = encode(value, spec.bitwidth,
                                                                         what)
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


# A switch on this machine is back within milliseconds of starting to listen:
# try again at once, not after gRPC's default backoff of seconds.
CHANNEL_OPTIONS = [("grpc.initial_reconnect_backoff_ms", 100),
                   ("grpc.min_reconnect_backoff_ms", 100),
                   ("grpc.max_reconnect_backoff_ms", 500)]


class Switch:
    """A P4Runtime connection to one device, as primary controller; with
    `primary` false, an observer that only reads: it opens no stream, so it
    never takes the switch (and the packet-ins and digests that go to its
    primary) from a controller at work."""

    def __init__(self, address="127.0.0.1:9559", device_id=0, timeout=10.0, primary=True):
        self.address = address
        self.device_id = device_id
        self.timeout = timeout
        self.primary = primary
        self.generation = 0      # connections made again (recover)
        self._recovering = threading.Lock()
        self.stream_ended = None  # why the stream ended, while it has
        self.election_id = _newest_election_id()
        self._channel = None
        self._stub = None
        self._requests = None
        self._responses = None
        self._stream = None
        self._digests = None
        self._packets_in = None
        self._p4info = None

    def __enter__(self):
        self.connect()
        return self

    def __exit__(self, *exc):
        self.close()

    def connect(self, timeout=None):
        self._channel = grpc.insecure_channel(self.address, options=CHANNEL_OPTIONS)
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout or self.timeout)
        except grpc.FutureTimeoutError:
            self._channel.close()
            raise SwitchUnreachable(
                f"no P4Runtime server at {self.address} (is simple_switch_grpc running?)"
            ) from None
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
        if not self.primary:
            return
        self._requests = queue.Queue()
        self._responses = queue.Queue()
        self._digests = queue.Queue()
        self._packets_in = queue.Queue()
        self.stream_ended = None
        stream = self._stub.StreamChannel(iter(self._requests.get, None))
        threading.Thread(target=self._read_stream, daemon=True,
                         args=(stream, self._responses, self._digests, self._packets_in)).start()
        self._become_primary()

    def _read_stream(self, stream, responses, digests, packets_in):
        """Sorts what the switch streams into this connection's queues; when
        the stream ends, says why to whoever waits on them."""
        try:
            for response in stream:
                if response.HasField("digest"):
                    digests.put(response.digest)
                elif response.HasField("packet"):
                    # Stamped here: a clock probe's round trip ends now.
                    packets_in.put((time.time(), response.packet))
                elif response.HasField("error"):
                    error = response.error
                    print(f"linkemu: the switch at {self.address} reported on its stream: "
                          f"{_code_name(error.canonical_code)}: {error.message}", file=sys.stderr,
                          flush=True)
                else:
                    responses.put(response)
            ended = "the switch closed it"
        except grpc.RpcError as err:
            responses.put(err)
            ended = f"{err.code().name}: {err.details()}"
        if responses is self._responses:
            self.stream_ended = f"the stream from the switch at {self.address} ended ({ended})"
        digests.put(None)
        packets_in.put(None)

    def _become_primary(self):
        request = p4runtime_pb2.StreamMessageRequest()
        request.arbitration.device_id = self.device_id
        request.arbitration.election_id.CopyFrom(self.election_id)
        self._requests.put(request)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                response = self._responses.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise P4RuntimeError("no arbitration answer from the switch") from None
            if isinstance(response, grpc.RpcError):
                raise P4RuntimeError(f"arbitration failed: {response.details()}")
            if not response.HasField("arbitration"):
                continue
            primary = response.arbitration.election_id
            if response.arbitration.status.code == grpc.StatusCode.OK.value[0]:
                if primary == self.election_id:
                    return
            elif (primary.high, primary.low) > (self.election_id.high, self.election_id.low):
                raise P4RuntimeError("another controller with a higher election id "
                                     "is primary for this switch")

    def close(self):
        if self._requests is not None:
            self._requests.put(None)
        if self._channel is not None:
            self._channel.close()
        self._channel = self._requests = None

    def recover(self, generation, within_s):
        """Connects again after the connection of `generation` broke, trying
        until `within_s` seconds have passed; does nothing when another
        thread sharing this client has done it already."""
        with self._recovering:
            if self.generation != generation:
                return
            self.close()
            deadline = time.monotonic() + within_s
            while True:
                self.election_id = _newest_election_id()
                try:
                    self.connect(timeout=max(0.1, min(self.timeout, deadline - time.monotonic())))
                    break
                except SwitchUnreachable:
                    if time.monotonic() >= deadline:
                        raise SwitchUnreachable(f"the switch at {self.address} did not come "
                                                f"back within {within_s:g} s") from None
                    time.sleep(0.2)
            self._p4info = None   # a switch started again may run another program
            self.generation += 1

    def _call(self, method, request):
        """One unary RPC, its failure as a P4RuntimeError."""
        try:
            return method(request, timeout=self.timeout)
        except grpc.RpcError as err:
            raise _rpc_error(err) from None

    def set_pipeline(self, p4info_path, bmv2_json_path):
        """Installs a compiled program; this resets all tables and registers."""
        p4info = P4Info.from_file(p4info_path)
        request = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id, election_id=self.election_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        request.config.p4info.CopyFrom(p4info.message)
        with open(bmv2_json_path, "rb") as f:
            request.config.p4_device_config = f.read()
        self._call(self._stub.SetForwardingPipelineConfig, request)
        self._p4info = p4info

    @property
    def p4info(self):
        """The P4Info of the program on the switch, read on first use."""
        if self._p4info is None:
            self._p4info = self._read_p4info()
        return self._p4info

    def _read_p4info(self):
        request = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        response = self._call(self._stub.GetForwardingPipelineConfig, request)
        if not response.config.p4info.tables:
            raise P4RuntimeError("the switch runs no P4 program yet; push the pipeline first")
        return P4Info(response.config.p4info)

    def write(self, updates):
        """Sends (type, entity) updates in one batch.

        A long-lived controller (the state driver) loses primacy to a newer
        client such as `linkemu push`; it takes it back once that one is gone."""
        if not updates:
            return
        if not self.primary:
            raise P4RuntimeError("an observer connection does not write")
        request = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        for kind, entity in updates:
            request.updates.add(type=kind).entity.CopyFrom(entity)
        for attempt in (1, 2):
            request.election_id.CopyFrom(self.election_id)
            try:
                self._stub.Write(request, timeout=self.timeout)
                return
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.PERMISSION_DENIED or attempt == 2:
                    raise _rpc_error(err) from None
            self.take_back()

    def take_back(self):
        """Becomes primary again, with a newer election id than any client
        that took over since this one connected."""
        self.election_id = _newest_election_id()
        self._become_primary()

    def read(self, entity):
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        request.entities.add().CopyFrom(entity)
        try:
            for response in self._stub.Read(request, timeout=self.timeout):
                yield from response.entities
        except grpc.RpcError as err:
            raise _rpc_error(err) from None

    def read_table(self, table):
        """The entries installed in `table` (its default action aside)."""
        return [self.p4info.decode_entry(m) for m in self._installed(table)]

    def _installed(self, table):
        """The protobuf TableEntries installed in `table`."""
        query = p4runtime_pb2.Entity()
        query.table_entry.table_id = self.p4info.table(table).preamble.id
        return [found.table_entry for found in self.read(query)]

    def sync_tables(self, tables):
        """Makes each table of {table: [TableEntry]} hold exactly its entries,
        all or nothing: every entry is encoded before anything is written,
        all changes go in one batch (in the tables' order), and if the switch
        refuses any of them the entries read before are written back."""
        wanted = {}
        for table, entries in tables.items():
            for entry in entries:
                if entry.table != table:
                    raise P4RuntimeError(f"entry for {entry.table!r} given to sync {table!r}")
            wanted[table] = [self.p4info.table_entry(e) for e in entries]
        before = {table: self._installed(table) for table in tables}
        try:
            self.write([u for t in tables for u in _sync_updates(before[t], wanted[t])])
        except P4RuntimeError as err:
            try:
                self.write([u for t in tables
                            for u in _sync_updates(self._installed(t), before[t])])
            except P4RuntimeError as again:
                raise P4RuntimeError(f"{err}; writing back the previous entries failed too, "
                                     f"the tables may hold some of each: {again}") from None
            raise P4RuntimeError(f"{err}; the previous entries are back") from None

    def sync_table(self, table, entries):
        self.sync_tables({table: entries})

    def modify(self, entries):
        """Changes the actions of installed entries, without reading first."""
        self.write([(p4runtime_pb2.Update.MODIFY,
                     p4runtime_pb2.Entity(table_entry=self.p4info.table_entry(e)))
                    for e in entries])

    def write_multicast_groups(self, groups):
        """Creates or replaces multicast groups."""
        existing = set()
        query = p4runtime_pb2.Entity()
        query.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 0
        for found in self.read(query):
            existing.add(found.packet_replication_engine_entry
                         .multicast_group_entry.multicast_group_id)
        updates = []
        for group in groups:
            entity = p4runtime_pb2.Entity()
            entry = entity.packet_replication_engine_entry.multicast_group_entry
            entry.multicast_group_id = group.group_id
            # Replicas numbered from 1 (a copy's egress_rid): a port given
            # twice gets two, and the data plane knows a group's first copy.
            for instance, port in enumerate(group.ports, start=1):
                entry.replicas.add(egress_port=port, instance=instance)
            kind = (p4runtime_pb2.Update.MODIFY if group.group_id in existing
                    else p4runtime_pb2.Update.INSERT)
            updates.append((kind, entity))
        self.write(updates)

    def enable_digest(self, name, max_list_size=256, max_timeout_ns=5_000_000):
        """Asks the switch to stream digest `name` to this (primary) client.
        BMv2 hands PI its samples in lists of up to `max_list_size`, at least
        every `max_timeout_ns`; PI sends what it gathered on a sweep of at
        least 100 ms (two sweeps at most).

        Every sample is sent: no ack timeout, so the switch keeps no cache of
        samples it suppresses until acknowledged, and two identical events
        are both reported.

        A digest stays enabled for the switch's life: the program decides
        what it reports. PI never gets the digest deleted, because its
        DigestMgr forgets to clear the sweep task it cancels on a DELETE
        (Tasks::cancel() nulls task_ack_timeout twice), and the next INSERT
        cancels that task again after the task queue freed it: a write to
        freed memory that crashed the switch later, in a gRPC thread's
        malloc, after the event log had been stopped and started."""
        entity = p4runtime_pb2.Entity()
        entry = entity.digest_entry
        entry.digest_id = self.p4info.digest(name).preamble.id
        entry.config.max_list_size = max_list_size
        entry.config.max_timeout_ns = max_timeout_ns
        entry.config.ack_timeout_ns = 0
        try:
            self.write([(p4runtime_pb2.Update.INSERT, entity)])
        except P4RuntimeError as err:
            if "ALREADY_EXISTS" not in str(err):
                raise
            self.write([(p4runtime_pb2.Update.MODIFY, entity)])

    def next_digests(self, name, timeout):
        """The members of each struct of the next digest list (dicts of ints),
        acknowledged; [] when none came within `timeout` seconds."""
        digest = self.p4info.digest(name)
        message = self._next_streamed(self._digests, timeout)
        if message is None:
            return []
        ack = p4runtime_pb2.StreamMessageRequest()
        ack.digest_ack.digest_id = message.digest_id
        ack.digest_ack.list_id = message.list_id
        self._requests.put(ack)
        if message.digest_id != digest.preamble.id:
            return []
        members = [m for m, _ in self.p4info.struct_members(digest)]
        return [{m: int.from_bytes(value.bitstring, "big")
                 for m, value in zip(members, data.struct.members)}
                for data in message.data]

    def _next_streamed(self, streamed, timeout):
        """The next item the stream put in `streamed` within `timeout`
        seconds, None if none; SwitchUnreachable once the stream has ended
        (its reader puts None in every queue then)."""
        if self.stream_ended:
            raise SwitchUnreachable(self.stream_ended)
        try:
            item = streamed.get(timeout=timeout)
        except queue.Empty:
            return None
        if item is None:
            raise SwitchUnreachable(self.stream_ended)
        return item

    def send_packet(self, payload):
        """Sends `payload` into the pipeline on the switch's CPU port (a
        packet-out without metadata)."""
        request = p4runtime_pb2.StreamMessageRequest()
        request.packet.payload = payload
        self._requests.put(request)

    def next_packet_in(self, timeout):
        """(instant received as time.time(), payload, {metadata name: int}) of
        the next packet the switch sent this (primary) client; None when none
        came within `timeout` seconds."""
        answer = self._next_streamed(self._packets_in, timeout)
        if answer is None:
            return None
        received, packet = answer
        names = self.p4info.packet_in_metadata
        metadata = {names[m.metadata_id]: int.from_bytes(m.value, "big")
                    for m in packet.metadata if m.metadata_id in names}
        return received, packet.payload, metadata

    def clear_counters(self):
        """Sets every cell of every indexed counter back to zero, in one batch."""
        updates = []
        for counter in self.p4info.message.counters:
            for index in range(counter.size):
                entity = p4runtime_pb2.Entity()
                entity.counter_entry.counter_id = counter.preamble.id
                entity.counter_entry.index.index = index
                entity.counter_entry.data.SetInParent()   # no packets, no bytes
                updates.append((p4runtime_pb2.Update.MODIFY, entity))
        self.write(updates)

    def read_counter(self, name):
        """All cells of an indexed counter."""
        query = p4runtime_pb2.Entity()
        query.counter_entry.counter_id = self.p4info.counter(name).preamble.id
        values = []
        for found in self.read(query):
            cell = found.counter_entry
            values.append(CounterValue(name, cell.index.index, cell.data.packet_count,
                                       cell.data.byte_count))
        return sorted(values, key=lambda v: v.index)


def _entry_key(message):
    return (message.table_id, message.priority,
            tuple(sorted(m.SerializeToString() for m in message.match)))


def _sync_updates(installed, wanted):
    """Updates that make a table holding the protobuf TableEntries
    `installed` hold `wanted`: inserts and modifies, then deletes."""
    stale = {_entry_key(m): m for m in installed}
    updates = []
    for message in wanted:
        found = stale.pop(_entry_key(message), None)
        kind = p4runtime_pb2.Update.INSERT if found is None else p4runtime_pb2.Update.MODIFY
        updates.append((kind, p4runtime_pb2.Entity(table_entry=message)))
    for message in stale.values():
        key = p4runtime_pb2.TableEntry()
        key.CopyFrom(message)
        key.ClearField("action")
        updates.append((p4runtime_pb2.Update.DELETE, p4runtime_pb2.Entity(table_entry=key)))
    return updates


def _newest_election_id():
    """An election id above every earlier one: a newer client takes over
    from an older one, and the newest wins."""
    return p4runtime_pb2.Uint128(high=0, low=time.time_ns() // 1000)


def _rpc_error(err):
    """The P4RuntimeError of a failed RPC: SwitchUnreachable when no switch answered."""
    kind = SwitchUnreachable if err.code() == grpc.StatusCode.UNAVAILABLE else P4RuntimeError
    return kind(_describe_rpc_error(err))


def _code_name(code):
    """The name of a google.rpc.Code (e.g. ALREADY_EXISTS), as the switch's
    per-update errors and stream errors give it."""
    from google.rpc import code_pb2
    try:
        return code_pb2.Code.Name(code)
    except ValueError:
        return f"code {code}"


def _describe_rpc_error(err):
    text = f"{err.code().name}: {err.details()}"
    # Batch write errors carry one status per update in the trailing details.
    try:
        from google.rpc import status_pb2
        from p4.v1.p4runtime_pb2 import Error
        for key, value in err.trailing_metadata() or ():
            if key == "grpc-status-details-bin":
                status = status_pb2.Status.FromString(value)
                for detail in status.details:
                    error = Error()
                    detail.Unpack(error)
                    if error.canonical_code != 0:
                        text += f"; {_code_name(error.canonical_code)}: {error.message}"
    except (ImportError, AttributeError):
        pass
    return text
