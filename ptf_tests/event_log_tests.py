"""PTF tests of the per-packet event log: it accounts for every frame sent
(in = out + drops, per cause, as the counters say) and its times agree with
kernel-timestamped captures on the test's own interfaces."""

import numpy as np

from linkemu.drivers.event_log import EventRecorder, check_timing, outcomes, read_events
from linkemu.drivers.state_driver import running
from linkemu_base import FIXED_PORT, MOBILE_PORTS, LinkemuTest, frame_seq

MOBILE = MOBILE_PORTS[0]
COUNT = 400
CAUSES = ("drop_queue", "drop_loss_model", "drop_link_error")


class EventLogTest(LinkemuTest):
    """Frames offered at twice a 2 Mbit/s link with a 10-packet queue, a
    Bernoulli loss model and link errors: every fate occurs."""

    def runTest(self):
        self.push({"downlink": {"rate": "2Mbit", "delay": "20ms", "queue": 10,
                                "loss": {"model": "bernoulli", "p": 0.05}}}, errors=0.1)
        before = self.counters()
        path = self.workdir / "events.csv"
        recorder = EventRecorder(self.switch, path)
        with running(recorder):
            sent, received = self.timed(
                FIXED_PORT, MOBILE, lambda: self.send_spaced(FIXED_PORT, MOBILE, COUNT, 0.001,
                                                             500), wait=0.5)
            self.wait_until_idle(before, "downlink", timeout=5)
        self.assertIsNone(recorder.error)
        events = [e for e in read_events(path) if e.direction == "downlink"]

        # Every frame sent is one event; every cause agrees with its counter.
        self.assertEqual(len(sent), COUNT)
        self.assertEqual(len(events), COUNT)
        self.assertEqual(self.counter_delta(before, "link_in", "downlink"), COUNT)
        counts = outcomes(events)["downlink"]
        self.assertEqual(counts["released"], len(received))
        self.assertEqual(counts["released"], self.counter_delta(before, "link_out", "downlink"))
        for cause in CAUSES:
            self.assertEqual(counts[cause], self.counter_delta(before, cause, "downlink"), cause)
            self.assertGreater(counts[cause], 0, f"no {cause} in the test")
        print(f"event outcomes: {counts}")

        # Events in arrival order are the frames in sending order.
        events.sort(key=lambda e: e.arrival_us)
        sent_at = [f.ts for f in sent]
        received_at = {frame_seq(f.data): f.ts for f in received}
        released = {frame_seq(f.data): e for f, e in zip(sent, events) if e.released}
        self.assertEqual(set(released), set(received_at))
        # The log's arrivals keep the captures' spacing ...
        arrivals = np.array([e.arrival_us for e in events]) / 1e6
        spacing = np.diff(arrivals) - np.diff(sent_at)
        # ... and its time through the link is the captured one.
        through = np.array([(e.event_us - e.arrival_us) / 1e6 - (received_at[seq] - sent_at[seq])
                            for seq, e in released.items()])
        print(f"arrival spacing log - capture ms: p99 {np.quantile(abs(spacing), 0.99) * 1e3:.3f}; "
              f"time through log - capture ms: median {np.median(through) * 1e3:.3f}, "
              f"p1 {np.quantile(through, 0.01) * 1e3:.3f}, "
              f"p99 {np.quantile(through, 0.99) * 1e3:.3f}")
        # BMv2 takes a frame in from its port late by what its threads are
        # busy with: up to 1.4 ms at p99 on a slow day of this machine
        # (2026-11-25), 3 ms in a busy CI run (2026-11-26). A wrong clock
        # (a stale timestamp, another unit) is off by a hold or far more,
        # for most frames; the benchmark measures the agreement.
        self.assertLess(np.median(abs(spacing)), 0.0005)
        self.assert_in_time(np.quantile(abs(spacing), 0.99) * 1e3, 10,
                            "p99 ms of arrival spacing, log - capture")
        # The capture adds the veths and the switch's egress to the log's
        # time through; the log never claims a frame left after it arrived.
        self.assertLess(np.median(abs(through)), 0.001)
        self.assert_in_time(np.quantile(abs(through), 0.99) * 1e3, 10,
                            "p99 ms of time through, log - capture")
        self.assertLess(through.max(), 0.0005)
        timing = check_timing(events)
        print(f"release error: {timing.as_dict()}")
        self.assertEqual(timing.early, 0)
        for e in events:
            if e.released:
                self.assertLessEqual(e.arrival_us, e.start_us)
                self.assertLess(e.start_us, e.due_us)


class EventLogSampleTest(LinkemuTest):
    """A sampled log reports a random share of the packets, spread over the
    whole run, each with the fate the switch gave it."""

    SAMPLE = 0.25
    FRAMES = 1600

    def runTest(self):
        self.push({"downlink": {"rate": "10Mbit", "delay": "5ms", "queue": 100}})
        before = self.counters()
        path = self.workdir / "events.csv"
        recorder = EventRecorder(self.switch, path, sample=self.SAMPLE)
        with running(recorder):
            self.send_spaced(FIXED_PORT, MOBILE, self.FRAMES, 0.0005, 200)
            self.wait_until_idle(before, "downlink", timeout=5)
        self.assertIsNone(recorder.error)
        taken = self.counter_delta(before, "link_in", "downlink")
        self.assertGreater(taken, 0.99 * self.FRAMES)
        events = sorted((e for e in read_events(path) if e.direction == "downlink"),
                        key=lambda e: e.arrival_us)
        # Binomial(1600, 0.25): mean 400, standard deviation 17.3; five of
        # them either way.
        mean = taken * self.SAMPLE
        sd = (taken * self.SAMPLE * (1 - self.SAMPLE)) ** 0.5
        self.assertLess(abs(len(events) - mean), 5 * sd, len(events))
        self.assertTrue(all(e.released for e in events))
        self.assertEqual(len({e.seq for e in events}), len(events))
        # Spread over the run: each quarter of the sending time has its share.
        first, last = events[0].arrival_us, events[-1].arrival_us
        quarters = np.histogram([e.arrival_us for e in events], bins=4, range=(first, last))[0]
        self.assertTrue(all(abs(q - mean / 4) < 5 * sd / 2 for q in quarters), quarters)
        self.assertEqual(check_timing(events).early, 0)
