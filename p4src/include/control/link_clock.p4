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
// A plain direction (no FEATURE_* but link errors, no RED) takes all of
// this on arrival in one table action, with its parameters in place
// (LinkArrival); the others' arrival looks their parameters up into headers
// and takes it step by step (LinkClock).
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
// control's own (see headers.p4). link_free and class_free come in as the
// registers hold them and leave as they are to be written back.
control LinkClock(in time_us_t arrival_us, in bit<32> l3_len, in bool behind,
                  in bit<32> queue_pkts, in bit<32> queue_bytes, inout link_meta_t m,
                  inout time_q_t link_free, inout time_q_t class_free,
                  in bit<32> pos_in, in bit<32> block_pos, in time_us_t busy_until,
                  out time_q_t leave, out time_q_t start, out time_q_t cost,
                  out time_q_t share_cost) {
    SetTimes() set_times;

    // The start and the costs in an action, where ?: stays an expression
    // and p4c does not carry a result into the register write that stores
    // it through a metadata temporary (see headers.p4). A direction that
    // can have no link error draws none: its packets are through the link
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

// The arrival on every direction: a plain direction's, whole, in the
// action of its entry, and for the others only the note that they take
// LinkClock's (featured). In BMv2 every assignment, every field of a header
// made valid and every operation of an expression costs (headers.p4): one
// action with its parameters in place is the cheapest form of the clock.
// Its working values are the pass's (w), fields the action sets once and
// then reads: p4c would carry a value in an argument of the control into
// every expression that reads it, and BMv2 would evaluate it there anew. An
// unknown direction is an ideal wire without errors.
control LinkArrival(inout pass_h w, inout link_meta_t m) {

    // w.setValid() and m.pkt.setValid() on the valid headers change nothing
    // but keep p4c from carrying the value just set into the expressions
    // that follow (each then reads the field).
    action plain(bit<48> byte_cost_q, bit<32> overhead_bytes, time_us_t delay_us,
                 bit<32> queue_limit, bit<32> queue_bytes_limit, bit<1> link_errors,
                 bit<32> send_buffer, time_us_t buffer_hold_us) {
        time_q_t now_q = ((time_q_t) w.now) << TIME_FRAC_BITS;
        time_q_t bytes = (time_q_t) (w.l3_len + overhead_bytes);
        time_q_t room = bytes > (time_q_t) send_buffer ? 0 :
                        ((time_q_t) send_buffer - bytes) * (time_q_t) byte_cost_q;
        time_q_t ahead = w.free + (((time_q_t) buffer_hold_us) << TIME_FRAC_BITS);
        w.leave = ahead > now_q + room ? ahead - room : now_q;
        w.setValid();
        w.start = w.free > w.leave ? w.free : w.leave;
        w.setValid();
        w.finish = w.start + bytes * (time_q_t) byte_cost_q;
        w.setValid();
        // Rounded up as SetTimes does: it leaves the router queue after its
        // arrival (waits there) exactly when leave_us does.
        m.pkt.leave_us = (time_us_t) ((w.leave + TIME_FRAC_MASK) >> TIME_FRAC_BITS);
        m.pkt.start_us = (time_us_t) ((w.start + TIME_FRAC_MASK) >> TIME_FRAC_BITS);
        m.pkt.attempt_us = (time_us_t) ((w.finish + TIME_FRAC_MASK) >> TIME_FRAC_BITS);
        m.pkt.setValid();
        m.pkt.due_us = m.pkt.attempt_us + delay_us;
        m.pkt.flags = m.pkt.flags | (link_errors == 0 ? PKT_LINK_DONE : 0) |
                      (m.pkt.leave_us == w.now ? PKT_ADMITTED :
                       (w.waiting >= queue_limit ||
                        (queue_bytes_limit != 0 &&
                         w.waiting_bytes + w.l3_len > queue_bytes_limit) ? 0 :
                        PKT_QUEUED | PKT_ADMITTED));
        m.pkt.setValid();
        w.free = m.pkt.flags & PKT_ADMITTED == 0 ? w.free : w.finish;
    }

    action featured() {
        w.featured = true;
    }

    table link {
        key = { m.pkt.dir : exact @name("dir"); }
        actions = { plain; featured; }
        const default_action = plain(0, 0, 0, 0, 0, 0, 0, 0);
        size = NUM_DIRECTIONS;
    }

    apply {
        link.apply();
    }
}

#endif
