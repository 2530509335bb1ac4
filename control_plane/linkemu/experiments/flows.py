"""Connections and flows measured from packet captures.

The captures are taken on the switch's port of each host (tcpdump, Ethernet,
any snaplen): a host's capture shows what it sent, before the link, and what
it received, after it, all on one clock. Lengths come from the IP header,
never from the captured bytes. Only IPv4 TCP and UDP are read.
"""

import socket
from collections import Counter
from dataclasses import dataclass

import dpkt
import numpy as np

SEQ_SPACE = 1 << 32
ECN_CE = 3


@dataclass(frozen=True)
class Packet:
    ts: float
    src: str
    dst: str
    proto: str             # "tcp" or "udp"
    sport: int
    dport: int
    ip_id: int
    ip_len: int
    ecn: int
    payload_len: int
    flags: int = 0         # TCP
    seq: int = 0
    ack: int = 0
    window: int = 0
    sack_blocks: tuple = ()
    tsval: int = None
    tsecr: int = None
    udp_seq: int = None    # UDP: the payload's first 4 bytes (linkemu.experiments.apps)

    def has(self, flag):
        return bool(self.flags & flag)


def _tcp_options(tcp):
    sack, tsval, tsecr = [], None, None
    try:
        options = dpkt.tcp.parse_opts(tcp.opts)
    except (dpkt.UnpackError, ValueError):
        return (), None, None
    for kind, data in options:
        if kind == dpkt.tcp.TCP_OPT_SACK:
            sack += [(int.from_bytes(data[i:i + 4], "big"),
                      int.from_bytes(data[i + 4:i + 8], "big"))
                     for i in range(0, len(data) - 7, 8)]
        elif kind == dpkt.tcp.TCP_OPT_TIMESTAMP and len(data) == 8:
            tsval, tsecr = int.from_bytes(data[:4], "big"), int.from_bytes(data[4:], "big")
    return tuple(sack), tsval, tsecr


def _packet(ts, frame):
    eth = dpkt.ethernet.Ethernet(frame)
    ip = eth.data
    if not isinstance(ip, dpkt.ip.IP) or ip.v != 4:
        return None
    common = dict(ts=ts, src=socket.inet_ntoa(ip.src), dst=socket.inet_ntoa(ip.dst),
                  ip_id=ip.id, ip_len=ip.len, ecn=ip.tos & 3)
    l4 = ip.data
    if isinstance(l4, dpkt.tcp.TCP):
        sack, tsval, tsecr = _tcp_options(l4)
        return Packet(proto="tcp", sport=l4.sport, dport=l4.dport,
                      payload_len=ip.len - ip.hl * 4 - l4.off * 4, flags=l4.flags,
                      seq=l4.seq, ack=l4.ack, window=l4.win, sack_blocks=sack,
                      tsval=tsval, tsecr=tsecr, **common)
    if isinstance(l4, dpkt.udp.UDP):
        payload = bytes(l4.data)
        return Packet(proto="udp", sport=l4.sport, dport=l4.dport,
                      payload_len=ip.len - ip.hl * 4 - 8,
                      udp_seq=int.from_bytes(payload[:4], "big") if len(payload) >= 4 else None,
                      **common)
    return None


def read_packets(path):
    """Every IPv4 TCP and UDP packet of a pcap file, in capture order."""
    packets = []
    with open(path, "rb") as f:
        for ts, frame in dpkt.pcap.Reader(f):
            try:
                packet = _packet(float(ts), frame)
            except (dpkt.UnpackError, dpkt.NeedData):
                continue
            if packet is not None:
                packets.append(packet)
    return packets


# -- TCP

@dataclass(frozen=True)
class SegmentEvent:
    ts: float
    seq_offset: int        # from the first data byte
    length: int
    kind: str              # "sent", "retransmitted" or "lost" (on the link)


@dataclass(frozen=True)
class DataStats:
    """One direction's data, as its sender sent it and its receiver got it.

    retransmissions: segments (in the sender's capture) carrying bytes sent
    before; lost: copies that never appear in the receiver's capture;
    spurious_retransmissions: retransmissions all of whose bytes had reached
    the receiver's capture before the retransmission left; spurious_timeouts:
    those of them not preceded by three duplicate ACKs (not fast
    retransmits); dup_acks: ACKs seen by the sender that repeat the last
    ACK without data, SYN or FIN, with the same window or with SACK blocks,
    while data is outstanding; ce_marks: data arriving marked CE."""

    bytes: int = 0
    segments_sent: int = 0
    retransmissions: int = 0
    lost: int = 0
    spurious_retransmissions: int = 0
    spurious_timeouts: int = 0
    dup_acks: int = 0
    ce_marks: int = 0
    segments: tuple = ()
    acks: tuple = ()       # (ts, acknowledged offset) as the sender saw them


@dataclass(frozen=True)
class Connection:
    client: tuple          # (ip, port): the SYN's sender
    server: tuple
    syn_unix: float        # client's first SYN, at the client
    server_fin_unix: float  # server's FIN reaching the client
    fin_ack_unix: float    # server's ACK of the client's FIN reaching the client
    down: DataStats        # server -> client
    up: DataStats          # client -> server

    @property
    def complete(self):
        return self.syn_unix is not None and self.fin_ack_unix is not None

    @property
    def elapsed_s(self):
        return self.fin_ack_unix - self.syn_unix if self.complete else None

    @property
    def throughput_bps(self):
        return 8 * self.down.bytes / self.elapsed_s if self.complete and self.elapsed_s else None


def _between(packets, src, dst):
    return [p for p in packets if p.proto == "tcp" and (p.src, p.sport) == src
            and (p.dst, p.dport) == dst]


def _offset(value, isn):
    """Position relative to the first data byte (after the SYN), mod 2**32."""
    return (value - isn - 1) % SEQ_SPACE


def _arrived_before(arrivals, start, end, before):
    """Whether [start, end) had fully arrived at the receiver before `before`."""
    covered = start
    for ts, s, e in sorted((a for a in arrivals if a[0] < before), key=lambda a: a[1]):
        if s <= covered < e:
            covered = e
        if covered >= end:
            return True
    return covered >= end


def _direction(sender_capture, receiver_capture, src, dst, isn):
    """DataStats of the data from src to dst; isn: src's initial sequence number."""
    if isn is None:
        return DataStats()
    received = [p for p in _between(receiver_capture, src, dst) if p.payload_len > 0]
    arrived = Counter((p.seq, p.payload_len, p.ip_id) for p in received)
    arrivals = [(p.ts, _offset(p.seq, isn), _offset(p.seq, isn) + p.payload_len)
                for p in received]
    events, acks = [], []
    highest = 0
    retransmissions = spurious = spurious_timeouts = dup_acks = 0
    last_ack, last_window, dups_for = None, None, Counter()
    for p in sender_capture:
        if p.proto != "tcp":
            continue
        if (p.src, p.sport) == src and (p.dst, p.dport) == dst and p.payload_len > 0:
            start = _offset(p.seq, isn)
            end = start + p.payload_len
            retransmitted = start < highest
            key = (p.seq, p.payload_len, p.ip_id)
            gone = arrived[key] == 0
            if not gone:
                arrived[key] -= 1
            if retransmitted:
                retransmissions += 1
                if _arrived_before(arrivals, start, end, p.ts):
                    spurious += 1
                    spurious_timeouts += dups_for[start] < 3
                dups_for[start] = 0
            highest = max(highest, end)
            events.append(SegmentEvent(p.ts, start, p.payload_len, "lost" if gone else
                                       "retransmitted" if retransmitted else "sent"))
        elif (p.src, p.sport) == dst and (p.dst, p.dport) == src and p.has(dpkt.tcp.TH_ACK):
            acked = _offset(p.ack, isn)
            if acked > highest + 1:  # the handshake's ACK, before any data
                continue
            pure = p.payload_len == 0 and not p.flags & (dpkt.tcp.TH_SYN | dpkt.tcp.TH_FIN)
            if (pure and acked == last_ack and acked < highest
                    and (p.window == last_window or p.sack_blocks)):
                dup_acks += 1
                dups_for[acked] += 1
            last_ack, last_window = acked, p.window
            acks.append((p.ts, acked))
    ce = sum(1 for p in received if p.ecn == ECN_CE)
    return DataStats(bytes=highest, segments_sent=len(events), retransmissions=retransmissions,
                     lost=sum(1 for e in events if e.kind == "lost"),
                     spurious_retransmissions=spurious, spurious_timeouts=spurious_timeouts,
                     dup_acks=dup_acks, ce_marks=ce, segments=tuple(events), acks=tuple(acks))


def _first(packets, condition):
    return next((p for p in packets if condition(p)), None)


def tcp_connections(client_packets, server_packets):
    """Every TCP connection whose SYN is in either capture; `client_packets`
    is the capture at the client's port, `server_packets` at the server's."""
    syns = {}
    for p in list(client_packets) + list(server_packets):
        if p.proto == "tcp" and p.has(dpkt.tcp.TH_SYN) and not p.has(dpkt.tcp.TH_ACK):
            syns.setdefault(((p.src, p.sport), (p.dst, p.dport)), p.seq)
    connections = []
    for (client, server), client_isn in syns.items():
        out = _between(client_packets, client, server)
        back = _between(client_packets, server, client)
        synack = _first(back + _between(server_packets, server, client),
                        lambda p: p.has(dpkt.tcp.TH_SYN) and p.has(dpkt.tcp.TH_ACK))
        server_isn = synack.seq if synack else None
        syn = _first(out, lambda p: p.has(dpkt.tcp.TH_SYN))
        server_fin = _first(back, lambda p: p.has(dpkt.tcp.TH_FIN))
        client_fin = _first(out, lambda p: p.has(dpkt.tcp.TH_FIN))
        fin_ack = None
        if client_fin is not None:
            wanted = _offset(client_fin.seq, client_isn) + client_fin.payload_len + 1
            fin_ack = _first(back, lambda p: p.ts >= client_fin.ts and p.has(dpkt.tcp.TH_ACK)
                             and _offset(p.ack, client_isn) >= wanted
                             and _offset(p.ack, client_isn) < SEQ_SPACE // 2)
        connections.append(Connection(
            client=client, server=server, syn_unix=syn.ts if syn else None,
            server_fin_unix=server_fin.ts if server_fin else None,
            fin_ack_unix=fin_ack.ts if fin_ack else None,
            down=_direction(server_packets, client_packets, server, client, server_isn),
            up=_direction(client_packets, server_packets, client, server, client_isn)))
    return sorted(connections, key=lambda c: (c.syn_unix is None, c.syn_unix or 0))


# -- UDP

@dataclass(frozen=True)
class UdpFlow:
    src: str
    sport: int
    dst: str
    dport: int
    sent: int
    received: int
    lost: int
    received_bytes: int
    first_arrival_unix: float
    last_arrival_unix: float
    spacings: tuple        # seconds between arrivals of consecutive sequence numbers

    @property
    def throughput_bps(self):
        if self.received < 2 or self.last_arrival_unix == self.first_arrival_unix:
            return None
        return 8 * self.received_bytes / (self.last_arrival_unix - self.first_arrival_unix)

    def spacing_summary(self):
        """Median, 75th and 90th percentile and maximum spacing, in seconds."""
        if not self.spacings:
            return {}
        values = np.array(self.spacings)
        return {"median": float(np.median(values)), "p75": float(np.percentile(values, 75)),
                "p90": float(np.percentile(values, 90)), "max": float(values.max())}


def _udp_key(p):
    return (p.src, p.sport, p.dst, p.dport) if p.proto == "udp" else None


def _udp_id(p):
    return p.udp_seq if p.udp_seq is not None else p.ip_id


def udp_flows(sender_packets, receiver_packets):
    """Each UDP flow of `sender_packets`, as the receiver's capture got it.
    Packets are told apart by the sequence number in their payload (the IP
    ID without one); a pair of arrivals spanning a loss gives no spacing."""
    keys = dict.fromkeys(_udp_key(p) for p in sender_packets if p.proto == "udp")
    flows = []
    for key in keys:
        sent = [p for p in sender_packets if _udp_key(p) == key]
        got = [p for p in receiver_packets if _udp_key(p) == key]
        spacings = tuple(b.ts - a.ts for a, b in zip(got, got[1:])
                         if _udp_id(b) == _udp_id(a) + 1)
        flows.append(UdpFlow(
            *key, sent=len(sent), received=len(got),
            lost=len({_udp_id(p) for p in sent} - {_udp_id(p) for p in got}),
            received_bytes=sum(p.payload_len for p in got),
            first_arrival_unix=got[0].ts if got else None,
            last_arrival_unix=got[-1].ts if got else None, spacings=spacings))
    return flows


# -- the link as a whole

def _identity(p):
    """What the switch never changes (unlike the TOS byte and checksums)."""
    return (p.src, p.dst, p.proto, p.ip_id, p.sport, p.dport,
            p.seq if p.proto == "tcp" else p.udp_seq, p.payload_len)


def _split(ingress, egress, src, dst):
    left = Counter(_identity(p) for p in egress if (p.src, p.dst) == (src, dst))
    carried = lost = 0
    for p in ingress:
        if (p.src, p.dst) != (src, dst):
            continue
        if left[_identity(p)] > 0:
            left[_identity(p)] -= 1
            carried += 1
        else:
            lost += 1
    return carried, lost


def link_losses(ingress_packets, egress_packets, src, dst):
    """Packets from `src` to `dst` captured entering the link and never leaving it."""
    return _split(ingress_packets, egress_packets, src, dst)[1]


def carried(ingress_packets, egress_packets, src, dst):
    """Packets from `src` to `dst` captured on both sides of the link."""
    return _split(ingress_packets, egress_packets, src, dst)[0]


def throughput_series(packets, src, dst, bin_s=1.0, start=None):
    """[(t, bit/s)]: payload bits from src to dst per bin, t from `start`
    (default the first such packet)."""
    own = [p for p in packets if (p.src, p.dst) == (src, dst)]
    if not own:
        return []
    origin = own[0].ts if start is None else start
    octets = Counter()
    for p in own:
        octets[int((p.ts - origin) // bin_s)] += p.payload_len
    return [(b * bin_s, 8 * octets[b] / bin_s) for b in range(min(octets), max(octets) + 1)]


# -- statistics

def jain_index(values):
    """(Σx)² / (n·Σx²): 1 when all are equal, 1/n when one takes all;
    all zeros count as equal (1.0)."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("Jain's index of no values")
    squares = sum(v * v for v in values)
    return 1.0 if squares == 0 else sum(values) ** 2 / (len(values) * squares)


def summary(values):
    """n, min, quartiles (linear interpolation), median, max and mean of the
    values that are not None."""
    present = np.array([v for v in values if v is not None], dtype=float)
    if present.size == 0:
        return {"n": 0}
    q1, median, q3 = np.percentile(present, [25, 50, 75])
    return {"n": int(present.size), "min": float(present.min()), "q1": float(q1),
            "median": float(median), "q3": float(q3), "max": float(present.max()),
            "mean": float(present.mean())}
