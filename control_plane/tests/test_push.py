"""A profile is checked against the program (every entry built and encoded
to its field widths) before anything is written, by `check` and `push`
alike, and a push is all or nothing."""

import grpc
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

import fake_p4info
from linkemu.cli import main
from linkemu.model.profile import ProfileError, parse_profile
from linkemu.program import constants as p4
from linkemu.switch.errors import P4RuntimeError
from linkemu.switch.p4info import P4Info
from linkemu.switch.p4runtime import Switch, _entry_key
from linkemu.switch.push import entry_problems, profile_entries, push_profile

def profile(**downlink):
    return parse_profile({"downlink": downlink, "uplink": {}})


def test_values_beyond_a_field_are_named_with_the_field_and_the_widths():
    info = fake_p4info.p4info(widths={"queue_bytes_limit": 32, "retx_delay_us": 48})
    assert entry_problems(profile(queue_bytes="5000MB"), info) == [
        "queue_params (queue 0): set_queue queue_bytes_limit: 5000000000: does not fit "
        "in 32 bits; allowed 0 to 4294967295",
        "link (dir 0): plain queue_bytes_limit: 5000000000: does not fit in 32 bits; "
        "allowed 0 to 4294967295"]
    years = profile(arq={"delay": "400000000s", "max_retransmissions": 1})
    assert entry_problems(years, info) == [
        "arq (dir 0): retransmit retx_delay_us: 400000000000000: does not fit in 48 "
        "bits; allowed 0 to 281474976710655"]


def test_derived_parameters_beyond_any_number_are_problems_without_a_p4info():
    red = {"min": 5, "max": 15, "max_p": 0.1, "weight": 1e-17}
    assert entry_problems(profile(rate="1Mbit", red=red), None) == [
        "its table entries cannot be computed: RED weight 1e-17 is below the data plane's "
        "2^-24"]
    mean = {**red, "weight": 0.002, "mean_packet": "1" + "0" * 308 + "B"}
    assert entry_problems(profile(rate="1Mbit", red=mean), None) == [
        "its table entries cannot be computed: int too large to convert to float"]
    tiny = profile(rate="1kbit", priority={"match": [{"protocol": "udp"}], "share": 1e-300})
    assert entry_problems(tiny, None)[0].startswith(
        "its table entries cannot be computed: ")


def test_more_entries_than_a_table_holds():
    jitter = {"distribution": "normal", "jitter": "5ms"}
    both = parse_profile({"downlink": {"jitter": jitter}, "uplink": {"jitter": jitter}})
    info = fake_p4info.p4info(sizes={p4.TABLE_JITTER: 1024})
    assert entry_problems(both, info) == ["jitter: 2048 entries; the table holds 1024"]


class FakeRpcError(grpc.RpcError):
    def code(self):
        return grpc.StatusCode.UNKNOWN

    def details(self):
        return "refused"

    def trailing_metadata(self):
        return ()


class TableStub:
    """The switch's tables behind P4Runtime: a write applies each update in
    order and goes on past one that fails (CONTINUE_ON_ERROR), as BMv2 does;
    `refuse(update)` says which updates fail."""

    def __init__(self):
        self.entries = {}   # key -> protobuf TableEntry
        self.writes = 0
        self.reads = 0
        self.refuse = lambda update: False

    def Write(self, request, timeout):
        self.writes += 1
        failed = False
        for update in request.updates:
            entry, key = update.entity.table_entry, _entry_key(update.entity.table_entry)
            if self.refuse(update) or (update.type == p4runtime_pb2.Update.INSERT) == \
                    (key in self.entries):
                failed = True
            elif update.type == p4runtime_pb2.Update.DELETE:
                del self.entries[key]
            else:
                self.entries[key] = entry
        if failed:
            raise FakeRpcError()

    def Read(self, request, timeout):
        self.reads += 1
        response = p4runtime_pb2.ReadResponse()
        for query in request.entities:
            for entry in self.entries.values():
                if entry.table_id == query.table_entry.table_id:
                    response.entities.add(table_entry=entry)
        yield response

    def snapshot(self):
        return {key: entry.SerializeToString() for key, entry in self.entries.items()}


def stub_switch(widths=None):
    switch = Switch()
    switch._p4info = fake_p4info.p4info(widths)
    switch._stub = TableStub()
    return switch


def test_a_push_is_one_read_and_one_batch_and_leaves_exactly_the_profile():
    switch = stub_switch()
    push_profile(switch, profile(rate="1Mbit", red=fake_p4info.RED))
    push_profile(switch, profile(rate="2Mbit", loss={"model": "bernoulli", "p": 0.1}))
    assert switch._stub.reads == switch._stub.writes == 2
    tables = profile_entries(profile(rate="2Mbit",
                                              loss={"model": "bernoulli", "p": 0.1}))
    assert sorted(switch._stub.snapshot().values()) == sorted(
        switch.p4info.table_entry(e).SerializeToString()
        for entries in tables.values() for e in entries)


def test_a_refused_push_puts_the_previous_profile_back():
    switch = stub_switch()
    push_profile(switch, profile(rate="1Mbit", red=fake_p4info.RED))
    before = switch._stub.snapshot()
    loss_model = switch.p4info.table(p4.TABLE_LOSS_MODEL).preamble.id
    switch._stub.refuse = lambda update: update.entity.table_entry.table_id == loss_model
    with pytest.raises(P4RuntimeError, match="refused; the previous entries are back"):
        # Queues, link parameters and the rest come before the loss model.
        push_profile(switch, profile(rate="2Mbit",
                                               loss={"model": "bernoulli", "p": 0.1}))
    assert switch._stub.snapshot() == before


def test_a_profile_the_program_cannot_hold_writes_nothing():
    switch = stub_switch(widths={"queue_bytes_limit": 32})
    push_profile(switch, profile(rate="1Mbit"))
    before, writes = switch._stub.snapshot(), switch._stub.writes
    with pytest.raises(ProfileError, match="queue_bytes_limit: 5000000000: does not fit"):
        push_profile(switch, profile(rate="2Mbit", queue_bytes="5000MB"))
    assert switch._stub.snapshot() == before and switch._stub.writes == writes


def test_check_uses_the_p4info_when_there_is_one(capsys, tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("downlink: {queue_bytes: 5000MB}\nuplink: {}\n")
    p4info = tmp_path / "p4info.txtpb"
    p4info.write_text(text_format.MessageToString(
        fake_p4info.p4info(widths={"queue_bytes_limit": 32}).message))
    assert main(["check", "--p4info", str(p4info), str(path)]) == 1
    assert f"linkemu: {path}: invalid profile\n  queue_params (queue 0): set_queue " \
           "queue_bytes_limit: 5000000000: does not fit in 32 bits" in capsys.readouterr().err
    assert main(["check", "--p4info", str(tmp_path / "none"), str(path)]) == 0
    assert "none (make build): the table entries are not checked against the program's " \
           "field widths" in capsys.readouterr().err


def test_clearing_the_counters_zeroes_every_cell_in_one_batch():
    class WriteStub:
        def __init__(self):
            self.requests = []

        def Write(self, request, timeout):
            self.requests.append(request)

    switch = Switch()
    switch._p4info = P4Info(text_format.Parse("""
        counters { preamble { id: 1 name: "link_in" } size: 2 }
        counters { preamble { id: 2 name: "drop_queue" } size: 3 }""", p4info_pb2.P4Info()))
    switch._stub = WriteStub()
    switch.clear_counters()
    [request] = switch._stub.requests
    cells = [(u.type, u.entity.counter_entry.counter_id, u.entity.counter_entry.index.index,
              u.entity.counter_entry.HasField("data"), u.entity.counter_entry.data.packet_count,
              u.entity.counter_entry.data.byte_count) for u in request.updates]
    assert cells == [(p4runtime_pb2.Update.MODIFY, counter, index, True, 0, 0)
                     for counter, size in ((1, 2), (2, 3)) for index in range(size)]
