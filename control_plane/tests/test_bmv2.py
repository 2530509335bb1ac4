"""What linkemu learns of the installed simple_switch_grpc, and how it starts it."""

import os
import select
import threading
import time

from linkemu.program import constants as p4
from linkemu.testbed import bmv2


def test_timed_departure_is_found_by_its_option_in_the_binary(tmp_path):
    patched, stock = tmp_path / "patched", tmp_path / "stock"
    patched.write_bytes(b"\0ELF...departure-time-field\0<header>.<field>\0")
    stock.write_bytes(b"\0ELF...--priority-queues\0")
    assert bmv2.has_timed_departure(str(patched))
    assert not bmv2.has_timed_departure(str(stock))
    assert not bmv2.has_timed_departure(str(tmp_path / "missing"))


def test_a_timed_switch_is_started_with_the_programs_departure_field(monkeypatch):
    monkeypatch.setattr(bmv2, "installed_timed_departure", lambda: True)
    switch = bmv2.SimpleSwitchGrpc({1: "veth1"}, grpc_port=50001, thrift_port=50002)
    command = switch.command()
    assert command[command.index("--departure-time-field") + 1] == \
        "scalars.metadata_t.depart_us"
    assert switch.hold_capacity == bmv2.TIMED_HOLD_CAPACITY
    # The hold ports' queues are deep enough for their share of it.
    assert len(bmv2.HOLD_QUEUES) == 32
    assert bmv2.TIMED_HOLD_CAPACITY / (p4.HOLD_PORT_MASK + 1) < bmv2.HOLD_QUEUE_DEPTH
    # A router queue's ring has a slot for every packet the hold takes.
    assert bmv2.TIMED_HOLD_CAPACITY < 1 << p4.QUEUE_RING_BITS


def test_a_stock_switch_holds_the_programs_capacity(monkeypatch):
    monkeypatch.setattr(bmv2, "installed_timed_departure", lambda: False)
    switch = bmv2.SimpleSwitchGrpc({1: "veth1"}, grpc_port=50001, thrift_port=50002)
    assert "--departure-time-field" not in switch.command()
    assert switch.hold_capacity == p4.HOLD_CAPACITY == 960


def waiting_in_select(reader):
    thread = threading.Thread(target=select.select, args=([reader], [], []))
    thread.start()
    return thread


def test_the_capture_thread_is_the_one_waiting_in_select():
    # This process: its main thread runs the test, one more waits in select(2).
    reader, writer = os.pipe()
    threads = [waiting_in_select(reader)]
    try:
        deadline = time.monotonic() + 5
        while bmv2.find_capture_thread(os.getpid()) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert bmv2.find_capture_thread(os.getpid()) == threads[0].native_id
        # Two such threads: which one takes frames in is not known.
        threads.append(waiting_in_select(reader))
        time.sleep(0.1)
        assert bmv2.find_capture_thread(os.getpid()) is None
    finally:
        os.write(writer, b"x")   # readable: every select returns
        for thread in threads:
            thread.join()
        os.close(reader)
        os.close(writer)
