"""The Thrift client writes BMv2's calls as its generated client does: read
back here by the `thrift` package on a server of the test's own."""

import socket
import threading

import pytest
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException, TMessageType, TType
from thrift.transport import TSocket, TTransport

from linkemu.switch.thrift_runtime import SwitchQueues, ThriftError


class FakeSwitch(threading.Thread):
    """Answers each call with `reply(name, args)`: a result, or an exception."""

    def __init__(self, reply):
        super().__init__(daemon=True)
        self.reply = reply
        self.calls = []
        self.server = TSocket.TServerSocket(host="127.0.0.1", port=0)
        self.server.listen()
        self.port = self.server.handle.getsockname()[1]

    def run(self):
        client = self.server.accept()
        transport = TTransport.TBufferedTransport(client)
        protocol = TBinaryProtocol.TBinaryProtocol(transport)
        try:
            while True:
                name, _, seq = protocol.readMessageBegin()
                args = read_struct(protocol)
                protocol.readMessageEnd()
                self.calls.append((name, args))
                kind, value = self.reply(name, args)
                if isinstance(value, TApplicationException):
                    protocol.writeMessageBegin(name, TMessageType.EXCEPTION, seq)
                    value.write(protocol)
                else:
                    protocol.writeMessageBegin(name, TMessageType.REPLY, seq)
                    protocol.writeStructBegin("result")
                    protocol.writeFieldBegin("success", kind, 0)
                    {TType.I32: protocol.writeI32, TType.I64: protocol.writeI64}[kind](value)
                    protocol.writeFieldEnd()
                    protocol.writeFieldStop()
                    protocol.writeStructEnd()
                protocol.writeMessageEnd()
                transport.flush()
        except (EOFError, TTransport.TTransportException):
            client.close()


def read_struct(protocol):
    """{field number: (TType, value)}; a struct's value is its own dict."""
    fields = {}
    protocol.readStructBegin()
    while True:
        _, kind, number = protocol.readFieldBegin()
        if kind == TType.STOP:
            break
        fields[number] = (kind, read_struct(protocol) if kind == TType.STRUCT else
                          {TType.I32: protocol.readI32, TType.I64: protocol.readI64}[kind]())
        protocol.readFieldEnd()
    protocol.readStructEnd()
    return fields


def serve(reply):
    switch = FakeSwitch(reply)
    switch.start()
    return switch


def test_calls_name_the_service_and_number_their_arguments():
    switch = serve(lambda name, args: (TType.I64, 1234) if name.endswith("_us")
                   else (TType.I32, 0))
    with SwitchQueues(switch.port) as queues:
        queues.set_depth(448, 4096)
        queues.set_depth(449, 100, priority=3)
        queues.set_rate(452, 10_000)
        queues.set_rate(453, 8333, priority=1)
        queues.add_mirror(15, 448)
        assert queues.elapsed_us() == 1234
    assert switch.calls == [
        ("simple_switch:set_egress_queue_depth", {1: (TType.I32, 448), 2: (TType.I32, 4096)}),
        ("simple_switch:set_egress_priority_queue_depth",
         {1: (TType.I32, 449), 2: (TType.I32, 3), 3: (TType.I32, 100)}),
        ("simple_switch:set_egress_queue_rate", {1: (TType.I32, 452), 2: (TType.I64, 10_000)}),
        ("simple_switch:set_egress_priority_queue_rate",
         {1: (TType.I32, 453), 2: (TType.I32, 1), 3: (TType.I64, 8333)}),
        ("simple_switch:mirroring_session_add",   # MirroringSessionConfig{1: port}
         {1: (TType.I32, 15), 2: (TType.STRUCT, {1: (TType.I32, 448)})}),
        ("simple_switch:get_time_elapsed_us", {}),
    ]


def test_a_refusal_is_an_error_naming_the_call():
    switch = serve(lambda name, args: (TType.I32, 1) if "rate" in name else
                   (None, TApplicationException(message="vector::_M_range_check")))
    with SwitchQueues(switch.port) as queues:
        with pytest.raises(ThriftError, match=r"set_egress_queue_rate\(448, 10\).*returned 1"):
            queues.set_rate(448, 10)
        with pytest.raises(ThriftError, match="set_egress_priority_queue_depth: vector"):
            queues.set_depth(448, 10, priority=5)


@pytest.mark.parametrize("call, message", [
    (lambda q: q.set_depth(512, 10), "port 512 is not a whole number in 0..511"),
    (lambda q: q.set_depth(1, 0), "depth 0"),
    (lambda q: q.set_depth(1, 10, priority=8), "priority 8"),
    (lambda q: q.set_rate(1, -1), "rate -1"),
    (lambda q: q.set_rate(1, 1.5), "rate 1.5"),
    (lambda q: q.set_depth(True, 10), "port True"),
])
def test_bad_arguments_are_refused_before_the_switch_sees_them(call, message):
    switch = serve(lambda name, args: (TType.I32, 0))
    with SwitchQueues(switch.port) as queues:
        with pytest.raises(ThriftError, match=message):
            call(queues)
    assert switch.calls == []


def test_no_server_is_an_error_naming_the_address():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ThriftError, match=f"no Thrift server at 127.0.0.1:{port}"):
        SwitchQueues(port)
