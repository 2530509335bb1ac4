"""PTF tests of the two-class priority split (DiffServ) ahead of the link."""

import time

from linkemu_base import FIXED_PORT, MOBILE_PORTS, LinkemuTest, frame_seq, profile, udp_frame

MOBILE = MOBILE_PORTS[0]
PRIORITY_PORT = 5000
BEST_EFFORT_PORT = 9


def split(**priority):
    """A 64 kbit/s downlink whose UDP to PRIORITY_PORT is the priority class."""
    return {"rate": "64kbit", "delay": "50ms", "queue": 8,
            "priority": {"match": [{"protocol": "udp", "dst_port": PRIORITY_PORT}],
                         "queue": 4, **priority}}


def tx_s(frame_length, rate_bps=64_000):
    return (frame_length - 14) * 8 / rate_bps


class PriorityTest(LinkemuTest):
    """A priority frame waits only for the frame on the link, never for the
    best-effort backlog, and is never dropped for it; every frame leaves when
    the non-preemptive strict-priority model says (which FIFO would miss by
    hundreds of milliseconds)."""

    def runTest(self):
        link = split()
        self.push({"downlink": link})
        best_effort = [bytes(udp_frame(FIXED_PORT, MOBILE, i, 500, BEST_EFFORT_PORT))
                       for i in range(20)]
        priority = [bytes(udp_frame(FIXED_PORT, MOBILE, 100 + i, 200, PRIORITY_PORT))
                    for i in range(10)]

        def send():
            # One best-effort frame on the link, 8 waiting, 11 dropped; then a
            # priority frame every 54 ms while the backlog drains (60.75 ms a
            # frame). This schedule keeps every priority arrival at least 10 ms
            # from an instant the link frees: nearer, capture and switch clocks
            # may disagree on which came first, and so on the order.
            for frame in best_effort:
                self.send(FIXED_PORT, frame)
            start = time.time()
            for i, frame in enumerate(priority):
                time.sleep(max(0.0, start + 0.017 + 0.054 * i - time.time()))
                self.send(FIXED_PORT, frame)

        before = self.counters()
        sent, received = self.timed(FIXED_PORT, MOBILE, send, wait=1.5)
        direction = profile(downlink=link).downlink
        self.assert_on_time(sent, received, direction)

        self.assertEqual(self.counter_delta(before, "drop_queue", "downlink/priority"), 0)
        self.assertEqual(self.counter_delta(before, "drop_queue", "downlink/best_effort"), 11)
        got = {frame_seq(f.data): f.ts for f in received}
        self.assertEqual(sorted(s for s in got if s >= 100), list(range(100, 110)))
        arrivals = {frame_seq(f.data): f.ts for f in sent}
        worst = tx_s(500) + tx_s(200) + 0.050 + 0.010
        for seq in range(100, 110):
            self.assertLess(got[seq] - arrivals[seq], worst, f"priority frame {seq}")


class PriorityShareTest(LinkemuTest):
    """Each class's share caps its rate: back-to-back bursts of both classes
    interleave as the model of two capped classes says."""

    def runTest(self):
        link = split(share=0.5, best_effort_share=0.5)
        self.push({"downlink": link})
        frames = [bytes(udp_frame(FIXED_PORT, MOBILE, i, 300,
                                  PRIORITY_PORT if i % 2 else BEST_EFFORT_PORT))
                  for i in range(8)]

        def send():
            for frame in frames:
                self.send(FIXED_PORT, frame)

        before = self.counters()
        sent, received = self.timed(FIXED_PORT, MOBILE, send, wait=8 * 2 * tx_s(300) + 0.5)
        self.assert_on_time(sent, received, profile(downlink=link).downlink)
        self.assertEqual(self.counter_delta(before, "link_out", "downlink"), 8)
        # Each class alone would leave at half the link rate: the median gap
        # (one frame the shared machine delays shortens one gap, not two).
        for parity in (0, 1):
            times = sorted(f.ts for f in received if frame_seq(f.data) % 2 == parity)
            gaps = sorted(b - a for a, b in zip(times, times[1:]))
            self.assertGreater(gaps[len(gaps) // 2], 2 * tx_s(300) * 0.97, gaps)


class ClassAqmTest(LinkemuTest):
    """Each class has its own AQM: RED on the priority class drops priority
    frames only, and best effort keeps its plain tail drop."""

    def runTest(self):
        link = split(red={"min": 1, "max": 3, "max_p": 1, "weight": 0.9})
        self.push({"downlink": link})
        # Built first: the 60 frames arrive within one frame's time on the link.
        frames = [bytes(udp_frame(FIXED_PORT, MOBILE, i, 300, PRIORITY_PORT))
                  for i in range(30)]
        frames += [bytes(udp_frame(FIXED_PORT, MOBILE, 100 + i, 300, BEST_EFFORT_PORT))
                   for i in range(30)]
        before = self.counters()
        for frame in frames:
            self.send(FIXED_PORT, frame)
        self.wait_entered(before, "downlink", 60, timeout=5)
        self.wait_until_idle(before, "downlink", timeout=10)
        # One reading for every figure, and every figure in the message.
        after = self.counters()
        delta = {f"{name} {cell}": after[name][cell][0] - before[name][cell][0]
                 for name in ("link_in", "link_out", "drop_aqm", "drop_queue")
                 for cell in ("downlink", "downlink/priority", "downlink/best_effort")
                 if cell in after[name]}
        self.assertGreater(delta["drop_aqm downlink/priority"], 0, delta)
        self.assertEqual(delta["drop_aqm downlink/best_effort"], 0, delta)
        self.assertEqual(delta["drop_queue downlink/best_effort"], 30 - 8, delta)
        self.assertEqual(delta["link_out downlink"],
                         8 + 30 - delta["drop_aqm downlink/priority"]
                         - delta["drop_queue downlink/priority"], delta)


class PriorityUnderOverloadTest(LinkemuTest):
    """A priority stream of 46 % of the link, uncapped, loses nothing and
    waits only for the best-effort frame on the link, while best effort,
    offered more than the link, overflows all along and gets exactly the
    link time priority leaves (S-MIX2's UDP stream beside bulk TCP)."""

    CYCLES = 16

    def runTest(self):
        link = split()
        self.push({"downlink": link})
        be_tx, prio_tx = tx_s(500), tx_s(428)    # 60.75 ms and 51.75 ms: 46 %
        cycle = be_tx + prio_tx
        # The link alternates one best-effort frame and one priority frame,
        # starting at t0 + k * cycle. Every arrival keeps 10 ms from an
        # instant the link frees, where capture and switch clocks might
        # disagree on what came first: priority 30 ms into the best-effort
        # frame, best effort 40 and 90 ms into the cycle, two for the one
        # the link takes, so one overflows in every cycle.
        schedule = [(0.0, bytes(udp_frame(FIXED_PORT, MOBILE, i, 500, BEST_EFFORT_PORT)))
                    for i in range(9)]                 # the link's frame and a full queue
        for k in range(self.CYCLES):
            schedule.append((k * cycle + 0.030, bytes(
                udp_frame(FIXED_PORT, MOBILE, 1000 + k, 428, PRIORITY_PORT))))
            schedule += [(k * cycle + offset, bytes(
                udp_frame(FIXED_PORT, MOBILE, 100 + 2 * k + n, 500, BEST_EFFORT_PORT)))
                for n, offset in enumerate((0.040, 0.090))]
        schedule.sort(key=lambda item: item[0])

        before = self.counters()
        # After the last arrival the 8 queued best-effort frames drain.
        sent, received = self.timed(FIXED_PORT, MOBILE,
                                    lambda: self.send_schedule(FIXED_PORT, schedule),
                                    wait=8 * be_tx + 0.050 + 0.5)
        self.assert_on_time(sent, received, profile(downlink=link).downlink)

        best_effort_sent = 9 + 2 * self.CYCLES
        self.assertEqual(self.counter_delta(before, "drop_queue", "downlink/priority"), 0)
        # One best-effort frame per cycle, then the 8 queued: the rest overflowed.
        self.assertEqual(self.counter_delta(before, "drop_queue", "downlink/best_effort"),
                         best_effort_sent - (self.CYCLES + 8))
        arrivals = {frame_seq(f.data): f.ts for f in sent}
        got = {frame_seq(f.data): f.ts for f in received}
        priority = range(1000, 1000 + self.CYCLES)
        self.assertEqual(sorted(s for s in got if s >= 1000), list(priority))
        worst = be_tx + prio_tx + 0.050 + 0.010
        for seq in priority:
            self.assertLess(got[seq] - arrivals[seq], worst, f"priority frame {seq}")
