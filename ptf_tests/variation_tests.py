"""PTF tests of delay variation: jitter drawn from its distribution, order kept
unless the profile lets jitter reorder, random delay spikes.

One-way delays come from kernel timestamps of captures on the test's own
interfaces, so they include BMv2's own latency and the host's: a measured
distribution, less that latency (measured just before and after through the
same link without jitter), is compared with the configured one. Random draws
are the data plane's (not seedable), so counts are checked against binomial
bounds at 99.99 % and distributions by their deciles (JitterDistributionTest)."""

import numpy as np

from linkemu.model.jitter import delay_table
from linkemu_base import (FIXED_PORT, MAX_LATE_S, MOBILE_PORTS, P90_LATE_S, LinkemuTest, frame_seq,
                          profile)
from wireless_tests import binomial_bounds

MOBILE = MOBILE_PORTS[0]


def one_way_delays_us(sent, received):
    """{seq: delay µs} of every delivered frame, in the order received."""
    sent_at = {frame_seq(f.data): f.ts for f in sent}
    return {frame_seq(f.data): (f.ts - sent_at[frame_seq(f.data)]) * 1e6 for f in received}


class JitterTest(LinkemuTest):
    def lateness_us(self, delay_us):
        """How much later than `delay_us` frames come through a link of that
        fixed delay, as many held as in a jitter run: BMv2's latency, the
        hold loop's and the host's."""
        delays = self.measure({"delay": f"{delay_us}us"}, 200, 0.002, wait=0.5)
        return [d - delay_us for d in delays.values()]

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
    the configured distribution (the table the data plane draws from), and
    frames do overtake each other.

    Deciles, not a KS test: the host's lateness (0.5-3 ms on a busy run)
    shifts a distribution by more than a KS test of 400 frames allows where
    it is steep (pareto's), while a wrong distribution or scale is off by
    2.5-7 ms at some decile (uniform against pareto, 5 ms of jitter against
    10). Each measured decile, less the link's median lateness, must be
    within the table's own sampling spread for 400 frames (99.99 %) and
    HOST_SLACK_US of the table's."""

    DECILES = np.arange(10, 100, 10)
    HOST_SLACK_US = 1_000
    BOOTSTRAPS = 20_000

    def runTest(self):
        rng = np.random.default_rng(41)
        for jitter in ({"distribution": "uniform", "jitter": "10ms"},
                       {"distribution": "pareto", "jitter": "10ms"}):
            downlink = {"delay": "30ms", "jitter": {**jitter, "reorder": True}}
            late = self.lateness_us(30_000)
            delays = self.measure(downlink, 400, 0.002, wait=1.0)
            lateness = np.array(late + self.lateness_us(30_000))
            late = np.median(lateness)
            table = np.array(delay_table(profile(downlink=downlink).downlink.jitter, 30_000))
            measured = np.array(list(delays.values())) - late
            wanted = np.percentile(table, self.DECILES)
            samples = np.percentile(rng.choice(table, (20_000, len(measured))), self.DECILES,
                                    axis=1)
            spread = np.quantile(abs(samples.T - wanted), 0.9999, axis=0)
            off = np.percentile(measured, self.DECILES) - wanted
            print(f"{jitter['distribution']}: deciles off by (ms) {np.round(off / 1e3, 2)}, "
                  f"allowed {np.round((spread + self.HOST_SLACK_US) / 1e3, 2)}")
            self.assertTrue(all(abs(off) <= spread + self.HOST_SLACK_US),
                            (jitter, list(np.round(off)), list(np.round(spread))))
            if jitter["distribution"] == "uniform":   # pareto's sample spread is erratic
                # A delay is a draw of the table plus the host's lateness (measured
                # beside it): its spread within the 99.99 % interval of such sums'.
                spreads = np.concatenate([np.std(
                    rng.choice(table, (1000, len(measured)))
                    + rng.choice(lateness - late, (1000, len(measured))), axis=1)
                    for _ in range(self.BOOTSTRAPS // 1000)])
                low, high = np.quantile(spreads, [0.00005, 0.99995])
                print(f"standard deviation {np.std(measured) / 1e3:.3f} ms, "
                      f"allowed {low / 1e3:.3f}-{high / 1e3:.3f}")
                self.assertTrue(low <= np.std(measured) <= high,
                                (np.std(measured), low, high))
            order = list(delays)
            self.assertNotEqual(order, sorted(order), "no frame was reordered")


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
        self.assert_in_time((np.percentile(measured, 90) - 40_000) / 1e3, P90_LATE_S * 1e3,
                            "p90 ms past the longest delay")
        self.assert_in_time((measured.max() - 40_000) / 1e3, MAX_LATE_S * 1e3,
                            "most ms past the longest delay")
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
        # Off by a difference of two medians of the host's lateness: within its
        # 99.99 % bootstrap interval, widened by the lateness's interquartile range
        # (a spiked frame, held with the next, meets longer rounds of the hold loop).
        rng = np.random.default_rng(43)
        late = delays[~spiked] - 10_000
        differences = (np.median(rng.choice(late, (20_000, spiked.sum())), axis=1)
                       - np.median(rng.choice(late, (20_000, (~spiked).sum())), axis=1))
        slack = np.subtract(*np.percentile(late, [75, 25]))
        low, high = np.quantile(differences, [0.00005, 0.99995]) + (-slack, slack)
        print(f"a spike added {added / 1e3:.3f} ms, allowed 20 ms + "
              f"({low / 1e3:.3f}, {high / 1e3:.3f})")
        self.assertTrue(low <= added - 20_000 <= high, f"a spike added {added:.0f} us")
        low, high = binomial_bounds(count, p)
        self.assertTrue(low <= spiked.sum() <= high,
                        f"{spiked.sum()} of {count} spiked, expected [{low:.0f}, {high:.0f}]")
