"""The switch's capture thread, which takes frames in from the ports, runs
at a real-time priority once a program is set (testbed/bmv2.py)."""

import os
import time

from conftest import BUILD, compiled, environment, switch_as_root
from linkemu.switch.p4runtime import Switch
from linkemu.testbed.bmv2 import CAPTURE_PRIORITY
from linkemu.testbed.veth_switch import veth_switch

FORWARD = (BUILD / "forward.p4info.txtpb", BUILD / "forward.json")


def switch_and_program():
    return switch_as_root()() or compiled(*FORWARD)()


pytestmark = environment(switch_and_program)


def test_the_capture_thread_is_raised_once_a_program_is_set():
    with veth_switch([1, 2]) as (switch, _):
        time.sleep(0.3)
        assert switch.capture_thread is None   # no program: BMv2 takes nothing in
        with Switch(switch.grpc_address) as controller:
            controller.set_pipeline(*FORWARD)
        deadline = time.monotonic() + 5
        while switch.capture_thread is None and time.monotonic() < deadline:
            time.sleep(0.05)
        thread = switch.capture_thread
        assert thread is not None
        assert str(thread) in os.listdir(f"/proc/{switch.pid}/task")
        assert os.sched_getscheduler(thread) == os.SCHED_FIFO
        assert os.sched_getparam(thread).sched_priority == CAPTURE_PRIORITY
        # Its other threads keep the normal policy.
        others = [int(t) for t in os.listdir(f"/proc/{switch.pid}/task") if int(t) != thread]
        assert all(os.sched_getscheduler(t) == os.SCHED_OTHER for t in others)
