import socket

import dpkt
import pytest

from linkemu.experiments.flows import (carried, jain_index, link_losses, read_packets, summary,
                           tcp_connections, throughput_series, udp_flows)

CLIENT, SERVER = ("10.0.0.2", 40000), ("10.0.0.1", 5001)
SYN, ACK, FIN, PSH = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_FIN, dpkt.tcp.TH_PUSH


def tcp_frame(src, dst, flags, seq, ack=0, payload=0, ip_id=1, window=1000, tos=0,
              opts=b""):
    tcp = dpkt.tcp.TCP(sport=src[1], dport=dst[1], seq=seq % 2**32, ack=ack % 2**32,
                       flags=flags, win=window, opts=opts, data=b"d" * payload)
    tcp.off = (20 + len(opts)) // 4
    ip = dpkt.ip.IP(src=socket.inet_aton(src[0]), dst=socket.inet_aton(dst[0]),
                    p=dpkt.ip.IP_PROTO_TCP, id=ip_id, tos=tos, data=tcp)
    ip.len = 20 + len(bytes(tcp))
    return bytes(dpkt.ethernet.Ethernet(src=b"\x00" * 6, dst=b"\x01" * 6, data=ip))


def udp_frame(src, dst, seq, payload=100, ip_id=1):
    data = seq.to_bytes(4, "big") + b"\x00" * (payload - 4)
    udp = dpkt.udp.UDP(sport=src[1], dport=dst[1], data=data)
    udp.ulen = 8 + payload
    ip = dpkt.ip.IP(src=socket.inet_aton(src[0]), dst=socket.inet_aton(dst[0]),
                    p=dpkt.ip.IP_PROTO_UDP, id=ip_id, data=udp)
    ip.len = 28 + payload
    return bytes(dpkt.ethernet.Ethernet(src=b"\x00" * 6, dst=b"\x01" * 6, data=ip))


def pcap(path, frames, snaplen=65535):
    with open(path, "wb") as f:
        writer = dpkt.pcap.Writer(f, snaplen=snaplen)
        for ts, frame in frames:
            writer.writepkt(frame[:snaplen], ts=ts)
    return read_packets(path)


class Exchange:
    """A connection's frames in the client's and the server's captures: every
    frame leaves its sender at t and reaches the other end at t + delay."""

    def __init__(self, client_isn=1000, server_isn=5000, delay=0.1):
        self.c_isn, self.s_isn, self.delay = client_isn, server_isn, delay
        self.client, self.server = [], []
        self.ip_id = 0

    def send(self, t, from_server, flags, seq, ack, payload=0, lost=False, opts=b""):
        self.ip_id += 1
        src, dst = (SERVER, CLIENT) if from_server else (CLIENT, SERVER)
        frame = tcp_frame(src, dst, flags, seq, ack, payload, self.ip_id, opts=opts)
        near, far = (self.server, self.client) if from_server else (self.client, self.server)
        near.append((t, frame))
        if not lost:
            far.append((t + self.delay, frame))

    def handshake(self):
        c, s = self.c_isn, self.s_isn
        self.send(0.0, False, SYN, c, 0)
        self.send(0.1, True, SYN | ACK, s, c + 1)
        self.send(0.2, False, ACK, c + 1, s + 1)
        self.send(0.2, False, ACK | PSH, c + 1, s + 1, payload=350)

    def captures(self, tmp_path):
        return (pcap(tmp_path / "client.pcap", sorted(self.client, key=lambda x: x[0])),
                pcap(tmp_path / "server.pcap", sorted(self.server, key=lambda x: x[0])))


def close(x, t, data_end):
    """Server FIN at t, client's FIN after it arrives, server's ACK of it."""
    c, s = x.c_isn + 351, x.s_isn + 1 + data_end
    x.send(t, True, FIN | ACK, s, c)
    x.send(t + 0.1, False, FIN | ACK, c, s + 1)
    x.send(t + 0.2, True, ACK, s + 1, c + 1)


def test_complete_connection_elapsed_and_throughput(tmp_path):
    x = Exchange()
    x.handshake()
    s, c = x.s_isn + 1, x.c_isn + 351
    for i in range(4):
        x.send(0.3 + i * 0.01, True, ACK, s + 1000 * i, c, payload=1000)
    x.send(0.45, False, ACK, c, s + 4000)
    close(x, 0.5, 4000)
    connection, = tcp_connections(*x.captures(tmp_path))
    assert connection.client == CLIENT and connection.server == SERVER
    assert connection.syn_unix == 0.0
    assert connection.server_fin_unix == pytest.approx(0.6)
    assert connection.fin_ack_unix == pytest.approx(0.8)  # server ACK at 0.7, +0.1
    assert connection.elapsed_s == pytest.approx(0.8)
    assert connection.down.bytes == 4000 and connection.up.bytes == 350
    assert connection.throughput_bps == pytest.approx(8 * 4000 / 0.8)
    assert (connection.down.retransmissions, connection.down.lost) == (0, 0)
    assert [e.kind for e in connection.down.segments] == ["sent"] * 4


def lossy_transfer(x, isn_payload=1000):
    """Segment 2 of 5 is lost; three dup ACKs; fast retransmission."""
    x.handshake()
    s, c = x.s_isn + 1, x.c_isn + 351
    for i in range(5):
        x.send(0.3 + i * 0.01, True, ACK, s + 1000 * i, c, payload=1000, lost=(i == 1))
    x.send(0.41, False, ACK, c, s + 1000)
    for t in (0.43, 0.44, 0.45):
        x.send(t, False, ACK, c, s + 1000)
    x.send(0.56, True, ACK, s + 1000, c, payload=1000)
    x.send(0.67, False, ACK, c, s + 5000)
    close(x, 0.7, 5000)


def test_loss_then_fast_retransmit(tmp_path):
    x = Exchange()
    lossy_transfer(x)
    down = tcp_connections(*x.captures(tmp_path))[0].down
    assert (down.lost, down.retransmissions, down.dup_acks) == (1, 1, 3)
    assert (down.spurious_retransmissions, down.spurious_timeouts) == (0, 0)
    assert [e.kind for e in down.segments] == ["sent", "lost", "sent", "sent", "sent",
                                               "retransmitted"]
    assert down.bytes == 5000


def test_spurious_timeout(tmp_path):
    """The segment arrived; its ACK was late; the RTO resent it anyway."""
    x = Exchange()
    x.handshake()
    s, c = x.s_isn + 1, x.c_isn + 351
    x.send(0.3, True, ACK, s, c, payload=1000)
    x.send(1.5, True, ACK, s, c, payload=1000)  # RTO, the original arrived at 0.4
    x.send(1.55, False, ACK, c, s + 1000)
    close(x, 1.7, 1000)
    down = tcp_connections(*x.captures(tmp_path))[0].down
    assert (down.retransmissions, down.spurious_retransmissions, down.spurious_timeouts,
            down.lost) == (1, 1, 1, 0)


def test_sequence_numbers_wrap_around(tmp_path):
    x = Exchange(client_isn=2**32 - 100, server_isn=2**32 - 1500)
    lossy_transfer(x)
    connection = tcp_connections(*x.captures(tmp_path))[0]
    assert connection.down.bytes == 5000 and connection.up.bytes == 350
    assert (connection.down.lost, connection.down.retransmissions) == (1, 1)
    assert connection.complete


def test_sack_carrying_acks_are_duplicates(tmp_path):
    x = Exchange()
    x.handshake()
    s, c = x.s_isn + 1, x.c_isn + 351
    for i in range(3):
        x.send(0.3 + i * 0.01, True, ACK, s + 1000 * i, c, payload=1000, lost=(i == 0))
    sack = (s + 1000).to_bytes(4, "big") + (s + 3000).to_bytes(4, "big")
    opts = b"\x01\x01\x05\x0a" + sack
    x.send(0.40, False, ACK, c, s, opts=opts)
    x.send(0.41, False, ACK, c, s, opts=opts)
    down = tcp_connections(*x.captures(tmp_path))[0].down
    assert down.dup_acks == 2  # both repeat the request's ACK of 0


def test_ce_marks_are_counted_at_the_receiver(tmp_path):
    client = pcap(tmp_path / "c.pcap", [
        (0.0, tcp_frame(CLIENT, SERVER, SYN, 10)),
        (0.2, tcp_frame(SERVER, CLIENT, SYN | ACK, 20, 11)),
        (0.3, tcp_frame(SERVER, CLIENT, ACK, 21, 11, payload=100, ip_id=7, tos=3))])
    server = pcap(tmp_path / "s.pcap", [
        (0.1, tcp_frame(CLIENT, SERVER, SYN, 10)),
        (0.1, tcp_frame(SERVER, CLIENT, SYN | ACK, 20, 11)),
        (0.2, tcp_frame(SERVER, CLIENT, ACK, 21, 11, payload=100, ip_id=7, tos=2))])
    connection, = tcp_connections(client, server)
    assert connection.down.ce_marks == 1 and connection.down.lost == 0
    assert not connection.complete and connection.elapsed_s is None


def test_udp_spacing_skips_pairs_around_a_loss(tmp_path):
    src, dst = ("10.0.0.1", 7000), ("10.0.0.2", 5001)
    sent = pcap(tmp_path / "s.pcap", [(i * 0.1, udp_frame(src, dst, i, ip_id=i))
                                       for i in range(6)])
    arrivals = {0: 1.0, 1: 1.1, 2: 1.3, 4: 1.5, 5: 1.55}  # 3 lost
    got = pcap(tmp_path / "r.pcap", [(t, udp_frame(src, dst, i, ip_id=i))
                                      for i, t in arrivals.items()])
    flow, = udp_flows(sent, got)
    assert (flow.sent, flow.received, flow.lost) == (6, 5, 1)
    assert flow.spacings == pytest.approx((0.1, 0.2, 0.05))
    assert flow.throughput_bps == pytest.approx(8 * 500 / 0.55)
    spacing = flow.spacing_summary()
    assert spacing["median"] == pytest.approx(0.1) and spacing["max"] == pytest.approx(0.2)
    assert spacing["p90"] == pytest.approx(0.18)


def test_link_losses_ignore_what_the_switch_rewrites(tmp_path):
    a, b = ("10.0.0.1", 1), ("10.0.0.2", 2)
    ingress = pcap(tmp_path / "i.pcap", [(0.0, tcp_frame(a, b, ACK, 1, 1, 10, ip_id=1)),
                                         (0.1, tcp_frame(a, b, ACK, 11, 1, 10, ip_id=2)),
                                         (0.2, tcp_frame(b, a, ACK, 1, 1, 10, ip_id=3))])
    egress = pcap(tmp_path / "e.pcap", [(0.5, tcp_frame(a, b, ACK, 1, 1, 10, ip_id=1, tos=3))])
    assert link_losses(ingress, egress, "10.0.0.1", "10.0.0.2") == 1
    assert carried(ingress, egress, "10.0.0.1", "10.0.0.2") == 1


def test_truncated_frames_keep_their_lengths_and_others_are_ignored(tmp_path):
    arp = bytes(dpkt.ethernet.Ethernet(type=dpkt.ethernet.ETH_TYPE_ARP, data=b"\x00" * 28))
    packets = pcap(tmp_path / "t.pcap", [
        (0.0, tcp_frame(CLIENT, SERVER, ACK, 1, 1, payload=1400)), (0.1, arp)], snaplen=96)
    assert len(packets) == 1 and packets[0].payload_len == 1400


def test_throughput_series_bins_payload_bits():
    packets = pcap_free_packets()
    series = throughput_series(packets, "10.0.0.1", "10.0.0.2", bin_s=1.0, start=10.0)
    assert series == [(0.0, 8 * 200.0), (1.0, 0.0), (2.0, 8 * 100.0)]


def pcap_free_packets():
    from linkemu.experiments.flows import Packet
    common = dict(src="10.0.0.1", dst="10.0.0.2", proto="udp", sport=1, dport=2, ip_id=0,
                  ip_len=128, ecn=0)
    return [Packet(ts=10.1, payload_len=100, **common), Packet(ts=10.9, payload_len=100, **common),
            Packet(ts=12.5, payload_len=100, **common)]


def test_jain_index():
    assert jain_index([1, 1]) == 1.0
    assert jain_index([1, 0]) == 0.5
    assert jain_index([0, 0, 0]) == 1.0
    assert jain_index([3, 1]) == pytest.approx(16 / 20)
    with pytest.raises(ValueError):
        jain_index([])


def test_summary_over_replications():
    stats = summary([4, None, 1, 3, 2])
    assert stats == {"n": 4, "min": 1.0, "q1": 1.75, "median": 2.5, "q3": 3.25, "max": 4.0,
                     "mean": 2.5}
    assert summary([None]) == {"n": 0}
