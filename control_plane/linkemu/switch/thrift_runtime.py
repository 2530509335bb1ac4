"""BMv2's egress queues over its Thrift runtime: what P4Runtime does not manage.

simple_switch's "simple_switch" Thrift service sets the depth (frames) and
the rate (frames a second, 0 for none) of each egress queue, a port's or one
priority's of it; BMv2 forgets both when it restarts. Only the calls linkemu
uses are here, written with the `thrift` package's binary protocol as
BMv2's own generated client writes them (targets/simple_switch/thrift/
simple_switch.thrift), so nothing of BMv2's needs importing.
"""

from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
from thrift.Thrift import TApplicationException, TException, TMessageType, TType
from thrift.transport import TSocket, TTransport

SERVICE = "simple_switch"
MAX_PORT = 511          # v1model's ports are 9 bits
MAX_PRIORITY = 7        # and priorities 3


class ThriftError(RuntimeError):
    """A call the switch refused, or a switch that could not be reached."""


class SwitchQueues:
    """A Thrift connection to one switch's queue settings; a context manager."""

    def __init__(self, port, host="127.0.0.1", timeout=5.0):
        socket = TSocket.TSocket(host, port)
        socket.setTimeout(timeout * 1000)
        self._transport = TTransport.TBufferedTransport(socket)
        self._protocol = TMultiplexedProtocol.TMultiplexedProtocol(
            TBinaryProtocol.TBinaryProtocol(self._transport), SERVICE)
        self._seq = 0
        try:
            self._transport.open()
        except TException as err:
            raise ThriftError(f"no Thrift server at {host}:{port}: {err}") from err

    def close(self):
        self._transport.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def set_depth(self, port, frames, priority=None):
        """Frames the egress queue of `port` (all its priorities, or one) holds."""
        _check("depth", frames, 1, 2**31 - 1)
        self._set_queue("depth", port, priority, (TType.I32, frames))

    def set_rate(self, port, frames_per_s, priority=None):
        """The most frames a second the egress queue of `port` sends (0: no limit)."""
        _check("rate", frames_per_s, 0, 2**63 - 1)
        self._set_queue("rate", port, priority, (TType.I64, frames_per_s))

    def _set_queue(self, what, port, priority, value):
        """set_egress_queue_WHAT for a port, or set_egress_priority_queue_WHAT
        for one of its priorities."""
        _check("port", port, 0, MAX_PORT)
        if priority is None:
            self._status(f"set_egress_queue_{what}", (TType.I32, port), value)
        else:
            _check("priority", priority, 0, MAX_PRIORITY)
            self._status(f"set_egress_priority_queue_{what}",
                         (TType.I32, port), (TType.I32, priority), value)

    def add_mirror(self, session, port):
        """Clones to `session` go to `port`'s egress queue directly (priority
        0), not through a multicast group as a P4Runtime clone session's do."""
        _check("session", session, 1, 32767)
        _check("port", port, 0, MAX_PORT)
        self._call("mirroring_session_add", (TType.I32, session),
                   (TType.STRUCT, [(TType.I32, port)]))   # MirroringSessionConfig.port

    def elapsed_us(self):
        """Microseconds since the switch started: its data-plane clock."""
        return self._call("get_time_elapsed_us")

    def _status(self, method, *args):
        status = self._call(method, *args)
        if status != 0:
            raise ThriftError(f"{method}{tuple(a[1] for a in args)}: the switch returned {status}")

    def _call(self, method, *args):
        """Calls `method` with (TType, value) arguments numbered from 1 and
        returns its result (field 0), as generated Thrift clients do."""
        protocol = self._protocol
        self._seq += 1
        try:
            protocol.writeMessageBegin(method, TMessageType.CALL, self._seq)
            self._write_fields(f"{method}_args", args)
            protocol.writeMessageEnd()
            self._transport.flush()
            _, kind, _ = protocol.readMessageBegin()
            if kind == TMessageType.EXCEPTION:
                error = TApplicationException()
                error.read(protocol)
                protocol.readMessageEnd()
                raise ThriftError(f"{method}: {error.message or 'refused by the switch'}")
            result = None
            protocol.readStructBegin()
            while True:
                _, kind, number = protocol.readFieldBegin()
                if kind == TType.STOP:
                    break
                if number == 0 and kind == TType.I32:
                    result = protocol.readI32()
                elif number == 0 and kind == TType.I64:
                    result = protocol.readI64()
                elif number != 0 and kind == TType.STRUCT:   # the call's declared exception
                    raise ThriftError(f"{method}: refused by the switch")
                else:
                    protocol.skip(kind)
                protocol.readFieldEnd()
            protocol.readStructEnd()
            protocol.readMessageEnd()
            return result
        except TException as err:
            raise ThriftError(f"{method}: {err}") from err

    def _write_fields(self, name, fields):
        """A struct of (TType, value) fields numbered from 1; a STRUCT's value
        is its own list of fields."""
        protocol = self._protocol
        protocol.writeStructBegin(name)
        for number, (kind, value) in enumerate(fields, 1):
            protocol.writeFieldBegin(f"field{number}", kind, number)
            if kind == TType.STRUCT:
                self._write_fields(f"{name}.{number}", value)
            else:
                {TType.I32: protocol.writeI32, TType.I64: protocol.writeI64}[kind](value)
            protocol.writeFieldEnd()
        protocol.writeFieldStop()
        protocol.writeStructEnd()


def _check(what, value, low, high):
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ThriftError(f"{what} {value!r} is not a whole number in {low}..{high}")
