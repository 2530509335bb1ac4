// Cake's AQM, COBALT (CoDel and BLUE, Linux's sch_cake), on a router queue.
//
// CoDel judges a packet when it leaves the queue, on its sojourn: once the
// sojourn has stayed above target for an interval, the packet is signalled
// (CE if ECN-capable, else dropped), and the next signal comes
// interval/sqrt(count) later while the sojourn stays above target; after the
// episode, count decays one step per such spacing. BLUE raises a drop
// probability each time the queue overflows (at most once per target) and
// lowers it each time the queue is found empty.
//
// The virtual clock knows on arrival when a packet will leave its queue
// (link_clock.p4), and a FIFO queue's packets leave in arrival order, so
// each arrival applies CoDel's rule at its own leave instant, in leave order:
// the state evolves exactly as in Cake. A dropped packet never takes the
// link; it stays in the queue until it leaves, where the glue drops it,
// unless nothing waits behind it then (Cake never drops a queue's last
// packet). BLUE's events fall on arrivals: an overflow is the arrival the
// queue refuses, and the queue is found empty by an arrival.
//
// Each push of a profile starts COBALT afresh, as a new qdisc: state of
// another push's generation reads as a new queue's.
//
// Cake's decay is a loop (one step per spacing that has passed); here it is
// one lookup: with S(c) the sum of 1/sqrt(j) for j < c (cobalt_law), the
// loop from count c ends at the largest m with S(m) < S(c) - elapsed/interval
// (cobalt_decay). Counts to 128 are exact; above, both tables work on a grid
// of 8 steps per power of two (docs/link-model.md).
#ifndef LINKEMU_COBALT_P4
#define LINKEMU_COBALT_P4

#include "../headers.p4"

const bit<32> COBALT_P_INC = 1 << 24;   // BLUE's steps, as Cake's: 1/256 up,
const bit<32> COBALT_P_DEC = 1 << 20;   // 1/4096 down

// verdict: AQM_PASS, AQM_SIGNAL (mark CE), AQM_DROP (CoDel) or
// AQM_DROP_BLUE for a packet that `leaves` the queue at leave_us. Its
// queue's events come first: `overflow`, the queue refused a packet (at
// arrival_us); `found_empty`, the queue was found empty (at arrival_us).
control Cobalt(in time_us_t arrival_us, in time_us_t leave_us, in bool overflow,
               in bool found_empty, in bool leaves, in bool capable, in bit<32> rand,
               in link_meta_t m, inout cobalt_state_t s, inout cobalt_work_t w,
               out bit<2> verdict) {

    action set_cobalt(time_us_t target_us, time_us_t threshold_us, bit<64> interval_us,
                      bit<64> per_interval_q32, bit<1> ecn, bit<32> generation) {
        w.target_us = target_us;
        w.threshold_us = threshold_us;
        w.interval_us = interval_us;
        w.per_interval_q32 = per_interval_q32;
        w.ecn = ecn;
        w.generation = generation;
    }

    table cobalt_params {
        key = { m.pkt.queue : exact @name("queue"); }
        actions = { set_cobalt; @defaultonly NoAction; }
        const default_action = NoAction;
        size = NUM_QUEUES;
    }

    action law(bit<64> prev_inv_sqrt_q32, bit<64> inv_sqrt_q32, bit<64> next_inv_sqrt_q32,
               bit<64> sum_q16) {
        w.prev_inv_sqrt_q32 = prev_inv_sqrt_q32;
        w.inv_sqrt_q32 = inv_sqrt_q32;
        w.next_inv_sqrt_q32 = next_inv_sqrt_q32;
        w.law_sum_q16 = sum_q16;
    }

    table cobalt_law {
        key = { s.count : lpm @name("count"); }
        actions = { law; }
        const default_action = law(0xffffffff, 0xffffffff, 0xffffffff, 0);
        size = COBALT_LAW_SIZE;
    }

    action decay_to(bit<32> count, bit<64> sum_q16) {
        // The loop's last step: drop_next has moved on by interval x the
        // sum of the steps taken.
        s.drop_next = s.drop_next +
                      (time_us_t) ((w.interval_us * (w.law_sum_q16 - sum_q16)) >> 16);
        s.count = count;
    }

    table cobalt_decay {
        key = { w.decay_q16 : range @name("sum_q16"); }
        actions = { decay_to; }
        const default_action = decay_to(0, 0);   // nothing left: rest
        size = COBALT_LAW_SIZE;
    }

    apply {
        verdict = AQM_PASS;
        if (!cobalt_params.apply().hit) {
            return;
        }
        if (s.generation != w.generation) {
            s.count = 0;
            s.dropping = 0;
            s.drop_next = 0;
            s.p_drop = 0;
            s.blue_timer = 0;
            s.generation = w.generation;
        }
        if (overflow) {
            if (arrival_us - s.blue_timer > w.target_us) {
                s.p_drop = s.p_drop + COBALT_P_INC < s.p_drop ? 0xffffffff :
                           s.p_drop + COBALT_P_INC;
                s.blue_timer = arrival_us;
            }
            s.dropping = 1;
            s.drop_next = arrival_us;
            if (s.count == 0) {
                s.count = 1;
            }
            return;
        }
        if (found_empty && s.p_drop != 0 && arrival_us - s.blue_timer > w.target_us) {
            s.p_drop = s.p_drop < COBALT_P_DEC ? 0 : s.p_drop - COBALT_P_DEC;
            s.blue_timer = arrival_us;
        }
        cobalt_law.apply();
        if (!leaves) {
            // A flow queue found empty ends its episode and decays a step.
            if (found_empty) {
                s.dropping = 0;
                if (s.count != 0 && (int<48>) (arrival_us - s.drop_next) >= 0) {
                    s.count = s.count - 1;
                    s.drop_next = s.drop_next +
                                  (time_us_t) ((w.interval_us * w.prev_inv_sqrt_q32) >> 32);
                }
            }
            return;
        }

        // CoDel, at the packet's leave instant.
        w.elapsed_us = leave_us - s.drop_next;
        w.late = (int<48>) w.elapsed_us > 0;
        w.next_due = s.count != 0 && (int<48>) w.elapsed_us >= 0;
        if (leave_us - arrival_us > w.threshold_us) {
            if (s.dropping == 0) {
                s.dropping = 1;
                s.drop_next = leave_us + (time_us_t) ((w.interval_us * w.inv_sqrt_q32) >> 32);
            }
            if (s.count == 0) {
                s.count = 1;
            }
        } else {
            s.dropping = 0;
        }
        if (w.next_due && s.dropping == 1) {
            verdict = capable && w.ecn == 1 ? AQM_SIGNAL : AQM_DROP;
            if (s.count != 0xffffffff) {
                s.count = s.count + 1;
            }
            s.drop_next = s.drop_next +
                          (time_us_t) ((w.interval_us * w.next_inv_sqrt_q32) >> 32);
            w.late = (int<48>) (leave_us - s.drop_next) > 0;
        } else if (w.next_due) {
            w.decay_q16 = (((bit<64>) w.elapsed_us) * w.per_interval_q32) >> 16;
            if (w.decay_q16 < w.law_sum_q16) {
                w.decay_q16 = w.law_sum_q16 - w.decay_q16;
                cobalt_decay.apply();
                w.late = (int<48>) (leave_us - s.drop_next) > 0;
            } else {
                s.count = 0;
            }
        }

        // BLUE: drops (even a packet CoDel marked), never marks.
        if (s.p_drop != 0 && verdict != AQM_DROP && rand < s.p_drop) {
            verdict = AQM_DROP_BLUE;
        }
        // drop_next doubles as an activity timeout.
        if (s.count == 0) {
            s.drop_next = leave_us + (time_us_t) w.interval_us;
        } else if (w.late && (verdict == AQM_PASS || verdict == AQM_SIGNAL)) {
            s.drop_next = leave_us;
        }
    }
}

#endif
