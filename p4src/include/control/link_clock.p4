// Byte-accurate link rate as a virtual clock, with router-queue admission.
//
//   leave  = max(arrival, free + hold - room)    leaves the router queue
//   start  = max(leave, free)                    free: link free, class free
//   finish = start + (L3 length + overhead) x cost per byte
//   due    = finish + propagation delay
//
// The link send buffer (send_buffer bytes, 0: none) lies between the router
// queue and the link, as in the studies' emulator: the router queue drains
// into it whenever it has room, so a packet waits in the router queue, and
// is tail-dropped there, only while the buffer is full. The buffer drains at
// the link rate; room is the bytes it holds ahead of the packet, as
// serialization time ((send_buffer - bytes) x cost), and a frame keeps its
// place hold (buffer_hold_us) after it was sent. Without a buffer, leave is
// start: the frame on the link is the only one out of the router queue.
//
// "Class free" is the class's own rate cap (its share of the link); without
// one it never lies ahead of the link. A packet that cannot leave the router
// queue on arrival waits in its class's router queue; it is tail-dropped
// when queue_limit packets are already waiting, or when it would take the
// bytes waiting past queue_bytes_limit. A best-effort packet behind a
// priority class cannot be given its start yet (a priority packet arriving
// later may go first): it is deferred, and BestEffortStart settles it. So is
// every best-effort packet of a direction whose rate changes over time,
// which takes the rate in force when it starts, and waits out an outage.
// Pure arithmetic: the architecture glue reads and writes the state it is
// given.
//
// On BMv2 a plain direction (no FEATURE_* but link errors, no RED) takes
// all of this on arrival in one table action, with its parameters in place
// (p4src/v1model/include/control/link_arrival.p4); the others' arrival looks
// their parameters up and takes it step by step (LinkClock).
#ifndef LINKEMU_LINK_CLOCK_P4
#define LINKEMU_LINK_CLOCK_P4

#include "../headers.p4"

const time_us_t TIME_NEVER = 0xffffffffffff;

// A packet's instants once its serialization start is known. Rounded up: a
// packet is never released before its exact instant. A control, not a
// function: p4c copies a function's struct argument, and a header in it
// (m.params) copies field by field.
control SetTimes(in time_q_t start, in time_q_t cost, inout link_meta_t m) {
    apply {
        m.pkt.start_us = (time_us_t) ((start + TIME_FRAC_MASK) >> TIME_FRAC_BITS);
        m.pkt.attempt_us = (time_us_t) ((start + cost + TIME_FRAC_MASK) >> TIME_FRAC_BITS);
        m.pkt.due_us = m.pkt.attempt_us + m.params.delay_us;
    }
}

// The packet's start is the caller's (out), not a working header of the
// control's own (docs/bmv2-costs.md). link_free and class_free come in as the
// registers hold them and leave as they are to be written back.
control LinkClock(in time_us_t arrival_us, in bit<32> l3_len, in bool behind,
                  in bit<32> queue_pkts, in bit<32> queue_bytes, inout link_meta_t m,
                  inout time_q_t link_free, inout time_q_t class_free,
                  in bit<32> pos_in, in bit<32> block_pos, in time_us_t busy_until,
                  out time_q_t leave, out time_q_t start, out time_q_t cost,
                  out time_q_t share_cost) {
    SetTimes() set_times;

    // The start and the costs in an action, where ?: stays an expression and
    // p4c does not carry a result into the register write that stores it
    // through a metadata temporary (docs/bmv2-costs.md). A direction that can
    // have no link error draws none: its packets are through the link
    // already, and need no pass at the end of their serialization.
    action costs() {
        time_q_t now_q = ((time_q_t) arrival_us) << TIME_FRAC_BITS;
        time_q_t free = link_free > class_free ? link_free : class_free;
        time_q_t bytes = (time_q_t) (l3_len + m.params.overhead_bytes);
        time_q_t room = bytes > (time_q_t) m.params.send_buffer ? 0 :
                        ((time_q_t) m.params.send_buffer - bytes) * (time_q_t) m.params.byte_cost_q;
        time_q_t ahead = free + (((time_q_t) m.params.buffer_hold_us) << TIME_FRAC_BITS);
        leave = ahead > now_q + room ? ahead - room : now_q;
        // Behind an ARQ retransmission (BestEffortStart): not before it is
        // through, as far as is known now.
        time_q_t unblocked = ((time_q_t) (busy_until + m.params.buffer_hold_us -
                                          m.params.delay_us)) << TIME_FRAC_BITS;
        leave = m.params.send_buffer != 0 && unblocked > leave &&
                (bit<32>) bytes + pos_in - block_pos > m.params.send_buffer ? unblocked : leave;
        start = free > leave ? free : leave;
        cost = bytes * (time_q_t) m.params.byte_cost_q;
        share_cost = bytes * (time_q_t) m.params.share_cost_q;
        m.pkt.flags = m.pkt.flags |
                      (m.params.features & FEATURE_LINK_ERRORS == 0 ? PKT_LINK_DONE : 0);
    }

    apply {
        costs();
        time_q_t now_q = ((time_q_t) arrival_us) << TIME_FRAC_BITS;

        // Deferred packets ahead of it in its class keep it behind them.
        bool defer = m.params.deferred == 1 && (behind || leave > now_q || m.params.down == 1);
        bool waits = defer || leave > now_q;
        bool full = queue_pkts >= m.params.queue_limit ||
                    (m.params.queue_bytes_limit != 0 &&
                     queue_bytes + l3_len > m.params.queue_bytes_limit);
        // PKT_QUEUED and PKT_DEFERRED come in 0 (an arriving packet's state
        // is zeroed).
        if (!waits) {
            m.pkt.flags = m.pkt.flags | PKT_ADMITTED;
        } else if (!full) {
            m.pkt.flags = m.pkt.flags | (PKT_QUEUED | PKT_ADMITTED);
        }
        if (defer) {
            m.pkt.flags = m.pkt.flags | PKT_DEFERRED;
            m.pkt.leave_us = TIME_NEVER;
            m.pkt.start_us = TIME_NEVER;
            m.pkt.attempt_us = TIME_NEVER;
            m.pkt.due_us = TIME_NEVER;
        } else {
            if (m.pkt.flags & PKT_ADMITTED != 0) {
                link_free = start + cost;
                class_free = start + share_cost;
            }
            m.pkt.leave_us = (time_us_t) ((leave + TIME_FRAC_MASK) >> TIME_FRAC_BITS);
            set_times.apply(start, cost, m);
        }
    }
}

#endif
