// SPDX-License-Identifier: GPL-2.0
/* reno_classic: Linux 2.4's Reno as a TCP congestion control in BPF
 * (struct_ops), for hosts that should grow their window as the studies' did.
 *
 * Where it departs from today's reno (net/ipv4/tcp_cong.c): 2.4's
 * tcp_cong_avoid (net/ipv4/tcp_input.c) counted ACKs, not the segments they
 * acknowledge. In slow start it added one segment per ACK; today's
 * tcp_slow_start(tp, acked) adds `acked` (appropriate byte counting). Against
 * a receiver that ACKs every other segment, 2.4's window grows 1.5 times a
 * round trip, today's 2 times. In congestion avoidance it added one segment
 * per window of ACKs, so half as fast as today against delayed ACKs.
 * ssthresh is 2.4's tcp_recalc_ssthresh, the same as today's. No HyStart,
 * no CUBIC: none of them is in 2.4.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "GPL";

static struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

/* Today's tcp_is_cwnd_limited: grow only a window the sender fills (2.4
 * asked that the segments in flight before the ACK filled it). */
static bool cwnd_limited(const struct tcp_sock *tp)
{
	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return true;
	return tp->snd_cwnd < tp->snd_ssthresh && tp->snd_cwnd < 2 * tp->max_packets_out;
}

SEC("struct_ops")
void BPF_PROG(reno_classic_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!cwnd_limited(tp))
		return;
	/* 2.4: slow start while cwnd <= ssthresh (today: cwnd < ssthresh). */
	if (tp->snd_cwnd <= tp->snd_ssthresh) {
		/* One segment per ACK, whatever `acked` is. */
		if (tp->snd_cwnd < tp->snd_cwnd_clamp)
			tp->snd_cwnd++;
		return;
	}
	/* One segment per snd_cwnd + 1 ACKs, as 2.4 counted. */
	if (tp->snd_cwnd_cnt >= tp->snd_cwnd) {
		if (tp->snd_cwnd < tp->snd_cwnd_clamp)
			tp->snd_cwnd++;
		tp->snd_cwnd_cnt = 0;
	} else {
		tp->snd_cwnd_cnt++;
	}
}

SEC("struct_ops")
__u32 BPF_PROG(reno_classic_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return tp->snd_cwnd >> 1 > 2 ? tp->snd_cwnd >> 1 : 2;
}

/* Today's reno undo (2.4 had its own, tcp_undo_cwnd). */
SEC("struct_ops")
__u32 BPF_PROG(reno_classic_undo_cwnd, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return tp->snd_cwnd > tp->prior_cwnd ? tp->snd_cwnd : tp->prior_cwnd;
}

SEC(".struct_ops")
struct tcp_congestion_ops reno_classic = {
	.cong_avoid = (void *)reno_classic_cong_avoid,
	.ssthresh = (void *)reno_classic_ssthresh,
	.undo_cwnd = (void *)reno_classic_undo_cwnd,
	.name = "reno_classic",
};
