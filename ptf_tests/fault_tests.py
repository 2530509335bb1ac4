"""PTF tests of NetEm's packet faults: reorder (sent ahead), duplicate,
corrupt. Each fault's count stays inside the binomial interval of its
probability (99.99 %), agrees with its counter, and has the effect it names
on the frames themselves."""

from collections import Counter

from linkemu_base import FIXED_PORT, MOBILE_PORTS, LinkemuTest, frame_seq, udp_frame
from variation_tests import one_way_delays_us
from wireless_tests import binomial_bounds

MOBILE = MOBILE_PORTS[0]
COUNT = 500
L4_WORD = range(38, 42)   # UDP length and checksum: Ethernet 14 + IPv4 20 + ports 4


class FaultTest(LinkemuTest):
    def run_faults(self, downlink, wait):
        self.push({"downlink": downlink})
        before = self.counters()
        sent, received = self.timed(
            FIXED_PORT, MOBILE, lambda: self.send_spaced(FIXED_PORT, MOBILE, COUNT, 0.001), wait)
        self.assertEqual(len(sent), COUNT)
        self.wait_until_idle(before, "downlink", timeout=5)
        return sent, received, before

    def assert_binomial(self, observed, p, what):
        low, high = binomial_bounds(COUNT, p)
        self.assertTrue(low <= observed <= high,
                        f"{what}: {observed} of {COUNT}, expected [{low:.0f}, {high:.0f}]")


class ReorderTest(FaultTest):
    """A frame sent ahead skips the 20 ms delay and the in-order wait: it
    arrives within a few ms and overtakes the frames sent before it."""

    def runTest(self):
        p = 0.2
        sent, received, before = self.run_faults({"delay": "20ms", "reorder": p}, wait=0.5)
        self.assertEqual(len(received), COUNT)
        delays = one_way_delays_us(sent, received)
        # No other frame leaves before its 20 ms (a busy host may make one
        # sent ahead late by ms, never early).
        ahead = {seq for seq, d in delays.items() if d < 20_000}
        self.assertLess(sorted(delays[seq] for seq in ahead)[len(ahead) // 2], 5_000)
        self.assertEqual(len(ahead), self.counter_delta(before, "sent_ahead", "downlink"))
        self.assert_binomial(len(ahead), p, "sent ahead")
        order = list(delays)
        overtook = [seq for i, seq in enumerate(order)
                    if seq in ahead and any(later < seq for later in order[i + 1:])]
        self.assertGreater(len(overtook), 0.9 * len(ahead), "frames sent ahead did not overtake")
        in_line = [seq for seq in order if seq not in ahead]
        self.assertEqual(in_line, sorted(in_line), "the other frames left their order")


class DuplicateTest(FaultTest):
    """A duplicated frame arrives twice; the others once; none is lost."""

    def runTest(self):
        p = 0.3
        sent, received, before = self.run_faults({"delay": "5ms", "duplicate": p}, wait=0.5)
        copies = Counter(frame_seq(f.data) for f in received)
        self.assertEqual(set(copies), set(range(COUNT)), "a frame was lost")
        self.assertLessEqual(max(copies.values()), 2)
        twice = sum(1 for n in copies.values() if n == 2)
        self.assertEqual(twice, self.counter_delta(before, "duplicated", "downlink"))
        self.assertEqual(len(received), COUNT + twice)
        self.assert_binomial(twice, p, "duplicated")


class CorruptTest(FaultTest):
    """A corrupted frame differs from the one sent in exactly one bit, of the
    four bytes after the UDP ports."""

    def runTest(self):
        p = 0.3
        sent, received, before = self.run_faults({"corrupt": p}, wait=0.5)
        self.assertEqual(len(received), COUNT)
        # The sequence number sits in the payload, past the flipped bytes.
        original = {seq: bytes(udp_frame(FIXED_PORT, MOBILE, seq)) for seq in range(COUNT)}
        corrupted = 0
        for frame in received:
            data = bytes(frame.data)
            diff = [(i, a ^ b) for i, (a, b) in enumerate(zip(data, original[frame_seq(data)]))
                    if a != b]
            if diff:
                corrupted += 1
                (index, flipped), = diff
                self.assertIn(index, L4_WORD)
                self.assertEqual(bin(flipped).count("1"), 1, diff)
        self.assertEqual(corrupted, self.counter_delta(before, "corrupted", "downlink"))
        self.assert_binomial(corrupted, p, "corrupted")
