// When a deferred best-effort packet may start.
//
// Strict, non-preemptive priority: a best-effort packet cannot be given its
// start when it arrives, because a priority packet arriving later but before
// the link frees goes first. So deferred best-effort packets wait in arrival
// order (the glue keeps them in a ring with their sizes), and at every event
// of the direction - an arrival or any held packet's pass - the head is
// offered the link: it leaves the router queue at the virtual instant the
// link send buffer has room for it behind what the link and its class's rate
// cap still owe (link_clock.p4), provided that instant has passed, and starts
// when both are free. A priority packet
// arriving before it would have taken the link first, so that instant is
// exact; only when several best-effort starts fall between two events is a
// priority arrival served after the first of them rather than after all.
//
// A direction whose link send buffer holds frames until they are delivered
// behind an ARQ retransmission defers its best effort too: a frame leaves
// the router queue only while the buffer, which still holds the frame
// being retransmitted and everything sent since (block_pos on: bytes in link
// order), has room for it, until the retransmitted frame is through
// (busy_until: the last ARQ due so far) and acknowledged. The frames in the
// buffer were given their starts within its size, so they go on as set.
//
// A rate that changes over time defers every best-effort packet the same way:
// its serialization cost is taken from the rate in force when it starts, and
// during an outage (the link down) none starts; the link's time passes unused,
// so the head starts no earlier than the last event of the outage.
#ifndef LINKEMU_BEST_EFFORT_P4
#define LINKEMU_BEST_EFFORT_P4

#include "../headers.p4"

// link_free and class_free come in as the registers hold them and leave as
// they are to be written back (inout: p4c copies an in argument that is also
// passed as an out one, into a metadata field of its own). leave_us is its
// departure from the router queue in whole microseconds, for the queue's
// last departure.
control BestEffortStart(in time_us_t now_us, in link_params_h params,
                        inout time_q_t link_free, inout time_q_t class_free,
                        in time_us_t arrival_us, in bit<32> bytes, in time_q_t share_cost,
                        in bit<32> pos_in, in bit<32> block_pos, in time_us_t busy_until,
                        out bool settled, out time_q_t start, out time_us_t leave_us,
                        out time_q_t cost) {

    // In an action, where ?: stays an expression and p4c does not carry a
    // result into the register write that stores it through a metadata
    // temporary (docs/bmv2-costs.md).
    action offer() {
        time_q_t now_q = ((time_q_t) now_us) << TIME_FRAC_BITS;
        time_q_t arrival_q = ((time_q_t) arrival_us) << TIME_FRAC_BITS;
        time_q_t free = link_free > class_free ? link_free : class_free;
        time_q_t room = bytes > params.send_buffer ? 0 :
                        (time_q_t) (params.send_buffer - bytes) * (time_q_t) params.byte_cost_q;
        time_q_t ahead = free + (((time_q_t) params.buffer_hold_us) << TIME_FRAC_BITS);
        time_q_t leave = ahead > arrival_q + room ? ahead - room : arrival_q;
        start = free > leave ? free : leave;
        leave_us = (time_us_t) (leave >> TIME_FRAC_BITS);
        cost = (time_q_t) bytes * (time_q_t) params.byte_cost_q;
        bool blocked = params.send_buffer != 0 &&
                       now_us + params.delay_us < busy_until + params.buffer_hold_us &&
                       pos_in + bytes - block_pos > params.send_buffer;
        settled = params.down == 0 && leave <= now_q && !blocked;
        class_free = settled ? start + share_cost : class_free;
        link_free = settled ? start + cost : link_free;
        // During an outage, or while blocked (never settled), the link's
        // time passes unused.
        link_free = (params.down == 1 || blocked) && link_free < now_q ? now_q : link_free;
    }

    apply {
        offer();
    }
}

#endif
