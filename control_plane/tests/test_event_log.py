import queue

import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from linkemu.drivers.event_log import (FIELDS, Event, EventRecorder, check_timing,
                                       event_from_digest, outcomes, read_events)
from linkemu.experiments.runner import RunOnce
from linkemu.program import constants as p4
from linkemu.switch.entities import Range
from linkemu.switch.entries.event_log import event_log_entries, skip_q16
from linkemu.switch.errors import P4RuntimeError
from linkemu.switch.p4info import P4Info
from linkemu.switch.p4runtime import Switch
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


def test_timing_check_within_a_share_lets_that_share_overshoot():
    """`within` 0.99 of 200 released lets 2 overshoot, not 3."""
    on_time = [event(i) for i in range(197)]
    late = [event(200 + i, actual=1000 + 20_000) for i in range(3)]
    assert not check_timing(on_time + late, 10_000, within=0.99).passed
    assert check_timing(on_time + [event(197)] + late[:2], 10_000, within=0.99).passed
    assert not check_timing(on_time + [event(197)] + late[:2], 10_000).passed
    assert check_timing([event(1)], within=0.99).as_dict()["within"] == 0.99


def test_outcomes_count_every_cause_per_direction():
    counts = outcomes([event(1), event(2, "drop_aqm"), event(3, direction="uplink"),
                       event(4, "drop_link_error")])
    assert counts["downlink"] == {"released": 1, "drop_queue": 0, "drop_aqm": 1,
                                  "drop_loss_model": 0, "drop_link_error": 1,
                                  "drop_hold": 0, "drop_codel": 0, "drop_blue": 0}
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
    for value, bits in zip(values, p4.EVENT_FIELD_BITS):
        assert 0 <= value < 1 << bits
        event = event << bits | value
    return {"event": event}


def test_a_digest_unpacks_into_an_event():
    members = packed((1, 4, 9, 1500, 10, 20, 30, 31, 3, 2))
    assert event_from_digest(members) == Event("uplink", "drop_link_error", 9, 1500, 10, 20,
                                               30, 31, 3, 2)


def test_each_member_keeps_its_own_bits():
    widest = [(1 << bits) - 1 for bits in p4.EVENT_FIELD_BITS]
    widest[0], widest[1] = 0, 4   # a direction and an outcome that exist
    event = event_from_digest(packed(widest))
    assert event.row()[2:] == tuple(widest[2:])
    assert sum(p4.EVENT_FIELD_BITS) == 296   # event_digest_t's one field


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


def test_a_digest_enabled_again_is_modified_never_deleted_first():
    switch = Switch()
    switch._p4info = digest_p4info()
    writes = []

    def write(updates):
        writes.append(updates)
        if len(writes) == 1:
            raise P4RuntimeError("ALREADY_EXISTS: Digest 7 already configured")

    switch.write = write
    switch.enable_digest("event_t")
    assert [kind for (kind, _), in writes] == [p4runtime_pb2.Update.INSERT,
                                               p4runtime_pb2.Update.MODIFY]


class DigestSwitch:
    """Hands out digest lists, and records what the recorder writes."""

    def __init__(self, lists, recorder):
        self.lists = list(lists)
        self.recorder = recorder
        self.synced = []
        self.digest_on = None

    def enable_digest(self, name):
        self.digest_on = name

    def sync_table(self, table, entries):
        self.synced.append((table, [e.match["dir"] for e in entries]))

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
    # Off by the table; the digest stays enabled (Switch.enable_digest says why).
    assert switch.synced == [(p4.TABLE_EVENT_LOG, [0, 1]), (p4.TABLE_EVENT_LOG, [])]
    assert switch.digest_on == "event_digest_t"


def test_experiments_can_reject_runs_that_fail_the_check():
    experiment = parse(experiment_data(event_log={"threshold": "5ms", "reject": True}))
    assert experiment.event_log.threshold_us == 5000 and experiment.event_log.reject
    assert parse(experiment_data()).event_log is None
    assert parse(experiment_data(event_log={})).event_log.threshold_us == 10_000
    assert problems(experiment_data(event_log={"threshold": "0ms", "rejected": 1})) == [
        "event_log.threshold: '0ms': must be longer than 0s",
        "event_log.rejected: 1: unknown field; allowed: reject, sample, threshold, within"]
    sampled = parse(experiment_data(event_log={"sample": 0.02, "within": 0.99})).event_log
    assert (sampled.sample, sampled.within) == (0.02, 0.99)
    assert problems(experiment_data(event_log={"sample": 0, "within": 1.5})) == [
        "event_log.sample: 0: out of range; allowed (0, 1]",
        "event_log.within: 1.5: out of range; allowed (0, 1]"]
    run = RunOnce.__new__(RunOnce)
    run.experiment = experiment
    failing = {"event_log": {"timing": check_timing(
        [event(1, actual=1000 + 6000)], 5000).as_dict()}}
    status = run._event_check(failing)
    assert status["status"] == "failed" and failing["status"] == "failed"
    assert ("1 of 1 packets released more than 5 ms late (worst 6.0 ms, p99 6.0 ms), 0 early: "
            "the switch did not keep up") in status["error"]
    passing = {"event_log": {"timing": check_timing([event(1)], 5000).as_dict()}}
    assert run._event_check(passing) is None and "status" not in passing


def synthetic_cell(count=200, start=1000.25, spacing=0.0004):
    """A loaded 10 Mbit/s, 20 ms cell seen by the log and by captures: the
    switch's clock starts at `start` on the capture clock, takes each frame
    in 20-80 us after its capture, and its log stamps each release 0.3 ms
    before the frame is captured leaving (1.3 ms for every tenth)."""
    from linkemu.drivers.fidelity import Frame
    from linkemu.model.profile import Direction
    link = Direction(rate_bps=10e6, delay_us=20_000, queue_packets=1000, overhead_bytes=0)
    arrivals = [Frame(1001.0 + i * spacing, i.to_bytes(4, "big"), 514) for i in range(count)]
    events, departures = [], []
    for i, frame in enumerate(arrivals):
        arrival_us = round((frame.ts - start) * 1e6) + 20 + (i * 7) % 61
        # 500 B (514 less the Ethernet header) take 400 us at 10 Mbit/s, so
        # each frame starts as it comes, the one before just gone; the byte
        # cost, 0.8 us rounded up in Q.20, ends it a fraction of a
        # microsecond after 400 us: due 401 us + 20 ms after it came. The
        # switch's model runs from its own arrival of the first frame, 20 us
        # later.
        due_us = round((frame.ts - start) * 1e6) + 401 + 20_000 + 20
        late = 0.001 + (i % 13) * 0.0002
        event_us = due_us + round(late * 1e6)
        gap = 0.0013 if i % 10 == 0 else 0.0003
        departures.append(Frame(start + event_us / 1e6 + gap, frame.data, frame.length))
        events.append(Event("downlink", "released", 5000 + i, 500, arrival_us,
                            arrival_us, due_us, event_us, 0, 0))
    return link, arrivals, departures, events


def test_events_pair_with_captured_arrivals_in_order_despite_extras_on_either_side():
    from linkemu.drivers.event_log import match_arrivals
    _, arrivals, _, events = synthetic_cell()
    # Another host's frame the captures leave out (IPv6 chatter: its own
    # length), and two frames the switch never took in.
    extra = Event("downlink", "released", 1, 90, events[50].arrival_us + 150, 0, 0, 0, 0, 0)
    dropped = {17, 120}
    logged = [e for i, e in enumerate(events) if i not in dropped] + [extra]
    pairs, offset = match_arrivals(logged, arrivals)
    assert len(pairs) == len(events) - len(dropped)
    assert all(e.seq - 5000 == int.from_bytes(f.data, "big") for e, f in pairs)
    assert abs(offset - (1000.25 - 20e-6)) < 2e-6   # the least lag, 20 us


def test_frames_taken_in_late_together_still_pair_in_order():
    from linkemu.drivers.event_log import match_arrivals
    _, arrivals, _, events = synthetic_cell(count=200)
    # The switch was busy: frames 20-119 were taken in at once, 40 ms
    # after frame 20 came, just after frame 119 came.
    late = events[119].arrival_us + 5
    events = [Event(**{**e.__dict__, "arrival_us": late + i}) if 20 <= i < 120 else e
              for i, e in enumerate(events)]
    pairs, _ = match_arrivals(events, arrivals)
    assert len(pairs) == 200
    assert all(e.seq - 5000 == int.from_bytes(f.data, "big") for e, f in pairs)


def test_the_log_is_compared_with_the_captures_frame_by_frame():
    from linkemu.drivers.event_log import against_captures
    link, arrivals, departures, events = synthetic_cell()
    departures.pop(33)   # captured coming in, never seen leaving
    events += [Event("uplink", "released", 1, 500, 1, 1, 1, 99_999_999, 0, 0)]
    check = against_captures(events, arrivals, departures, link)
    summary = check.summary()
    assert summary["events"] == 200 and summary["matched"] == 200
    assert summary["compared"] == 199
    [lost] = [f for f in check.frames if f.departure_s is None]
    assert (lost.event.seq, lost.arrival_s, lost.compared) == (5033, arrivals[33].ts, False)
    # The captures see what the log does plus the way out: 0.3 ms, 1.3 ms
    # for one frame in ten, and the 20 us by which the switch's dues are
    # later.
    assert abs(summary["difference_p50_ms"] - 0.32) < 0.002
    assert abs(summary["difference_p99_ms"] - 1.32) < 0.002
    assert abs(summary["abs_difference_p99_ms"] - 1.32) < 0.002
    assert abs(summary["log_p50_ms"] - 2.2) < 0.01 and summary["capture_p50_ms"] > 2.4
    assert summary["over_threshold"] == {"log": 0, "captures": 0, "both": 0}
    assert summary["consistent"]
    # Relative to the frame taken in soonest (20 us after its capture):
    # taken in 0-60 us later than that; the way out 0.3 ms and 20 us.
    assert 0 <= summary["taken_in_p50_ms"] < 0.061
    assert abs(summary["to_wire_p50_ms"] - 0.321) < 0.002
    # The switch's dues are 20 us later, the frame taken in soonest's lag,
    # which the earliest start counts as none.
    assert all(abs(summary[f"due_later_{p}_ms"]) < 0.002 for p in ("p1", "p50", "p99"))


def test_a_log_that_releases_after_the_frame_left_contradicts_the_captures():
    from linkemu.drivers.event_log import against_captures
    link, arrivals, departures, events = synthetic_cell(count=20)
    events[5] = Event(**{**events[5].__dict__, "event_us": events[5].event_us + 5000})
    summary = against_captures(events, arrivals, departures, link).summary()
    assert not summary["consistent"]


def test_overshoots_are_counted_by_each_side_and_by_both():
    from linkemu.drivers.event_log import against_captures
    link, arrivals, departures, events = synthetic_cell(count=50)
    # Frame 10 late by 15 ms in both, frame 20 only on its way out.
    events[10] = Event(**{**events[10].__dict__, "event_us": events[10].due_us + 15_000})
    departures[10] = Frame_at(departures[10], events[10].event_us, 1000.25 + 0.0003)
    departures[20] = Frame_at(departures[20], events[20].event_us, 1000.25 + 0.012)
    summary = against_captures(events, arrivals, departures, link).summary()
    assert summary["over_threshold"] == {"log": 1, "captures": 2, "both": 1}


def Frame_at(frame, event_us, then):
    from linkemu.drivers.fidelity import Frame
    return Frame(event_us / 1e6 + then, frame.data, frame.length)


def test_a_sample_skips_the_rest_of_the_packets():
    """The data plane logs a packet whose 16-bit draw is at least skip_q16."""
    (entry,) = event_log_entries(("uplink",), sample=0.25)
    assert entry.match == {"dir": 1, "rand": Range(49152, 0xffff)} and entry.params == {}
    assert event_log_entries(("downlink",))[0].match["rand"] == Range(0, 0xffff)
    assert skip_q16(1e-9) == 0xffff
