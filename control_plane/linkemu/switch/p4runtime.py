"""A small, typed P4Runtime client over the p4runtime protobuf bindings:
one Switch object holds the gRPC channel, the arbitration stream and the
primary election, and writes, reads, digests and packet I/O go through it.
Names are resolved by its P4Info (p4info.py), values encoded by encoding.py.
"""

import queue
import sys
import threading
import time

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from .encoding import decode
from .entities import CounterValue
from .errors import P4RuntimeError, SwitchUnreachable
from .p4info import P4Info


# A switch on this machine is back within milliseconds of starting to listen:
# try again at once, not after gRPC's default backoff of seconds.
CHANNEL_OPTIONS = [("grpc.initial_reconnect_backoff_ms", 100),
                   ("grpc.min_reconnect_backoff_ms", 100),
                   ("grpc.max_reconnect_backoff_ms", 500)]


class Switch:
    """A P4Runtime connection to one device, as primary controller; with
    `primary` false, an observer that only reads: it opens no stream, so it
    never takes the switch (and the packet-ins and digests that go to its
    primary) from a controller at work. With `yields`, primary only while no
    other controller is: it neither takes the switch nor takes it back."""

    def __init__(self, address="127.0.0.1:9559", device_id=0, timeout=10.0, primary=True,
                 yields=False):
        self.address = address
        self.device_id = device_id
        self.timeout = timeout
        self.primary = primary
        self.yields = yields
        self.generation = 0      # connections made again (recover)
        self._recovering = threading.Lock()
        self.stream_ended = None  # why the stream ended, while it has
        self.election_id = self._election_id()
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
                self.election_id = self._election_id()
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

    def _election_id(self):
        """The newest election id, or the lowest for a client that yields."""
        return _LOWEST_ELECTION_ID if self.yields else _newest_election_id()

    def take_back(self):
        """Becomes primary again, with a newer election id than any client
        that took over since this one connected."""
        if self.yields:
            raise P4RuntimeError(f"another controller took the switch at {self.address}")
        self.election_id = _newest_election_id()
        self._become_primary()

    def read(self, *entities):
        """The entities the switch holds that match any of `entities`, in one
        ReadRequest."""
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        request.entities.extend(entities)
        try:
            for response in self._stub.Read(request, timeout=self.timeout):
                yield from response.entities
        except grpc.RpcError as err:
            raise _rpc_error(err) from None

    def read_table(self, table):
        """The entries installed in `table` (its default action aside)."""
        return [self.p4info.decode_entry(m) for m in self._installed([table])[table]]

    def _installed(self, tables):
        """{table: the protobuf TableEntries installed in it}, every table
        read in one request."""
        names = {self.p4info.table(t).preamble.id: t for t in tables}
        queries = [p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=i))
                   for i in names]
        installed = {table: [] for table in tables}
        for found in self.read(*queries):
            installed[names[found.table_entry.table_id]].append(found.table_entry)
        return installed

    def sync_tables(self, tables):
        """Makes each table of {table: [TableEntry]} hold exactly its entries,
        all or nothing: every entry is encoded before anything is written,
        the tables are read in one request, all changes go in one batch (in
        the tables' order), and if the switch refuses any of them the entries
        read before are written back."""
        wanted = {}
        for table, entries in tables.items():
            for entry in entries:
                if entry.table != table:
                    raise P4RuntimeError(f"entry for {entry.table!r} given to sync {table!r}")
            wanted[table] = [self.p4info.table_entry(e) for e in entries]
        before = self._installed(tables)
        try:
            self.write([u for t in tables for u in _sync_updates(before[t], wanted[t])])
        except P4RuntimeError as err:
            try:
                now = self._installed(tables)
                self.write([u for t in tables for u in _sync_updates(now[t], before[t])])
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
        return [{m: decode(value.bitstring)
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
        metadata = {names[m.metadata_id]: decode(m.value)
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


_LOWEST_ELECTION_ID = p4runtime_pb2.Uint128(high=0, low=1)


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
