"""Fidelity and capacity of linkemu, side by side with plain BMv2 forwarding.

Runs every measurement on switches of its own (veth pairs), with the same
traffic through linkemu and through bench/forward.p4, then, where Mininet is
installed, real TCP (iperf3) through linkemu, plain forwarding and the least
link model, and writes a results folder: report.json (every figure),
report.md (tables, targets) and PNG plots. Method: docs/benchmark.md.

    sudo .venv/bin/python bench/benchmark.py [--quick] [--out DIR]
"""

import argparse
import itertools
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path

from scipy import stats

from linkemu.drivers.event_log import EventRecorder, against_captures, check_timing, read_events
from linkemu.drivers.fidelity import compare, loss_bursts
from linkemu.drivers.state_driver import StateDriver, running
from linkemu.model.link_states import constant_errors, walk
from linkemu.model.profile import parse_profile
from linkemu.program import constants as p4
from linkemu.switch.counters import in_flight, read_counters
from linkemu.switch.entries.link_errors import link_state_entries
from linkemu.switch.p4runtime import Switch
from linkemu.switch.ports import Port, PortLayout
from linkemu.switch.push import push_profile
from linkemu.testbed import leftovers
from linkemu.testbed.bmv2 import has_timed_departure
from linkemu.testbed.veth_switch import veth_switch, veth_testbed

from programs import (BASELINE, HOLD_BASELINE, LANES_BASELINE, LANES_IN_ORDER_BASELINE,
                      LINKEMU, MINIMAL_BASELINE,
                      PLAIN_BASELINE, PROGRAMS, ROOT, SHAPE_BASELINE, minimal_link_entries,
                      plain_arrival_entries, sync_baseline)
from report import BUSY, TARGET_RATE_BPS, rate_label, write_report
from traffic import flood, frame_seq, paced

LANE_DEPTH = 16384   # frames a lane's queue takes: BMv2 drops a clone to a full one unseen
LAYOUT = PortLayout(fixed=(Port(1),), mobile=(Port(2),))
SIZE = 500
HELD = (10, 20, 50, 100, 200, 500, 1000, 2000)   # frames held at once by the hold runs
HELD_QUICK = HELD[:5]
# One feature at a time on the zero-delay link (feature_costs).
FEATURES = (
    ("plain", {}),
    ("router queue in bytes", {"queue_bytes": "1MB"}),
    ("RED", {"red": {"min": 150, "max": 190, "max_p": 0.1, "weight": 0.002}}),
    ("loss model", {"loss": {"model": "gilbert-elliott", "p": 0.0001, "r": 0.5}}),
    ("delay variation", {"jitter": {"distribution": "uniform", "jitter": "0ms"}}),
    ("packet faults", {"duplicate": 0.0001}),
    ("sojourn ramp", {"sojourn_ramp": {"target": "40ms"}}),
    ("priority class", {"priority": {"match": [{"protocol": "tcp"}]}}),
)
HELD_TIMED = (5000, 10000)   # held asleep: a switch with timed departure only
ARRIVALS_HELD = HELD[:6]   # beyond, linkemu's loop loses frames, which later runs would meet
CAPACITY_DELAYS_MS = (20, 160)
BUSY_S = 1.0   # a busy cell's steady state: the link full at the longest delay
# The TCP targets' links: 100 Mbit/s with 20 and 160 ms round trips.
TCP_PROFILES = (ROOT / "profiles" / "100mbit-10ms.yaml", ROOT / "profiles" / "100mbit-80ms.yaml")
BURST = 500   # frames held at once by link_order_cost, past BMv2's 64 a port
# Release in any order: ARQ that never retransmits (no errors), in_order false.
ANY_ORDER = {"delay": "10ms", "max_retransmissions": 1, "in_order": False}


def link(rate="unlimited", delay="0ms", error=0, **extra):
    """The downlink under test; with `error`, link errors of that probability."""
    data = {"downlink": {"rate": rate, "delay": delay, "queue": 1000, **extra}, "uplink": {}}
    if error:
        data["link_states"] = constant_errors({"downlink": error, "uplink": 0})
    return parse_profile(data, source="benchmark profile")


def percentiles(values_s):
    ordered = sorted(values_s)
    if not ordered:
        return {}
    pick = lambda p: ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1e3  # noqa: E731
    return {"n": len(ordered), "p50_ms": pick(50), "p99_ms": pick(99), "max_ms": ordered[-1] * 1e3}


def wake_lateness(cpu, count=2000, seed=32):
    """How late a thread on core `cpu` wakes from sleeps of 0.1 to 2 ms, in
    this process with the switch idle: BMv2's rate-limited queues sleep the
    same way until a frame's send instant, so no hold that sleeps releases
    more precisely than this."""
    rng = random.Random(seed)
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        late = []
        for _ in range(count):
            ahead = rng.uniform(1e-4, 2e-3)
            due = time.perf_counter() + ahead
            time.sleep(ahead)
            late.append(time.perf_counter() - due)
    finally:
        os.sched_setaffinity(0, cores)
    late.sort()
    return {**percentiles(late), "p90_ms": late[int(0.9 * len(late))] * 1e3}


def tx_s(size, rate_bps):
    return (size - p4.ETH_HEADER_BYTES) * 8 / rate_bps


class Bench:
    def __init__(self, switch, peers, quick, linkemu=True):
        self.switch, self.peers, self.quick, self.linkemu = switch, peers, quick, linkemu
        self.link_entries = None   # a baseline's link, from a profile's downlink
        self.warnings = []
        self.unaccounted = 0   # frames the counters lost track of so far
        self.last_sent = "nothing"   # what the frames of the latest send measured
        self.controller = Switch(switch.grpc_address)
        self.controller.connect()

    def push(self, profile):
        """Waits for the previous measurement's frames to leave, then pushes:
        a backlog still in the hold loop would slow the next measurement."""
        self.wait_until_idle()
        if self.linkemu:
            push_profile(self.controller, profile)
            return
        sync_baseline(self.controller, self.link_entries(profile.downlink))

    def load(self, program, link_entries=None, queues=None):
        """A baseline program, for one with a link its entries' writer, and
        for one with egress queues of its own their setter, given the
        switch's Thrift connection."""
        self.controller.set_pipeline(*program)
        self.link_entries = link_entries
        if queues:
            with self.switch.queues() as connection:
                queues(connection)

    def wait_until_idle(self, timeout=30):
        """Until linkemu's counters have every frame out, or a baseline, which
        counts nothing, has had its switch idle for 0.3 s: once their frames
        are due, a baseline's are out or go round. Frames lost inside BMv2
        itself (a full queue of its own) are never counted: after `timeout`
        the shortfall, or a switch still busy, is noted in the report."""
        deadline = time.monotonic() + timeout
        if not self.linkemu:
            while True:
                cpu = self.switch.cpu_seconds()
                time.sleep(0.3)
                if self.switch.cpu_seconds() - cpu < 0.03:
                    return
                if time.monotonic() > deadline:
                    self.warnings.append(f"the switch still busy {timeout} s after "
                                         f"{self.last_sent}")
                    return
        while True:
            shortfall = in_flight(read_counters(self.controller), "downlink")
            if shortfall <= self.unaccounted:
                break
            if time.monotonic() > deadline:
                self.warnings.append(f"{shortfall - self.unaccounted} frames unaccounted "
                                     f"for {timeout} s after {self.last_sent} (lost "
                                     "inside BMv2, or still held)")
                self.unaccounted = shortfall
                break
            time.sleep(0.2)
        time.sleep(0.3)   # let the switch's threads go idle

    def send(self, what, schedule, wait, **options):
        """paced() on this switch; `what` names the measurement in warnings."""
        self.last_sent = what
        return paced(self.switch, self.peers, schedule, wait, **options)

    # Delay and rate fidelity -------------------------------------------------
    def warm_up(self):
        """A loaded cell, left out: the first time BMv2 holds a few hundred
        frames it is slower (measured: linkemu's first loaded 10 Mbit/s cell
        held 234-392 frames at once and had p99 36-92 ms, later ones 179-190
        frames and 6-11 ms; the least link model's first cell had every frame
        15.5 ms late)."""
        self.delay_cell(10e6, 20, "loaded")

    def capacity_curve(self):
        """The busy cells at each rate and delay, after the fullest of them
        once, left out: the first time BMv2 holds more frames than ever
        before, it makes a packet header vector for each and is late
        (measured: the first 100 Mbit/s, 160 ms busy cell of 600 frames, all
        held at once, p99 29.6 ms; the next two 0.37 and 0.41 ms). That first
        time is measured apart (hold_floor)."""
        self.delay_cell(max(self.capacity_rates()), max(CAPACITY_DELAYS_MS), "busy", size=1500)
        return [self.delay_cell(r, d, "busy", size=1500)
                for d in CAPACITY_DELAYS_MS for r in self.capacity_rates()]

    def capacity_rates(self):
        return CAPACITY_RATES[::3] if self.quick else CAPACITY_RATES

    def delay_cell(self, rate_bps, delay_ms, load, size=SIZE):
        """Frames of `size` through the link: `idle` (spaced twice their
        serialization), or offered at OFFERED[load] x its rate (`loaded`: the
        router queue grows all through; `busy`)."""
        return self.delay_run(rate_bps, delay_ms, load, size)[0]

    def delay_run(self, rate_bps, delay_ms, load, size=SIZE):
        """delay_cell's cell, with its captures (a Run) and the profile's
        direction the frames went through."""
        profile = link(f"{rate_bps / 1e3:g}kbit", f"{delay_ms}ms")
        tx = tx_s(size, rate_bps)
        schedule = self.cell_schedule(rate_bps, load, size)
        count = len(schedule)
        backlog = max(0, count * tx - schedule[-1][0])
        self.push(profile)
        run = self.send(f"the {rate_label(rate_bps)}, {delay_ms} ms, {load} cell ({size} B)",
                        schedule, delay_ms / 1e3 + backlog + 2 * tx + 0.5)
        fidelity = compare(run.arrivals, run.departures, profile.downlink)
        cell = {"rate_bps": rate_bps, "delay_ms": delay_ms, "load": load, "size": size,
                "sent": count, "entered": len(run.arrivals), "peak_held": run.peak_inside(),
                **fidelity.summary(),
                "errors_ms": [round(e * 1e3, 4) for e in fidelity.errors]}
        if load == "loaded":
            cell.update(self.rate_of(run.departures, rate_bps))
        return cell, run, profile.downlink

    def cell_schedule(self, rate_bps, load, size):
        """[(offset s, size)] of a cell's frames: `idle`, spaced twice their
        serialization; else offered at OFFERED[load] x the rate; `busy`, for
        BUSY_S (half that in the quick run) after the link holds all it
        holds at the capacity curve's longest delay."""
        tx = tx_s(size, rate_bps)
        budget = 2 if self.quick else 5
        if load == "idle":
            spacing = max(2 * tx, 0.002)
            count = max(30, min(300, int(budget / spacing)))
        elif load == "busy":
            spacing = tx / OFFERED[load]
            busy_s = BUSY_S / 2 if self.quick else BUSY_S
            count = max(60, int((max(CAPACITY_DELAYS_MS) / 1e3 + busy_s) / spacing))
        else:
            spacing = tx / OFFERED[load]
            count = max(60, min(600, int(budget / tx)))
        return [(i * spacing, size) for i in range(count)]

    def forwarded_busy(self, size=1500):
        """The capacity curve's busy traffic through plain forwarding, rate by
        rate: the substrate's own delay (departure - arrival), loss and switch
        CPU a frame, which no link model on it can better."""
        rows = []
        for rate_bps in self.capacity_rates():
            schedule = self.cell_schedule(rate_bps, "busy", size)
            self.wait_until_idle()
            cpu = self.switch.cpu_seconds()
            run = self.send(f"forwarding the {rate_label(rate_bps)} busy traffic", schedule, 0.5)
            cpu = self.switch.cpu_seconds() - cpu
            rows.append({"rate_bps": rate_bps, "sent": len(schedule),
                         "delivered": len(run.departures),
                         "cpu_us_per_frame": cpu / len(schedule) * 1e6,
                         **percentiles(run.latencies())})
        return rows

    @staticmethod
    def rate_of(departures, rate_bps):
        """Delivered rate and departure spacing of a saturated link.

        The rate is the inverse slope of the departure times against the
        bits delivered (least squares, time on bits: the times carry the
        release error, the bits none), so every departure counts: bits over
        the span of the first and the last would rest on those two frames'
        release error, over 0.1-0.25 s (600 frames at 10-20 Mbit/s)."""
        frames = sorted(departures, key=lambda f: f.ts)
        if len(frames) < 3:
            return {}
        times = [f.ts for f in frames]
        bits = list(itertools.accumulate((f.length - p4.ETH_HEADER_BYTES) * 8
                                         for f in frames))
        delivered = 1 / statistics.linear_regression(bits, times).slope
        gaps = [b - a for a, b in zip(times, times[1:])]
        return {"delivered_bps": delivered,
                "rate_error_pct": (delivered - rate_bps) / rate_bps * 100,
                "gap_median_us": statistics.median(gaps) * 1e6,
                "gap_expected_us": tx_s(frames[0].length, rate_bps) * 1e6}

    # ARQ holds ---------------------------------------------------------------
    def arq_holds(self):
        self.push(link(error=0.5,
                       arq={"delay": "700ms", "max_retransmissions": 6, "in_order": False}))
        count = 60 if self.quick else 200
        run = self.send("the ARQ holds", [(i * 0.02, SIZE) for i in range(count)],
                        wait=6 * 0.7 + 1)
        by_k = {}
        for latency in run.latencies():
            k = round(latency / 0.7)
            by_k.setdefault(k, []).append(latency - 0.7 * k)
        return {"delay_ms": 700, "by_retransmissions": {
            k: {"hold_ms": 700 * k, **percentiles(v)} for k, v in sorted(by_k.items())},
            "all": percentiles([e for v in by_k.values() for e in v])}

    def arrivals_among_held(self):
        """How long a frame released on arrival waits while others are held:
        BMv2's ingress thread takes a new frame in only when no recirculated
        packet waits. Link errors of 0.5 with ARQ holding each failed frame
        1 s: half the frames are held (about 0.5 s / spacing at once), the
        other half, through at the first attempt, are the probes."""
        self.push(link(error=0.5,
                       arq={"delay": "1000ms", "max_retransmissions": 1, "in_order": False}))
        rows = []
        for held in (HELD_QUICK if self.quick else ARRIVALS_HELD):
            spacing = 0.5 / held
            count = int(3 / spacing)
            run = self.send(f"arrivals among {held} held",
                            [(i * spacing, SIZE) for i in range(count)], wait=1.5)
            # Probes that came once the loop was full (the first second
            # fills it); a held frame leaves 1 s after it came.
            waits = run.latencies(since=run.arrivals[0].ts + 1)
            rows.append({"held": held, **percentiles([t for t in waits if t < 0.5])})
        return rows

    # Loss --------------------------------------------------------------------
    def losses(self, what, profile, count, spacing):
        self.push(profile)
        run = self.send(what, [(i * spacing, 100) for i in range(count)], wait=0.5)
        delivered = {frame_seq(f.data) for f in run.departures}
        return [frame_seq(f.data) not in delivered for f in run.arrivals]

    def loss_fidelity(self):
        count = 2000 if self.quick else 5000
        rows = []
        for p in (0.01, 0.1, 0.5):
            lost = self.losses(f"the losses at error {p}", link(error=p), count, 0.0004)
            test = stats.binomtest(sum(lost), len(lost), p)
            ci = test.proportion_estimate, test.proportion_ci(0.99)
            rows.append({"configured": p, "n": len(lost), "lost": sum(lost),
                         "measured": ci[0], "ci99": [ci[1].low, ci[1].high],
                         "inside": ci[1].low <= p <= ci[1].high})
        p, r = 0.05, 0.3
        lost = self.losses("the Gilbert-Elliott losses",
                           link(loss={"model": "gilbert-elliott", "p": p, "r": r}), count, 0.0004)
        bursts = loss_bursts(lost)
        # Burst lengths are geometric with mean 1/r: chi-square over 1..5, 6+.
        observed = [sum(b == n for b in bursts) for n in range(1, 6)] + [sum(b >= 6 for b in bursts)]
        law = [(1 - r) ** (n - 1) * r for n in range(1, 6)] + [(1 - r) ** 5]
        chi = stats.chisquare(observed, [q * len(bursts) for q in law])
        return {"error_rate": rows, "gilbert_elliott": {
            "p": p, "r": r, "n": len(lost), "loss_rate": sum(lost) / len(lost),
            "stationary": p / (p + r), "bursts": len(bursts),
            "mean_burst": statistics.mean(bursts) if bursts else None, "mean_burst_law": 1 / r,
            "burst_histogram": observed, "chi_square_p": chi.pvalue}}

    # State changes -------------------------------------------------------------
    def state_changes(self):
        """Scheduled instant -> first frame that met the new state (frames
        every 0.5 ms; a change toggles the error probability 0 <-> 1)."""
        seconds = 5 if self.quick else 15
        static = {"distribution": "static", "value": "100ms"}
        profile = parse_profile({"downlink": {}, "uplink": {}, "link_states": {
            "start": {"good": 1}, "states": {
                "good": {"error": 0, "duration": static, "next": {"bad": 1}},
                "bad": {"error": {"downlink": 1, "uplink": 0}, "duration": static,
                        "next": {"good": 1}}}}})
        self.push(profile)
        driver = StateDriver(self.controller, profile.states, walk(profile.states))
        spacing = 0.0005
        thread = threading.Thread(target=driver.run, kwargs={"duration_s": seconds})
        schedule = [(i * spacing, 100) for i in range(int((seconds + 0.3) / spacing))]
        run = self.send("the state changes", schedule, wait=0.3, at_start=thread.start)
        thread.join()
        entered = sorted((f.ts, frame_seq(f.data)) for f in run.arrivals)
        delivered = {frame_seq(f.data) for f in run.departures}
        scheduled = [a.applied_unix - a.latency_s for a in driver.applied]
        latencies, early = [], []
        for applied, previous, instant in zip(driver.applied[1:], scheduled, scheduled[1:]):
            bad = applied.change.state == "bad"
            met_new = [ts for ts, seq in entered
                       if ts >= previous and (seq not in delivered) == bad]
            first = next((ts for ts in met_new if ts >= instant), None)
            if first is not None:
                latencies.append(first - instant)
            early += [instant - ts for ts in met_new if ts < instant]
        return {"changes": len(latencies), "frame_spacing_ms": spacing * 1e3,
                **percentiles(latencies),
                "early_frames": len(early), "early_max_ms": max(early, default=0) * 1e3,
                "driver": driver.latency_summary()}

    # The hold loop ---------------------------------------------------------------
    def hold_floor(self, profile):
        """Release error (ms) with N frames held 1 s at once, sent 0.1 ms apart:
        every held frame recirculates, so the error grows with N. Run on linkemu
        (`profile`: 1 s delay) and on bench/hold.p4 (profile None), the same
        loop with nothing else, whose error is the floor of the mechanism.
        The first count runs twice, and its first run is left out: a loop's
        first run after other work is slower (measured: p50 0.26 against
        0.10 ms with 10 held in the bare loop, 1.03 against 0.33 in linkemu)."""
        rows = []
        counts = HELD_QUICK if self.quick else HELD + (HELD_TIMED if self.switch.timed else ())
        for held in counts[:1] + counts:
            if profile is not None:
                self.push(profile)
            else:
                self.wait_until_idle()
            rows.append({"held": held,
                         **self.held_1s(f"{held} frames held 1 s", held, spacing=0.0001)})
        return rows[1:]

    def held_1s(self, what, count, spacing):
        """`count` 200 B frames `spacing` s apart, held 1 s: how many left,
        how many linkemu refused (its hold loop full), their release error,
        how many left after a later frame, and the spells (1 ms or more) in
        which a due frame was inside and none left."""
        refused = self.refused()
        idle_rss = self.switch.rss_bytes()
        held_rss = []
        run = self.send(what, [(i * spacing, 200) for i in range(count)],
                        wait=1.5, hold_us=1_000_000,
                        marks={count - 1: lambda: held_rss.append(self.switch.rss_bytes())})
        stalls = run.stalls(1.0)
        return {"delivered": len(run.departures), "refused": self.refused() - refused,
                "rss_mb": held_rss[0] / 1e6, "rss_held_mb": (held_rss[0] - idle_rss) / 1e6,
                **percentiles([x - 1.0 for x in run.latencies()]),
                "out_of_order": run.out_of_order(), "stalls": len(stalls),
                "stalled_ms": sum(stalls) * 1e3}

    def link_order_cost(self, releases=(("link order", link(delay="1s")),
                                        ("any order", link(delay="1s", arq=ANY_ORDER)))):
        """What releasing in link order costs with hundreds held: BURST
        frames held 1 s, arriving 0.1 ms apart (falling due 10 a ms) and
        within 5 ms (due all but at once, faster than BMv2's queue of 64
        frames for a port could take them unpaced, so a frame lost here is
        one BMv2 dropped), three times for each of `releases` [(name,
        profile)]: on linkemu in link order (a link's default) and in any
        order (ARQ's in_order false, no errors); on bench/hold.p4 (profile
        None), which keeps no order."""
        rows = []
        for arrivals, spacing in (("0.1 ms apart", 0.0001), ("within 5 ms", 0.00001)):
            for release, profile in releases:
                for run in range(3):
                    if run or profile is None:
                        self.wait_until_idle()
                    else:
                        self.push(profile)
                    rows.append({"arrivals": arrivals, "release": release, "frames": BURST,
                                 **self.held_1s(f"{BURST} held 1 s, {arrivals}, {release}",
                                                BURST, spacing)})
        return rows

    def behind_retransmission(self):
        """BURST frames behind one that ARQ retransmits after 1 s, three
        times: the first frame meets errors of 1 and waits for its
        retransmission; the errors gone, BURST frames follow 0.1 ms apart,
        due 10 ms later, and wait for their turn in link order. Each is
        released once the retransmitted frame has left: its error is its
        departure less the retransmitted frame's."""
        rows = []
        for _ in range(3):
            self.push(link(delay="10ms", error=1.0,
                           arq={"delay": "1000ms", "max_retransmissions": 1}))

            def errors_gone():
                self.controller.modify(link_state_entries(
                    {"downlink": 0.0, "uplink": 0.0}))

            schedule = [(0, 200)] + [(0.05 + i * 0.0001, 200) for i in range(BURST)]
            run = self.send(f"{BURST} behind a retransmission", schedule, wait=1.5,
                            marks={1: errors_gone})
            out = {frame_seq(f.data): f.ts for f in run.departures}
            first = out.pop(0, None)
            rows.append({"frames": BURST, "delivered": len(out),
                         "retransmitted_out": first is not None,
                         "out_of_order": run.out_of_order(),
                         **percentiles([t - first for t in out.values()] if first else [])})
        return rows

    def refused(self):
        """Frames linkemu refused on arrival so far, its hold loop full (drop_hold)."""
        if not self.linkemu:
            return 0
        return sum(c[0] for c in
                   read_counters(self.controller)["drop_hold"].values())

    # Capacity ----------------------------------------------------------------
    def saturated_rate(self, ramps=None):
        """The most frames/s the switch delivered at zero added delay, 64 B
        frames offered at rising rates until it takes less than half of
        them: the rate its core sustains, without the all-or-nothing of a
        sweep (BMv2 drops the odd frame even far below its limit). A ramp,
        not one rate far beyond: the further BMv2 is overloaded, the more of
        its core goes to taking in frames it then drops. Then three rates
        between the step that delivered most and the next, a quarter step
        apart, up to the first that delivers less: a step is 10 000 frames/s,
        half of what linkemu takes. The best of a few ramps: other load on
        the machine only ever slows a switch down."""
        self.last_sent = "the saturated zero-delay rate"
        ramps = []
        for _ in range(ramps or (2 if self.quick else 3)):
            ramp = []
            for pps in SATURATION_RAMP:
                ramp.append(self.offer(pps))
                if ramp[-1]["delivered_pps"] < 0.5 * ramp[-1]["offered_pps"]:
                    break
            best = max(range(len(ramp)), key=lambda i: ramp[i]["delivered_pps"])
            if best + 1 < len(ramp):
                low, high = SATURATION_RAMP[best], SATURATION_RAMP[best + 1]
                for quarter in (1, 2, 3):
                    ramp.append(self.offer(low + (high - low) * quarter // 4))
                    if ramp[-1]["delivered_pps"] < ramp[best]["delivered_pps"]:
                        break
            ramps.append(ramp)
        peaks = [max(ramp, key=lambda r: r["delivered_pps"]) for ramp in ramps]
        return {**max(peaks, key=lambda r: r["delivered_pps"]), "ramps": ramps}

    def offer(self, pps):
        """64 B frames offered at pps, counted on the test ends (traffic.flood)."""
        run = flood(self.peers, pps, 1.5 if self.quick else 3)
        # Let the backlog leave: a packet still inside BMv2 when the pipeline
        # changes hands its old program's PHV to the new program's pool, and
        # the new program then runs on it.
        time.sleep(0.5)
        return run

    def zero_delay_throughput(self, profile):
        """The highest offered rate (64 B frames, zero added delay) the switch
        delivers in full (99.9 %), from a sweep of offered rates, and the
        rate it delivers when saturated."""
        if profile is not None:
            self.push(profile)
        rows = []
        for pps in ((5000, 10000, 20000) if self.quick else (5000, 10000, 15000, 20000, 30000,
                                                              40000)):
            self.wait_until_idle()
            cpu = self.switch.cpu_seconds()
            run = self.send(f"zero added delay at {pps} frames/s",
                            [(i / pps, 64) for i in range(pps)], wait=1.0)
            cpu = self.switch.cpu_seconds() - cpu
            entered, delivered = len(run.arrivals), len(run.departures)
            rows.append({"offered_pps": pps, "entered": entered, "delivered": delivered,
                         "cpu_s_per_packet_us": cpu / max(1, delivered) * 1e6,
                         **percentiles(run.latencies())})
            if delivered < 0.999 * entered:
                break
        full = [r["offered_pps"] for r in rows if r["delivered"] >= 0.999 * r["entered"]]
        self.wait_until_idle()
        return {"sustained_pps": max(full) if full else 0, "sweep": rows,
                "saturated": self.saturated_rate()}

    def feature_costs(self):
        """What each of a profile's features costs an arrival: the saturated
        zero-delay rate (64 B frames; one ramp) and the switch's CPU a frame
        on a 1 Gbit/s link (far above what BMv2 forwards: no queue builds),
        plain, then with one feature on each time (a feature's parameters as
        small as keep its frames at no added delay where it can)."""
        rows = []
        for name, extra in FEATURES:
            self.push(link(rate="1Gbit", **extra))
            cpu = self.switch.cpu_seconds()
            saturated = self.saturated_rate(ramps=1)
            rows.append({"feature": name, "delivered_pps": saturated["delivered_pps"],
                         "cpu_s": self.switch.cpu_seconds() - cpu})
        return rows

    def held_cpu(self, hold_us=0):
        """Switch cores busy while N frames sit held for 2 s (linkemu: its
        link's delay; a baseline: `hold_us`, written in each frame), over the
        second from 0.5 s after the first frame: every frame is in, none has
        left. N = 0: the switch idle."""
        rows = []
        for held in (0, 10, 100, 500, 1000):
            if self.linkemu:
                self.push(link(delay="2s"))
            else:
                self.wait_until_idle()
            samples = []

            def sample():
                for pause in (0.5, 1.0):
                    time.sleep(pause)
                    samples.append((time.monotonic(), self.switch.cpu_seconds()))

            if held:
                sampler = threading.Thread(target=sample)
                self.send(f"{held} frames held 2 s", [(i * 0.0002, 200) for i in range(held)],
                          wait=2.3, at_start=sampler.start, hold_us=hold_us)
                sampler.join()
            else:
                sample()
            (start, cpu_start), (end, cpu_end) = samples
            rows.append({"held": held, "cores": (cpu_end - cpu_start) / (end - start)})
        return rows

    # The event log -------------------------------------------------------------
    @contextmanager
    def event_log(self, path):
        """The event log on for both directions, written to `path`."""
        with running(EventRecorder(self.controller, path)):
            try:
                yield
            finally:
                self.wait_until_idle()   # every frame's event is in before the log stops

    def event_log_cost(self):
        """The loaded 10 Mbit/s, 20 ms cell and the saturated zero-delay rate
        with the log off and on: switch CPU per frame, release error as the
        captures see it, and as the log itself reports it. After a warm-up:
        this comes after the hold-loop runs, and a loaded cell right after
        other work is slow the way the first one is (once measured: log off p50
        18.5 ms, p99 72.1 ms, where the same cell earlier in the run had
        2.8 ms p99).

        With the log on, each run has a log of its own: the cell's is set
        beside its captures frame by frame (event_log.against_captures); the
        saturated run's, which has no captures (traffic.flood counts frames),
        is reported apart. The saturated rate is taken at zero added delay,
        as zero_delay_throughput's (before, it ran on the cell's 10 Mbit/s,
        20 ms link and measured a hold loop of hundreds); the CPU window
        holds the cell alone (before, the log-on cell's held the 30 s wait
        for the frames the saturated run before it lost)."""
        self.warm_up()
        rows = []
        with tempfile.TemporaryDirectory(prefix="linkemu-bench-") as folder:
            for on in (False, True):
                cell_path, saturated_path = (Path(folder) / f"{name}.csv"
                                             for name in ("cell", "saturated"))
                # The saturated run's frames lost inside BMv2 keep the next
                # wait going its full 30 s: outside the cell's CPU window.
                self.wait_until_idle()
                with (self.event_log(cell_path) if on else nullcontext()):
                    cpu = self.switch.cpu_seconds()
                    cell, run, direction = self.delay_run(10e6, 20, "loaded")
                    cpu = self.switch.cpu_seconds() - cpu
                self.push(link())
                with (self.event_log(saturated_path) if on else nullcontext()):
                    saturated = self.saturated_rate()
                row = {"log": on, "frames": cell["sent"], "p50_ms": cell.get("p50_ms"),
                       "p99_ms": cell.get("p99_ms"), "max_ms": cell.get("max_ms"),
                       "cpu_s_per_frame_us": cpu / max(1, cell["sent"]) * 1e6,
                       "saturated_pps": saturated.get("delivered_pps")}
                if on:
                    events = read_events(cell_path)
                    row["events"] = len(events)
                    row["log_check"] = check_timing(events).as_dict()
                    row["against_captures"] = against_captures(
                        events, run.arrivals, run.departures, direction).summary()
                    events = read_events(saturated_path)
                    row["saturated_events"] = len(events)
                    row["saturated_log_check"] = check_timing(events).as_dict()
                rows.append(row)
        return rows

    def close(self):
        self.controller.close()


def build_info():
    """The BMv2 build: version, and whether logging macros were compiled in."""
    binary = shutil.which("simple_switch_grpc")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    config = Path(binary).resolve().parent.parent / "include" / "bm" / "config.h"
    info = {"simple_switch_grpc": binary, "version": version,
            "timed_departure": has_timed_departure(binary)}
    if config.exists():
        text = config.read_text()
        for macro in ("LOG_DEBUG_ON", "LOG_TRACE_ON", "ELOG_ON"):
            info[macro] = bool(re.search(rf"^#define {macro}\b", text, re.M))
        info["logging_macros"] = info["LOG_DEBUG_ON"] or info["LOG_TRACE_ON"]
    else:
        info["logging_macros"] = None   # unknown: no bm/config.h beside the binary
    return info


def program_size(bmv2_json):
    """What BMv2 pays for on every pass of a program: it resets each metadata
    field (temporaries and locals included) when a packet arrives and on every
    recirculation, marks each header invalid when a pass ends, and walks the
    pipeline's tables and conditions."""
    program = json.loads(Path(bmv2_json).read_text())
    widths = {t["name"]: len(t["fields"]) for t in program["header_types"]}
    pipelines = {p["name"]: p for p in program["pipelines"]}
    return {"metadata_fields": sum(widths[h["header_type"]] for h in program["headers"]
                                   if h["metadata"]),
            "headers": sum(not h["metadata"] for h in program["headers"]),
            **{f"{name}_{kind}": len(pipelines[name][kind])
               for name in ("ingress", "egress") for kind in ("tables", "conditionals")}}


def machine():
    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")),
               platform.processor())
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(),
            "python": platform.python_version()}


RATES = (64e3, 1e6, 10e6, 20e6, 50e6)
# Offered frames/s of the saturated rate's ramp: plain forwarding takes about
# 100 000 here, the least link model 40 000-50 000, linkemu 20 000-30 000.
# Steps close enough that a switch's rate is never far above the last step it
# took in full (overloaded, BMv2 delivers far less than its rate); the
# quarter steps after the best one narrow it further.
SATURATION_RAMP = (10_000, 20_000, 30_000, 40_000, 50_000, 60_000, 70_000, 85_000, 100_000,
                   120_000, 150_000, 180_000, 220_000)
DELAYS_MS = (0, 20, 300)
# Offered load against the link rate. The capacity curve's link is busy, not
# loaded: it holds about rate x delay / frame size, where a loaded link's
# router queue would set the count whatever its rate.
OFFERED = {"loaded": 1.25, "busy": BUSY}
CAPACITY_RATES = (1e6, 2e6, 5e6, 10e6, 20e6, 50e6, 100e6, 200e6)


def delay_grid(quick):
    """The (rate, delay) of the delay cells."""
    return [(rate, delay) for rate in ((64e3, 10e6) if quick else RATES)
            for delay in ((20,) if quick else DELAYS_MS)]


@contextmanager
def off_switch_core(switch):
    """This process (its frames and captures) on the cores the switch leaves
    free, and back where it was afterwards: the next switch takes its core
    from this process's cores, and must not land on the traffic's."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, switch.other_cores())
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def run_linkemu(quick):
    results = {}
    with veth_testbed(LAYOUT, link(), *LINKEMU) as (switch, peers), off_switch_core(switch):
        bench = Bench(switch, peers, quick)
        try:
            bench.warm_up()
            results["delay"] = [bench.delay_cell(rate, delay, load)
                                for rate, delay in delay_grid(quick)
                                for load in ("idle", "loaded")]
            results["capacity_curve"] = bench.capacity_curve()
            results["arq"] = bench.arq_holds()
            results["arrivals_among_held"] = bench.arrivals_among_held()
            results["loss"] = bench.loss_fidelity()
            results["state_change"] = bench.state_changes()
            results["zero_delay"] = bench.zero_delay_throughput(link())
            results["feature_costs"] = bench.feature_costs()
            results["held_cpu"] = bench.held_cpu()
            results["link_order"] = bench.link_order_cost()
            results["behind_retransmission"] = bench.behind_retransmission()
            results["event_log"] = bench.event_log_cost()
            # Last: beyond about 1000 held linkemu's loop loses frames.
            results["hold_floor"] = bench.hold_floor(link(delay="1s"))
            results["warnings"] = bench.warnings
        finally:
            bench.close()
    return results


def configure_lanes(queues, source=ROOT / "bench" / "lanes.p4"):
    """bench/lanes.p4's queues and mirrors: each lane (its LANE lines: port
    452 + 4 J, mirror J + 1) at one frame per period, the spin port (mirror
    15) and port 2 (mirror 16), every queue deep enough for every frame
    held."""
    lanes = [(int(j), int(period)) for j, period in
             re.findall(r"^\s*LANE\((\d+), (\d+)\)\s*$", source.read_text(), re.MULTILINE)]
    for j, period_us in lanes:
        port = 452 + 4 * j
        queues.set_depth(port, LANE_DEPTH)
        queues.set_rate(port, 1_000_000 // period_us)
        queues.add_mirror(j + 1, port)
    for mirror, port in ((15, 448), (16, 2)):
        queues.set_depth(port, LANE_DEPTH)
        queues.add_mirror(mirror, port)


def run_baseline(quick):
    results = {}
    with veth_switch([1, 2]) as (switch, peers), off_switch_core(switch):
        with Switch(switch.grpc_address) as controller:
            controller.set_pipeline(*BASELINE)
        bench = Bench(switch, peers, quick, linkemu=False)
        try:
            results["wake"] = wake_lateness(switch.cpu)
            paced(switch, peers, [(i * 0.0004, SIZE) for i in range(300)], 0.5)  # warm up
            run = paced(switch, peers, [(i * 0.002, SIZE) for i in range(1000 if not quick
                                                                        else 300)], 0.5)
            results["latency"] = {**percentiles(run.latencies()),
                                  "latencies_ms": [round(x * 1e3, 4) for x in run.latencies()]}
            results["zero_delay"] = bench.zero_delay_throughput(None)
            results["busy_forwarding"] = bench.forwarded_busy()
            bench.load(SHAPE_BASELINE)
            results["shape"] = {"saturated": bench.saturated_rate(),
                                "hold_floor": bench.hold_floor(None)}
            # The least link model, in linkemu's loaded cells up to the targets' rate.
            bench.load(MINIMAL_BASELINE, minimal_link_entries)
            bench.warm_up()
            results["minimal_link"] = {
                "delay": [bench.delay_cell(rate, delay, "loaded")
                          for rate, delay in delay_grid(quick) if rate <= TARGET_RATE_BPS],
                "zero_delay": bench.zero_delay_throughput(link())}
            # linkemu's plain arrival in the least link model's form.
            bench.load(PLAIN_BASELINE, plain_arrival_entries)
            bench.warm_up()
            results["plain_arrival"] = {"zero_delay": bench.zero_delay_throughput(link())}
            bench.load(HOLD_BASELINE)
            results["hold_floor"] = bench.hold_floor(None)
            results["held_cpu"] = bench.held_cpu(hold_us=2_000_000)
            results["link_order"] = bench.link_order_cost((("any order", None),))
            bench.load(LANES_BASELINE, queues=configure_lanes)
            results["lanes"] = {"hold_floor": bench.hold_floor(None),
                                "held_cpu": bench.held_cpu(hold_us=2_000_000),
                                "link_order": bench.link_order_cost((("any order", None),))}
            bench.load(LANES_IN_ORDER_BASELINE, queues=configure_lanes)
            results["lanes_in_order"] = {
                "held_cpu": bench.held_cpu(hold_us=2_000_000),
                "link_order": bench.link_order_cost((("link order", None),))}
        finally:
            bench.close()
    return results


def run_tcp(quick):
    """iperf3 in Mininet through the TCP targets' profiles, on plain
    forwarding, the least link model and linkemu, each on a switch of its own
    (bench/tcp_fidelity.py)."""
    try:   # Mininet is optional: the veth measurements above need none
        import mininet.net  # noqa: F401
    except ImportError as error:
        return {"skipped": f"Mininet is not installed ({error})"}
    from tcp_fidelity import measure
    rows = []
    for profile in TCP_PROFILES[:1] if quick else TCP_PROFILES:
        for program in ("forward", "minimal_link", "linkemu"):
            with tempfile.TemporaryDirectory() as workdir:
                rows.append(measure(profile, 5 if quick else 15, workdir, program))
    return {"runs": rows}


def run_side_by_side(quick):
    """The S-WWW page with one network at a time and with a network a core
    side by side (bench/side_by_side.py)."""
    try:
        import mininet.net  # noqa: F401
    except ImportError as error:
        return {"skipped": f"Mininet is not installed ({error})"}
    from side_by_side import measure
    return measure(4 if quick else 8)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer cells and frames")
    parser.add_argument("--out", help="results folder (default results/bench-DATE)")
    args = parser.parse_args(argv)
    leftovers.exit_on_termination()
    for path in (path for paths in PROGRAMS.values() for path in paths):
        if not path.exists():
            print(f"{path} is missing: run 'make build'", file=sys.stderr)
            return 2
    out = Path(args.out or ROOT / "results" / f"bench-{time.strftime('%Y%m%d-%H%M%S')}")
    started = time.strftime("%Y-%m-%d %H:%M:%S %z")
    report = {"date": started, "quick": args.quick, "machine": machine(), "bmv2": build_info(),
              "programs": {name: program_size(json_path)
                           for name, (_, json_path) in PROGRAMS.items()}}
    if report["bmv2"]["logging_macros"]:
        print("WARNING: BMv2 was built with logging macros: these figures are meaningless",
              file=sys.stderr)
    report["baseline"] = run_baseline(args.quick)
    report["linkemu"] = run_linkemu(args.quick)
    report["tcp"] = run_tcp(args.quick)
    report["side_by_side"] = run_side_by_side(args.quick)
    write_report(report, out)
    print(f"report in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
