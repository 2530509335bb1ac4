import queue

import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from linkemu import dataplane
from linkemu.event_log import (FIELD_BITS, FIELDS, Event, EventRecorder, check_timing,
                               event_from_digest, outcomes, read_events)
from linkemu.p4runtime import P4Info, Switch
from linkemu.runner import RunOnce
from test_experiment import experiment as experiment_data, parse, problems


def event(seq, outcome="released", due=1000, actual=1100, direction="downlink", flags=0):
    return Event(direction, outcome, seq, 100, 0, 500, due, actual, 0, flags)


def test_timing_check_flags_overshoots_and_early_releases():
    events = [event(i, actual=1000 + i) for i in range(100)]
    events += [event(100, actual=1000 + 12_000), event(101, actual=999),
               event(102, outcome="drop_queue", due=0, actual=50)]
    check = check_timing(events, threshold_us=10_000)
    assert check.released == 102
    assert check.max_us == 12_000 and check.p50_us == 49.5
    assert check.overshoots == (("downlink", 100, 12_000),)
    assert check.early == 1 and not check.passed
    assert check.as_dict()["overshoots"] == 1
    assert check_timing([event(1)]).passed
    assert check_timing([]).released == 0


def test_outcomes_count_every_cause_per_direction():
    counts = outcomes([event(1), event(2, "drop_aqm"), event(3, direction="uplink"),
                       event(4, "drop_link_error")])
    assert counts["downlink"] == {"released": 1, "drop_queue": 0, "drop_aqm": 1,
                                  "drop_loss_model": 0, "drop_link_error": 1}
    assert counts["uplink"]["released"] == 1


def test_events_round_trip_through_the_file(tmp_path):
    path = tmp_path / "events.csv"
    path.write_text(",".join(FIELDS) + "\n" + ",".join(map(str, event(7, flags=6).row())) + "\n")
    (read,) = read_events(path)
    assert read == event(7, flags=6)
    assert read.has("held") and read.has("ahead") and not read.has("marked")
    assert read.error_us == 100


@pytest.mark.parametrize("text, message", [
    ("a,b\n", "not an event log"),
    (",".join(FIELDS) + "\ndownlink,released,1,2\n", "line 2: not an event"),
    (",".join(FIELDS) + "\nsideways,released,1,2,3,4,5,6,7,8\n", "line 2: not an event"),
])
def test_a_file_that_is_not_an_event_log_says_where(tmp_path, text, message):
    path = tmp_path / "events.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_events(path)


def packed(values):
    """The data plane's event_digest_t member: event_t's values end to end."""
    event = 0
    for value, bits in zip(values, FIELD_BITS):
        assert 0 <= value < 1 << bits
        event = event << bits | value
    return {"event": event}


def test_a_digest_unpacks_into_an_event():
    members = packed((1, 4, 9, 1500, 10, 20, 30, 31, 3, 2))
    assert event_from_digest(members) == Event("uplink", "drop_link_error", 9, 1500, 10, 20,
                                               30, 31, 3, 2)


def test_each_member_keeps_its_own_bits():
    widest = [(1 << bits) - 1 for bits in FIELD_BITS]
    widest[0], widest[1] = 0, 4   # a direction and an outcome that exist
    event = event_from_digest(packed(widest))
    assert event.row()[2:] == tuple(widest[2:])
    assert sum(FIELD_BITS) == 296   # event_digest_t's one field


def digest_p4info():
    info = p4info_pb2.P4Info()
    digest = info.digests.add()
    digest.preamble.id = 7
    digest.preamble.name = "event_t"
    digest.type_spec.struct.name = "event_t"
    struct = info.type_info.structs["event_t"]
    for name, width in (("dir", 8), ("seq", 32)):
        member = struct.members.add(name=name)
        member.type_spec.bitstring.bit.bitwidth = width
    return P4Info(info)


def test_digest_lists_are_decoded_and_acknowledged():
    switch = Switch()
    switch._p4info = digest_p4info()
    switch._digests, switch._requests = queue.Queue(), queue.Queue()
    message = p4runtime_pb2.DigestList(digest_id=7, list_id=3)
    data = message.data.add()
    data.struct.members.add(bitstring=b"\x01")
    data.struct.members.add(bitstring=b"\x00\x01\x00")
    switch._digests.put(message)
    assert switch.next_digests("event_t", timeout=0.1) == [{"dir": 1, "seq": 256}]
    ack = switch._requests.get_nowait()
    assert (ack.digest_ack.digest_id, ack.digest_ack.list_id) == (7, 3)
    assert switch.next_digests("event_t", timeout=0.01) == []


def test_every_digest_sample_is_sent_with_no_cache_to_flush():
    switch = Switch()
    switch._p4info = digest_p4info()
    writes = []
    switch.write = writes.append
    switch.enable_digest("event_t")
    [(kind, entity)] = writes[0]
    config = entity.digest_entry.config
    assert kind == p4runtime_pb2.Update.INSERT and entity.digest_entry.digest_id == 7
    assert config.ack_timeout_ns == 0 and config.max_list_size > 1


class DigestSwitch:
    """Hands out digest lists, and records what the recorder writes."""

    def __init__(self, lists, recorder):
        self.lists = list(lists)
        self.recorder = recorder
        self.synced = []
        self.digest_on = None

    def enable_digest(self, name):
        self.digest_on = name

    def disable_digest(self, name):
        self.digest_on = None

    def sync_table(self, table, entries):
        self.synced.append((table, [e.match["m.pkt.dir"] for e in entries]))

    def next_digests(self, name, timeout):
        if self.lists:
            return self.lists.pop(0)
        self.recorder.stop()
        return []


def test_recorder_writes_every_event_and_turns_the_log_off(tmp_path):
    def members(seq):
        return packed((0, 0, seq, 100, 1, 2, 3, 4, 0, 0))
    path = tmp_path / "events.csv"
    recorder = EventRecorder(None, path)
    switch = DigestSwitch([[members(1)], [members(2), members(3)]], recorder)
    recorder.switch = switch
    recorder.run()
    assert [e.seq for e in read_events(path)] == [1, 2, 3] and recorder.count == 3
    assert switch.synced == [(dataplane.EVENT_LOG, [0, 1]), (dataplane.EVENT_LOG, [])]
    assert switch.digest_on is None


def test_experiments_can_reject_runs_that_fail_the_check():
    experiment = parse(experiment_data(event_log={"threshold": "5ms", "reject": True}))
    assert experiment.event_log.threshold_us == 5000 and experiment.event_log.reject
    assert parse(experiment_data()).event_log is None
    assert parse(experiment_data(event_log={})).event_log.threshold_us == 10_000
    assert problems(experiment_data(event_log={"threshold": "0ms", "rejected": 1})) == [
        "event_log.threshold: '0ms': must be longer than 0s",
        "event_log.rejected: 1: unknown field; allowed: reject, threshold"]
    run = RunOnce.__new__(RunOnce)
    run.experiment = experiment
    failing = {"event_log": {"timing": check_timing(
        [event(1, actual=1000 + 6000)], 5000).as_dict()}}
    status = run._event_check(failing)
    assert status["status"] == "failed" and failing["status"] == "failed"
    assert "1 packets released more than 5 ms late (worst 6.0 ms)" in status["error"]
    passing = {"event_log": {"timing": check_timing([event(1)], 5000).as_dict()}}
    assert run._event_check(passing) is None and "status" not in passing
