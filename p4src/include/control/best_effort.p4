// When a deferred best-effort packet may start.
//
// Strict, non-preemptive priority: a best-effort packet cannot be given its
// start when it arrives, because a priority packet arriving later but before
// the link frees goes first. So deferred best-effort packets wait in arrival
// order (the glue keeps them in a ring with their sizes), and at every event
// of the direction - an arrival or any held packet's pass - the head is
// offered the link: it starts at the virtual instant the link and its class's
// rate cap are both free, provided that instant has passed. A priority packet
// arriving before it would have taken the link first, so that instant is
// exact; only when several best-effort starts fall between two events is a
// priority arrival served after the first of them rather than after all.
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
// passed as an out one, into a metadata field of its own). start_us is the
// start in whole microseconds, for the queue's last start.
control BestEffortStart(in time_us_t now_us, in link_params_h params,
                        inout time_q_t link_free, inout time_q_t class_free,
                        in time_us_t arrival_us, in bit<32> bytes, in time_q_t share_cost,
                        out bool settled, out time_q_t start, out time_us_t start_us,
                        out time_q_t cost) {

    // In an action, where ?: stays an expression and p4c does not carry a
    // result into the register write that stores it through a metadata
    // temporary (see headers.p4).
    action offer() {
        time_q_t now_q = ((time_q_t) now_us) << TIME_FRAC_BITS;
        time_q_t arrival_q = ((time_q_t) arrival_us) << TIME_FRAC_BITS;
        time_q_t free = link_free > class_free ? link_free : class_free;
        start = arrival_q > free ? arrival_q : free;
        start_us = (time_us_t) (start >> TIME_FRAC_BITS);
        cost = (time_q_t) bytes * (time_q_t) params.byte_cost_q;
        settled = params.down == 0 && start <= now_q;
        class_free = settled ? start + share_cost : class_free;
        link_free = settled ? start + cost : link_free;
        // During an outage (never settled) the link's time passes unused.
        link_free = params.down == 1 && link_free < now_q ? now_q : link_free;
    }

    apply {
        offer();
    }
}

#endif
