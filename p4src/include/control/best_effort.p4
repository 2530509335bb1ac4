// Strict, non-preemptive priority: when best effort may start.
//
// A best-effort packet cannot be given its start when it arrives, because a
// priority packet arriving later but before the link frees goes first. So
// deferred best-effort packets wait in arrival order (the glue keeps them in
// a ring with their costs), and at every event of the direction - an arrival
// or any held packet's pass - the head is offered the link: it starts at the
// virtual instant the link and its class's rate cap are both free, provided
// that instant has passed. A priority packet arriving before it would have
// taken the link first, so that instant is exact; only when several
// best-effort starts fall between two events is a priority arrival served
// after the first of them rather than after all.
#ifndef LINKEMU_BEST_EFFORT_P4
#define LINKEMU_BEST_EFFORT_P4

#include "../headers.p4"

control BestEffortStart(in time_us_t now_us, in time_q_t link_free, in time_q_t class_free,
                        in time_us_t arrival_us, in time_q_t cost, in time_q_t share_cost,
                        out bool settled, out time_q_t start,
                        out time_q_t new_link_free, out time_q_t new_class_free) {
    apply {
        time_q_t arrival_q = ((time_q_t) arrival_us) << TIME_FRAC_BITS;
        start = link_free > class_free ? link_free : class_free;
        start = arrival_q > start ? arrival_q : start;
        settled = start <= ((time_q_t) now_us) << TIME_FRAC_BITS;
        new_link_free = settled ? start + cost : link_free;
        new_class_free = settled ? start + share_cost : class_free;
    }
}

#endif
