"""PTF test of bad frames: thousands of malformed, truncated, tagged,
oversized and random frames mixed with good traffic, through a link with
RED, a priority class and ARQ (error-free, so that every frame's due instant
is known), with the event log on. The switch keeps going, every frame is
accounted for by the counters and the log, and every frame, good or bad,
leaves when the link model says.

A frame shorter than an Ethernet header cannot be sent: the kernel refuses
it on a veth. Every other frame is a frame to the link, which carries what
it is given: one that is not IPv4 or IPv6, or whose IP header is cut short
or has options, is best effort and costs its length, as the parser
(p4src/v1model/include/parser.p4) and the model (fidelity.frame_fields) agree."""

import random
import time

import ptf
from scapy.layers.inet import IP, UDP, IPOption
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether

from linkemu.drivers.event_log import EventRecorder, read_events
from linkemu.drivers.fidelity import frame_class
from linkemu.drivers.state_driver import running
from linkemu.testbed.capture import Capture
from linkemu_base import (ETH_HEADER, FIXED_PORT, HOST_IPS, HOST_MACS, MOBILE_PORTS,
                          LinkemuTest, frame_seq, profile, udp_frame)

MOBILE = MOBILE_PORTS[0]
PRIORITY_PORT = 5000
GOOD = 300
BAD_PER_GOOD = 10
SPACING_S = 0.03    # 11 frames at a time, 370 a second
LINK = {"rate": "10Mbit", "delay": "20ms", "queue": 200,
        "red": {"min": 150, "max": 190, "max_p": 0.1, "weight": 0.002},
        "priority": {"match": [{"protocol": "udp", "dst_port": PRIORITY_PORT}], "queue": 50},
        "arq": {"delay": "100ms", "max_retransmissions": 2}}


def bad_frame(kind, n, rng):
    """Frame number `n` of a kind; its source MAC carries `n`, so that no two
    frames are alike (the comparison pairs frames by content)."""
    eth = Ether(src=f"02:00:00:{n >> 16 & 0xff:02x}:{n >> 8 & 0xff:02x}:{n & 0xff:02x}",
                dst=HOST_MACS[MOBILE])
    ip = IP(src=HOST_IPS[FIXED_PORT], dst=HOST_IPS[MOBILE])
    udp = UDP(sport=40001, dport=PRIORITY_PORT)
    body = b"\x00" * 40
    if kind == "Ethernet header only":
        return bytes(eth / b"")[:12] + b"\x08\x00"
    if kind == "IPv4 header cut short":
        return bytes(eth / ip / udp / body)[:14 + 12]
    if kind == "IPv6 header cut short":
        return bytes(eth / IPv6(src="fd00::1", dst="fd00::2") / udp / body)[:14 + 30]
    if kind == "UDP header cut short":
        return bytes(eth / ip / udp)[:14 + 20 + 3]
    if kind == "IHL below 5":
        raw = bytearray(bytes(eth / ip / udp / body))
        raw[14] = 0x43   # 12 bytes of IP header
        return bytes(raw)
    if kind == "IHL beyond the frame":
        raw = bytearray(bytes(eth / ip / udp))
        raw[14] = 0x4f   # 60 bytes of IP header, 28 in the frame
        return bytes(raw)
    if kind == "total length over the frame":
        return bytes(eth / IP(len=1400, src=ip.src, dst=ip.dst) / udp / body)
    if kind == "total length under the frame":
        return bytes(eth / IP(len=20, src=ip.src, dst=ip.dst) / udp / body)
    if kind == "IP options":
        return bytes(eth / IP(src=ip.src, dst=ip.dst, options=[IPOption(b"\x01\x01\x01\x01")])
                     / udp / body)
    if kind == "fragment":
        return bytes(eth / IP(src=ip.src, dst=ip.dst, flags="MF", frag=n % 3 * 100) / udp / body)
    if kind == "VLAN tag":
        return bytes(eth / Dot1Q(vlan=5) / ip / udp / body)
    if kind == "QinQ tags":
        return bytes(Ether(src=eth.src, dst=eth.dst, type=0x88a8) / Dot1Q(vlan=7) /
                     Dot1Q(vlan=5) / ip / udp / body)
    if kind == "over the profile's MTU":
        # Best effort: see docs/fidelity.md on a priority frame met late.
        return bytes(eth / ip / UDP(sport=40001, dport=9) / (b"\x00" * (1514 - 42)))
    if kind == "unknown EtherType":
        return bytes(Ether(src=eth.src, dst=eth.dst, type=0x88b6) / body)
    if kind == "random bytes":
        return bytes(eth)[:12] + rng.randbytes(rng.randrange(2, 200))
    raise ValueError(kind)


KINDS = ("Ethernet header only", "IPv4 header cut short", "IPv6 header cut short",
         "UDP header cut short", "IHL below 5", "IHL beyond the frame",
         "total length over the frame", "total length under the frame", "IP options",
         "fragment", "VLAN tag", "QinQ tags", "over the profile's MTU", "unknown EtherType",
         "random bytes")


class MalformedFramesTest(LinkemuTest):
    def runTest(self):
        rng = random.Random(33)
        frames = []
        for i in range(GOOD):
            port = PRIORITY_PORT if i % 3 == 0 else 9
            frames.append(bytes(udp_frame(FIXED_PORT, MOBILE, i, 200, port)))
            for j in range(BAD_PER_GOOD):
                n = i * BAD_PER_GOOD + j
                frames.append(bad_frame(KINDS[n % len(KINDS)], n, rng))
        self.push({"downlink": LINK, "mtu": 576})
        before = self.counters()
        captures = [Capture(ptf.config["port_map"][(0, port)], direction,
                            self.workdir / f"{port}-{direction}.pcap")
                    for port, direction in ((FIXED_PORT, "out"), (MOBILE, "in"))]
        for capture in captures:
            capture.start()
        log = self.workdir / "events.csv"
        recorder = EventRecorder(self.switch, log)
        try:
            with running(recorder):
                start = time.time()
                for i in range(GOOD):
                    pause = start + i * SPACING_S - time.time()
                    if pause > 0:
                        time.sleep(pause)
                    for frame in frames[i * (BAD_PER_GOOD + 1):(i + 1) * (BAD_PER_GOOD + 1)]:
                        self.send(FIXED_PORT, frame)
                self.wait_until_idle(before, "downlink", timeout=10)
                time.sleep(0.3)
        finally:
            for capture in captures:
                capture.stop()
        self.assertIsNone(recorder.error)
        # Only the test's frames (a capture keeps the first 128 bytes).
        ours = {(frame[:128], len(frame)) for frame in frames}
        sent, received = ([f for f in c.frames() if (f.data, f.length) in ours]
                          for c in captures)

        # Every frame sent went into the link (none is too malformed for it)
        # and left it, or was dropped by a cause the counters name.
        self.assertEqual(len(sent), len(frames), "the capture missed frames sent")
        counted_in = self.counter_delta(before, "link_in", "downlink")
        malformed = self.counter_delta(before, "drop_malformed", "downlink")
        self.assertEqual(counted_in + malformed, len(frames))
        drops = sum(self.counter_delta(before, cause, "downlink")
                    for cause in ("drop_queue", "drop_aqm", "drop_link_error",
                                  "drop_loss_model"))
        self.assertEqual(self.counter_delta(before, "link_out", "downlink") + drops, counted_in)
        events = [e for e in read_events(log) if e.direction == "downlink"]
        self.assertEqual(len(events), counted_in, "the event log missed frames")

        # Good and bad alike leave when the link model says, none early but
        # as a priority class can be (docs/fidelity.md): BMv2 takes a burst
        # in later than it reached the port, and serves the classes in the
        # order it took them in. A priority frame may then pass the
        # best-effort frame the model had on the link when it came, and a
        # best-effort frame the priority frames taken in after it: those of
        # two bursts at most, as a late sender runs two together.
        downlink = profile(downlink=LINK, mtu=576).downlink

        def link_s(frame):
            return (len(frame) - ETH_HEADER + downlink.overhead_bytes) * 8 / downlink.rate_bps
        burst = BAD_PER_GOOD + 1
        priority_s = [sum(link_s(f) for f in frames[i:i + burst]
                          if frame_class(downlink, f) == "priority")
                      for i in range(0, len(frames), burst)]
        early_s = {"priority": max(link_s(f) for f in frames
                                   if frame_class(downlink, f) == "best_effort"),
                   "best_effort": max(map(sum, zip(priority_s, priority_s[1:])))}
        fidelity = self.assert_on_time(sent, received, downlink, early_s=early_s)
        self.assertGreater(len(fidelity.errors), 0.9 * len(frames))

        # And the switch still forwards as before.
        self.push({"downlink": {"delay": "10ms"}})
        self.dataplane.flush()
        sent_at = self.send(FIXED_PORT, bytes(udp_frame(FIXED_PORT, MOBILE, 99999)))
        [(arrived, frame)] = self.receive(MOBILE, 1, timeout=2)
        self.assertEqual(frame_seq(frame), 99999)
        self.assertGreaterEqual(arrived - sent_at, 0.010)
