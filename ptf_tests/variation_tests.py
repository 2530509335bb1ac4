"""PTF tests of delay variation: jitter drawn from its distribution, order kept
unless the profile lets jitter reorder, random delay spikes.

One-way delays come from kernel timestamps of captures on the test's own
interfaces; BMv2's own latency, measured through the ideal wire first, is
taken off before a distribution is compared. Random draws are the data plane's (not seedable),
so counts are checked against binomial bounds at 99.99 % and distributions
with a Kolmogorov-Smirnov test at the 0.1 % level."""

import numpy as np
from scipy import stats

from linkemu.jitter import delay_table
from linkemu_base import FIXED_PORT, MAX_LATE_S, MOBILE_PORTS, LinkemuTest, frame_seq, profile
from wireless_tests import binomial_bounds

MOBILE = MOBILE_PORTS[0]


def one_way_delays_us(sent, received):
    """{seq: delay µs} of every delivered frame, in the order received."""
    sent_at = {frame_seq(f.data): f.ts for f in sent}
    return {frame_seq(f.data): (f.ts - sent_at[frame_seq(f.data)]) * 1e6 for f in received}


class JitterTest(LinkemuTest):
    def base_latency_us(self):
        """BMv2's own median one-way latency (the ideal wire of setUp)."""
        delays = self.measure(None, 100, 0.002, wait=0.3)
        return float(np.median(list(delays.values())))

    def measure(self, downlink, count, interval, wait):
        if downlink:
            self.push({"downlink": downlink})
        sent, received = self.timed(
            FIXED_PORT, MOBILE,
            lambda: self.send_spaced(FIXED_PORT, MOBILE, count, interval), wait)
        self.assertEqual(len(received), count, "a frame was lost")
        return one_way_delays_us(sent, received)


class JitterDistributionTest(JitterTest):
    """With reordering allowed, frames are independent: their delays follow
    the configured distribution (KS test against the table the data plane
    draws from), and frames do overtake each other."""

    def runTest(self):
        base = self.base_latency_us()
        for jitter in ({"distribution": "uniform", "jitter": "10ms"},
                       {"distribution": "pareto", "jitter": "10ms"}):
            downlink = {"delay": "30ms", "jitter": {**jitter, "reorder": True}}
            delays = self.measure(downlink, 400, 0.002, wait=1.0)
            table = delay_table(profile(downlink=downlink).downlink.jitter, 30_000)
            measured = [d - base for d in delays.values()]
            test = stats.ks_2samp(measured, table)
            print(f"{jitter['distribution']}: KS D {test.statistic:.3f} p {test.pvalue:.3f}")
            self.assertGreater(test.pvalue, 0.001, (jitter, sorted(measured)))
            if jitter["distribution"] == "uniform":   # pareto's sample spread is erratic
                self.assertLess(abs(np.std(measured) - np.std(table)), 0.1 * np.std(table))
            order = list(delays)
            self.assertNotEqual(order, sorted(order), "no frame was reordered")
            self.drain()


class JitterKeepsOrderTest(JitterTest):
    """Without reorder, a frame that drew a short delay waits for the one
    ahead of it: frames arrive in the order sent, none before its own
    shortest possible delay, and the delays still vary."""

    def runTest(self):
        downlink = {"delay": "30ms", "jitter": {"distribution": "uniform", "jitter": "10ms"}}
        delays = self.measure(downlink, 300, 0.001, wait=1.0)
        self.assertEqual(list(delays), sorted(delays), "frames were reordered")
        measured = np.array(list(delays.values()))
        self.assertGreaterEqual(measured.min(), 20_000)
        self.assertLess(measured.max(), 40_000 + MAX_LATE_S * 1e6)
        # Each frame leaves at the later of its own due instant and its
        # predecessor's release, which bunches delays toward the top.
        self.assertGreater(np.ptp(measured), 8_000, "the delays did not vary")


class DelaySpikesTest(JitterTest):
    """A spike adds its length to a frame's delay with its probability: the
    number of spiked frames stays inside the binomial interval and the
    typical spiked frame is late by the spike's length. Frames are spaced
    wider than a spike, so no frame waits behind a spiked one."""

    def runTest(self):
        count, p = 300, 0.2
        downlink = {"delay": "10ms", "delay_spikes": {"probability": p, "length": "20ms"}}
        delays = np.array(list(self.measure(downlink, count, 0.025, wait=1.0).values()))
        # No frame leaves before its due instant, so a spiked frame is one
        # that took 30 ms or more; the host's own lateness (rarely 10 ms on a
        # busy machine) is measured by the medians, not by any single frame.
        self.assertGreaterEqual(delays.min(), 10_000)
        spiked = delays >= 30_000
        added = np.median(delays[spiked]) - np.median(delays[~spiked])
        self.assertAlmostEqual(added, 20_000, delta=2_000, msg="a spike's length")
        low, high = binomial_bounds(count, p)
        self.assertTrue(low <= spiked.sum() <= high,
                        f"{spiked.sum()} of {count} spiked, expected [{low:.0f}, {high:.0f}]")
