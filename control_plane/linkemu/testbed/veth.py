"""veth pairs for test beds, created and deleted by name, never by pattern,
and recorded (linkemu.testbed.leftovers) while they exist."""

import subprocess

from . import leftovers


def _run(*args):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {result.stderr.strip()}")


def host_interface_commands(name, mtu=None):
    """Commands that ready an interface for a path through BMv2: checksum and
    segmentation offload off (BMv2 forwards frames as captured, so offloaded
    checksums would arrive wrong) and the given MTU."""
    commands = [["ethtool", "-K", name, "rx", "off", "tx", "off", "sg", "off",
                 "tso", "off", "gso", "off", "gro", "off"]]
    if mtu is not None:
        commands.append(["ip", "link", "set", "dev", name, "mtu", str(mtu)])
    return commands


def quiet_interface(name, mtu=None):
    """Readies a switch-side interface: as a host's, and without the kernel's
    own IPv6 chatter, which would otherwise cross the emulated link. (IPv6
    first: an MTU under 1280 removes the interface's IPv6 settings.)"""
    _run("sysctl", "-q", "-w", f"net.ipv6.conf.{name}.disable_ipv6=1")
    for command in host_interface_commands(name, mtu):
        _run(*command)


class VethPair:
    """A veth pair in this namespace; `switch_end` goes to BMv2, `peer` to the test."""

    def __init__(self, switch_end, peer, mtu=None):
        self.switch_end = switch_end
        self.peer = peer
        self.mtu = mtu
        self.created = False

    def create(self):
        _run("ip", "link", "add", self.switch_end, "type", "veth", "peer", "name", self.peer)
        self.created = True
        leftovers.note_interface(self.switch_end)
        for name in (self.switch_end, self.peer):
            quiet_interface(name, self.mtu)
            _run("ip", "link", "set", "dev", name, "up")

    def delete(self):
        if self.created:
            # Deleting one end removes the pair.
            subprocess.run(["ip", "link", "del", self.switch_end], capture_output=True)
            leftovers.forget("interfaces", name=self.switch_end)
            self.created = False
