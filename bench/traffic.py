"""Synthetic traffic through a switch on veth pairs, measured where it enters
and leaves the switch.

Frames go out of a raw socket on the fixed side's test end (port 1) and are
captured by tcpdump on the switch's own interfaces, inbound on port 1 and
outbound on port 2: both captures use the kernel's clock, so each frame's
time through the switch is measured in one clock, free of the sender's
scheduling. Every frame carries a sequence number that identifies it, then
the time bench/hold.p4 holds it (linkemu ignores it).
"""

import itertools
import socket
import struct
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from linkemu.testbed.capture import Capture

ETHER_TYPE = "88b5"   # IEEE local experimental: no host stack answers it


def frame(seq, size, hold_us=0):
    head = bytes.fromhex("000000000002" "000000000001" + ETHER_TYPE)
    return head + struct.pack("!II", seq, hold_us) + bytes(size - len(head) - 8)


def frame_seq(data):
    return struct.unpack("!I", data[14:18])[0]


def is_bench_frame(data):
    return data[12:14] == bytes.fromhex(ETHER_TYPE)


@dataclass
class Run:
    """What entered and what left the switch, as fidelity.Frames."""

    arrivals: list
    departures: list

    def latencies(self, since=None):
        """Seconds through the switch of each delivered frame (that came in
        at `since` or later)."""
        entered = {frame_seq(f.data): f.ts for f in self.arrivals
                   if since is None or f.ts >= since}
        return [f.ts - entered[frame_seq(f.data)] for f in self.departures
                if frame_seq(f.data) in entered]

    def peak_inside(self):
        """The most frames inside the switch at once, of those that left it:
        how many a hold loop had to keep going round."""
        left = {frame_seq(f.data): f.ts for f in self.departures}
        steps = sorted([(f.ts, 1) for f in self.arrivals if frame_seq(f.data) in left] +
                       [(ts, -1) for ts in left.values()])
        inside = peak = 0
        for _, step in steps:
            inside += step
            peak = max(peak, inside)
        return peak

    def out_of_order(self):
        """Departures that left after a frame that came in later."""
        entered = {frame_seq(f.data): i for i, f in enumerate(self.arrivals)}
        places = [entered[frame_seq(f.data)] for f in sorted(self.departures, key=lambda f: f.ts)
                  if frame_seq(f.data) in entered]
        return sum(place < latest for place, latest in
                   zip(places[1:], itertools.accumulate(places, max)))

    def stalls(self, hold_s, least_s=0.001):
        """Spells of `least_s` or more in which a frame that left was due
        (`hold_s` after it came) and still inside while none left: what
        keeps a release behind its due instants, as a list of seconds."""
        entered = {frame_seq(f.data): f.ts for f in self.arrivals}
        left = sorted((f.ts, entered[frame_seq(f.data)] + hold_s) for f in self.departures
                      if frame_seq(f.data) in entered)
        # the earliest due of the frames still inside before each departure
        inside_due = list(itertools.accumulate(reversed([d for _, d in left]), min))[::-1]
        spells, last = [], None
        for (ts, _), due in zip(left, inside_due):
            start = due if last is None else max(last, due)
            if ts - start >= least_s:
                spells.append(ts - start)
            last = ts
        return spells


def send(interface, schedule, marks):
    """Sends each frame of `schedule` [(offset s, frame)] from a raw socket on
    `interface` at its offset, calling marks[i]() just before frame i goes.
    Paced by sleeping, then spinning for the last 0.2 ms."""
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as sender:
        sender.bind((interface, 0))
        start = time.monotonic()
        for i, (offset, payload) in enumerate(schedule):
            due = start + offset
            while (left := due - time.monotonic()) > 0:
                if left > 0.0002:
                    time.sleep(left - 0.0002)
            if i in marks:
                marks[i]()
            sender.send(payload)


def packets_counted(interface, direction):
    """The kernel's count of packets `interface` sent ("tx") or received ("rx")."""
    return int(Path(f"/sys/class/net/{interface}/statistics/{direction}_packets").read_text())


def flood(peers, pps, seconds, size=64):
    """Frames/s offered and delivered while `size` B frames are sent at `pps`
    for `seconds` (or as fast as this process can, if slower), over the
    steady middle of the run (from 0.5 s to 0.2 s before the end). Counted by
    the kernel on the two test ends, not captured: under a flood tcpdump,
    which shares the sender's cores, loses frames and the counters do not."""
    marks = {}

    def mark(name):
        marks[name] = (time.monotonic(), packets_counted(peers[1], "tx"),
                       packets_counted(peers[2], "rx"))

    count = int(pps * seconds)
    send(peers[1], [(i / pps, frame(i, size)) for i in range(count)],
         {int(0.5 * pps): lambda: mark("begin"), count - int(0.2 * pps): lambda: mark("end")})
    (t0, sent0, got0), (t1, sent1, got1) = marks["begin"], marks["end"]
    return {"offered_pps": (sent1 - sent0) / (t1 - t0),
            "delivered_pps": (got1 - got0) / (t1 - t0)}


def paced(switch, peers, schedule, wait, at_start=None, hold_us=0, marks=None):
    """Sends frames at `schedule` [(offset s, size)] and waits `wait` s more;
    calls at_start() just before the first frame goes, and marks[i]() just
    before frame i.

    Returns a Run."""
    with tempfile.TemporaryDirectory() as workdir:
        captures = [Capture(switch.ports[1], "in", Path(workdir) / "in.pcap", snaplen=64),
                    Capture(switch.ports[2], "out", Path(workdir) / "out.pcap", snaplen=64)]
        for capture in captures:
            capture.start(settle=0.3)
        try:
            send(peers[1], [(offset, frame(i, size, hold_us))
                            for i, (offset, size) in enumerate(schedule)],
                 {**(marks or {}), **({0: at_start} if at_start else {})})
            time.sleep(wait)
        finally:
            for capture in captures:
                capture.stop()
        arrivals, departures = ([f for f in c.frames() if is_bench_frame(f.data)]
                                for c in captures)
    return Run(arrivals, departures)
