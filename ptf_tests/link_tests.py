"""PTF tests of the emulated link: forwarding, rate, delay, queue, live push."""

import statistics
import time

from ptf import testutils
from scapy.layers.l2 import ARP, Ether

from linkemu_base import (ETH_HEADER, FIXED_PORT, HOST_IPS, HOST_MACS, MOBILE_PORTS,
                          LinkemuTest, frame_seq, udp_frame)

MOBILE = MOBILE_PORTS[0]
# Arrival times are taken by PTF's receive thread with time.time(); on this
# kind of machine they are good to a few hundred microseconds.
SPACING_TOLERANCE_S = 0.001
DELAY_TOLERANCE_S = 0.005


def serialization_s(frame_len, rate_bps):
    return (frame_len - ETH_HEADER) * 8 / rate_bps


class BothDirectionsForwardTest(LinkemuTest):
    """An ideal wire delivers frames unchanged to the right far-side port."""

    def runTest(self):
        down = udp_frame(FIXED_PORT, MOBILE, seq=1)
        self.send(FIXED_PORT, down)
        testutils.verify_packet(self, down, MOBILE, timeout=2)
        testutils.verify_no_other_packets(self, timeout=0.5)

        up = udp_frame(MOBILE_PORTS[1], FIXED_PORT, seq=2)
        self.send(MOBILE_PORTS[1], up)
        testutils.verify_packet(self, up, FIXED_PORT, timeout=2)
        testutils.verify_no_other_packets(self, timeout=0.5)


class ArpCrossesTest(LinkemuTest):
    """Broadcasts reach every host of the far side, and only the far side."""

    def runTest(self):
        request = (Ether(src=HOST_MACS[FIXED_PORT], dst="ff:ff:ff:ff:ff:ff") /
                   ARP(op="who-has", hwsrc=HOST_MACS[FIXED_PORT], psrc=HOST_IPS[FIXED_PORT],
                       pdst=HOST_IPS[MOBILE]))
        self.send(FIXED_PORT, request)
        testutils.verify_packets(self, request, list(MOBILE_PORTS), timeout=2)
        testutils.verify_no_other_packets(self, timeout=0.5)

        reply = (Ether(src=HOST_MACS[MOBILE], dst=HOST_MACS[FIXED_PORT]) /
                 ARP(op="is-at", hwsrc=HOST_MACS[MOBILE], psrc=HOST_IPS[MOBILE],
                     hwdst=HOST_MACS[FIXED_PORT], pdst=HOST_IPS[FIXED_PORT]))
        self.send(MOBILE, reply)
        testutils.verify_packet(self, reply, FIXED_PORT, timeout=2)

        broadcast = request.copy()
        broadcast[Ether].src = HOST_MACS[MOBILE]
        self.send(MOBILE, broadcast)
        testutils.verify_packet(self, broadcast, FIXED_PORT, timeout=2)
        testutils.verify_no_other_packets(self, timeout=0.5)


class BurstSpacingTest(LinkemuTest):
    """A burst leaves the link spaced by length x 8 / rate, in order, in each
    direction."""

    def check_burst(self, src, dst, rate_bps, frame_len, count):
        for seq in range(count):
            self.send(src, udp_frame(src, dst, seq, frame_len))
        expected = serialization_s(frame_len, rate_bps)
        received = self.receive(dst, count, timeout=count * expected + 3)
        self.assertEqual([frame_seq(f) for _, f in received], list(range(count)))
        gaps = [b[0] - a[0] for a, b in zip(received, received[1:])]
        self.assertAlmostEqual(statistics.mean(gaps), expected, delta=expected * 0.01)
        for gap in gaps:
            self.assertAlmostEqual(gap, expected, delta=SPACING_TOLERANCE_S)

    def runTest(self):
        self.push({"downlink": {"rate": "1Mbit", "queue": 100},
                   "uplink": {"rate": "2Mbit", "queue": 100}})
        self.check_burst(FIXED_PORT, MOBILE, 1e6, 1000, 30)
        self.check_burst(MOBILE, FIXED_PORT, 2e6, 500, 30)


class DelayTest(LinkemuTest):
    """Every frame arrives no earlier than serialization plus propagation
    delay, and at most DELAY_TOLERANCE_S later."""

    def check_delays(self, src, dst, rate_bps, delay_s, count, interval_s, frame_len=200):
        expected = delay_s + serialization_s(frame_len, rate_bps)
        sent = []
        for seq in range(count):
            sent.append(self.send(src, udp_frame(src, dst, seq, frame_len)))
            time.sleep(interval_s)
        received = self.receive(dst, count, timeout=expected + 3)
        self.assertEqual([frame_seq(f) for _, f in received], list(range(count)))
        for (arrived, _), departed in zip(received, sent):
            delay = arrived - departed
            self.assertGreaterEqual(delay, expected)
            self.assertLessEqual(delay, expected + DELAY_TOLERANCE_S)

    def runTest(self):
        self.push({"downlink": {"rate": "10Mbit", "delay": "100ms"},
                   "uplink": {"rate": "64kbit", "delay": "300ms"}})
        self.check_delays(FIXED_PORT, MOBILE, 10e6, 0.1, count=30, interval_s=0.01)
        self.check_delays(MOBILE, FIXED_PORT, 64e3, 0.3, count=10, interval_s=0.05)


class LongHoldTest(LinkemuTest):
    """Holds of 5 s, as the studies' links with ARQ need, keep their accuracy."""

    def runTest(self):
        self.push({"downlink": {"delay": "5s"}})
        sent = [self.send(FIXED_PORT, udp_frame(FIXED_PORT, MOBILE, seq)) for seq in range(5)]
        received = self.receive(MOBILE, 5, timeout=8)
        self.assertEqual([frame_seq(f) for _, f in received], list(range(5)))
        for (arrived, _), departed in zip(received, sent):
            self.assertGreaterEqual(arrived - departed, 5.0)
            self.assertLessEqual(arrived - departed, 5.0 + DELAY_TOLERANCE_S)


class QueueTailDropTest(LinkemuTest):
    """A burst larger than one frame on the link plus a full router queue
    loses exactly the excess, counted as queue drops."""

    def check_tail_drop(self, src, dst, direction, queue, burst, frame_len=500):
        before = self.counters()
        for seq in range(burst):
            self.send(src, udp_frame(src, dst, seq, frame_len))
        kept = queue + 1  # one frame on the link, `queue` frames waiting
        duration = kept * serialization_s(frame_len, 64e3)
        received = self.receive(dst, burst, timeout=duration + 3)
        self.assertEqual([frame_seq(f) for _, f in received], list(range(kept)))
        self.assert_quiet(1.0)
        after = self.counters()
        drops = after["drop_queue"][direction][0] - before["drop_queue"][direction][0]
        self.assertEqual(drops, burst - kept)
        delivered = after["link_out"][direction][0] - before["link_out"][direction][0]
        self.assertEqual(delivered, kept)

    def runTest(self):
        self.push({"downlink": {"rate": "64kbit", "queue": 20},
                   "uplink": {"rate": "64kbit", "queue": 1}})
        self.check_tail_drop(FIXED_PORT, MOBILE, "downlink", queue=20, burst=30)
        self.check_tail_drop(MOBILE, FIXED_PORT, "uplink", queue=1, burst=5)


class LivePushTest(LinkemuTest):
    """`linkemu push` changes the rate of a running link."""

    def mean_gap(self, count=15, frame_len=1000):
        for seq in range(count):
            self.send(FIXED_PORT, udp_frame(FIXED_PORT, MOBILE, seq, frame_len))
        received = self.receive(MOBILE, count, timeout=5)
        self.assertEqual(len(received), count)
        return statistics.mean(b[0] - a[0] for a, b in zip(received, received[1:]))

    def runTest(self):
        self.push({"downlink": {"rate": "1Mbit"}})
        slow = self.mean_gap()
        self.assertAlmostEqual(slow, serialization_s(1000, 1e6), delta=slow * 0.02)
        self.push({"downlink": {"rate": "4Mbit"}})
        fast = self.mean_gap()
        self.assertAlmostEqual(fast, serialization_s(1000, 4e6), delta=fast * 0.05)


class CountersTest(LinkemuTest):
    """Packets and bytes in and out are counted per direction."""

    def runTest(self):
        before = self.counters()
        for seq in range(7):
            self.send(FIXED_PORT, udp_frame(FIXED_PORT, MOBILE, seq, 300))
        for seq in range(3):
            self.send(MOBILE, udp_frame(MOBILE, FIXED_PORT, seq, 200))
        self.assertEqual(len(self.receive(MOBILE, 7, timeout=2)), 7)
        self.assertEqual(len(self.receive(FIXED_PORT, 3, timeout=2)), 3)
        after = self.counters()

        def delta(name, direction):
            return tuple(a - b for a, b in zip(after[name][direction], before[name][direction]))

        self.assertEqual(delta("link_in", "downlink"), (7, 7 * 300))
        self.assertEqual(delta("link_out", "downlink"), (7, 7 * 300))
        self.assertEqual(delta("link_in", "uplink"), (3, 3 * 200))
        self.assertEqual(delta("link_out", "uplink"), (3, 3 * 200))
        self.assertEqual(delta("drop_queue", "downlink"), (0, 0))
