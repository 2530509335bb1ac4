// RED (Floyd and Jacobson) on a class's router queue, without floating point.
//
// The average is an EWMA in Q.16 of the queue in packets or bytes, updated at
// each arrival; after an idle period it decays by (1 - w)^m, m the idle time in
// mean packet transmissions, from a control-plane table on the idle time. The
// control plane also precomputes the marking curve p_b(avg) into a range
// table, with "drop everything" above max_th (2 x max_th when gentle). Between
// marks, a packet is signalled when count x p_b reaches a uniform random R
// drawn after the previous mark: the spacing of classic RED's
// p_a = p_b / (1 - count x p_b), uniform on 1 .. 1/p_b. Each push of a
// profile starts RED afresh: state of another push's generation reads as a
// new queue's.
#ifndef LINKEMU_RED_P4
#define LINKEMU_RED_P4

#include "../headers.p4"

// w: the control's working values, the caller's (on BMv2 in a header:
// docs/bmv2-costs.md).
control Red(in bit<32> queue_pkts, in bit<32> queue_bytes, in time_us_t idle_us,
            in bit<16> rand, inout link_meta_t m, inout red_state_t s,
            inout red_work_t w, out bit<2> verdict, out bool ecn) {

    action set_red(bit<1> bytes, bit<32> weight_q24, bit<1> use_ecn, bit<32> generation) {
        w.bytes_mode = bytes;
        w.weight = (bit<64>) weight_q24;
        ecn = use_ecn == 1;
        w.generation = generation;
    }

    table red_params {
        key = { m.pkt.queue : exact @name("queue"); }
        actions = { set_red; }
        const default_action = set_red(0, 0, 0, 0);   // no RED: a miss
        size = NUM_QUEUES;
    }

    action decay(bit<32> factor_q16) {
        w.factor = (bit<64>) factor_q16;
    }

    table red_decay {
        key = {
            m.pkt.queue : exact @name("queue");
            idle_us     : range;
        }
        actions = { decay; }
        const default_action = decay(0);   // idle beyond the table: average 0
        size = RED_DECAY_SIZE;
    }

    action signal_with(bit<32> p_b_q16) {
        w.p_b = p_b_q16;
    }

    action drop_all() {
        w.p_b = 0;
        verdict = AQM_DROP;
    }

    table red_curve {
        key = {
            m.pkt.queue : exact @name("queue");
            s.avg       : range @name("avg");
        }
        actions = { signal_with; drop_all; }
        const default_action = signal_with(0);   // below min_th: a miss
        size = RED_CURVE_SIZE;
    }

    apply {
        verdict = AQM_PASS;
        ecn = false;
        if (!red_params.apply().hit) {
            return;
        }
        if (s.generation != w.generation) {
            s.avg = 0;
            s.count = 0;
            s.target = 0;
            s.generation = w.generation;
        }
        bit<64> q = ((bit<64>) (w.bytes_mode == 1 ? queue_bytes : queue_pkts)) << 16;
        if (queue_pkts == 0) {
            red_decay.apply();
            s.avg = (s.avg * w.factor) >> 16;
        } else if (q >= s.avg) {
            s.avg = s.avg + (((q - s.avg) * w.weight) >> 24);
        } else {
            s.avg = s.avg - (((s.avg - q) * w.weight) >> 24);
        }
        if (red_curve.apply().hit) {
            if (verdict == AQM_DROP) {
                s.count = 0;
            } else {
                s.count = s.count + 1;
                if ((bit<64>) s.count * (bit<64>) w.p_b >= (bit<64>) s.target) {
                    verdict = AQM_SIGNAL;
                    s.count = 0;
                    s.target = (bit<32>) rand;
                }
            }
        } else {
            s.count = 0;
        }
    }
}

#endif
