"""Network slots: what a network shows the machine (its switch's names,
ports, core and lock) is its slot's alone."""

import os

import pytest

from linkemu.testbed import network_lock, slots
from linkemu.testbed.slots import MAX_SLOTS, NetworkSlot, shared_cores_warning


@pytest.fixture
def cores(monkeypatch):
    """Gives this process the cores `set_cores(n)` says: 0 to n-1."""
    def set_cores(count):
        monkeypatch.setattr(slots.os, "sched_getaffinity", lambda pid: set(range(count)))
    return set_cores


def test_slot_0_has_the_names_one_network_always_had():
    slot = NetworkSlot()
    assert (slot.switch_name, slot.interface(1), slot.grpc_port) == ("s1", "s1-eth1", 9559)
    assert network_lock.lock_path(0) == network_lock.LOCK_DIR / "linkemu-network.lock"


def test_no_two_slots_share_a_name_a_port_or_a_lock():
    every = [NetworkSlot(k, MAX_SLOTS) for k in range(MAX_SLOTS)]
    interfaces = [slot.interface(port) for slot in every for port in range(1, 255)]
    assert len(set(interfaces)) == len(interfaces)
    assert max(map(len, interfaces)) <= 15   # IFNAMSIZ less its NUL
    assert len({slot.switch_name for slot in every}) == MAX_SLOTS
    ports = [port for slot in every for port in (slot.grpc_port, slot.thrift_port)]
    assert len(set(ports)) == len(ports)
    assert len({network_lock.lock_path(slot.number) for slot in every}) == MAX_SLOTS
    assert NetworkSlot(3, 4).interface(2) == "n3s1-eth2"


@pytest.mark.parametrize("number, count", [(-1, 1), (1, 1), (0, MAX_SLOTS + 1)])
def test_a_slot_outside_the_slots_is_refused(number, count):
    with pytest.raises(ValueError, match="slots are numbered from 0"):
        NetworkSlot(number, count)


def test_each_switch_has_a_core_of_its_own_while_the_machine_has_one_for_each(cores):
    cores(4)
    pair = [NetworkSlot(k, 2) for k in range(2)]
    assert [slot.switch_core() for slot in pair] == [3, 2]
    assert [slot.host_cores() for slot in pair] == [{0, 1}, {0, 1}]   # off both switches
    cores(2)
    assert [slot.switch_core() for slot in pair] == [1, 0]
    # No core without a switch: each network's hosts stay off their own switch's.
    assert [slot.host_cores() for slot in pair] == [{0}, {1}]
    assert NetworkSlot().host_cores() == {0}   # one network: as it always was
    assert [NetworkSlot(k, 3).switch_core() for k in range(3)] == [1, 0, 1]   # round again
    cores(1)
    assert (NetworkSlot().switch_core(), NetworkSlot().host_cores()) == (0, {0})


def test_more_networks_than_cores_are_warned_of(cores):
    cores(2)
    assert shared_cores_warning(1) is None and shared_cores_warning(2) is None
    assert "3 networks side by side, and this machine gives them 2 cores" in \
        shared_cores_warning(3)


def test_each_slot_has_its_own_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(network_lock, "LOCK_DIR", tmp_path)
    with network_lock.only_network(0), network_lock.only_network(1):
        assert network_lock.lock_path(1).read_text() == f"pid {os.getpid()}\n"
        with pytest.raises(RuntimeError, match="slot 1 is already up"):
            with network_lock.only_network(1):
                pass
