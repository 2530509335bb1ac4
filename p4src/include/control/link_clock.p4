// Byte-accurate link rate as a virtual clock, with router-queue admission.
//
//   start  = max(arrival, link free)
//   finish = start + (L3 length + overhead) x cost per byte
//   due    = finish + propagation delay
//
// A packet whose start lies in the future waits in the router queue; it is
// tail-dropped when queue_limit packets are already waiting, or when it would
// take the bytes waiting past queue_bytes_limit. Pure arithmetic: the
// architecture glue reads and writes the state it is given.
#ifndef LINKEMU_LINK_CLOCK_P4
#define LINKEMU_LINK_CLOCK_P4

#include "../headers.p4"

control LinkClock(in time_us_t arrival_us, in bit<32> l3_len,
                  in time_q_t link_free, in bit<32> queue_pkts, in bit<32> queue_bytes,
                  inout link_meta_t m, out time_q_t new_link_free) {
    apply {
        time_q_t now_q = ((time_q_t) arrival_us) << TIME_FRAC_BITS;
        time_q_t start = link_free > now_q ? link_free : now_q;
        bool waits = start > now_q;
        time_q_t cost = ((time_q_t) (l3_len + m.params.overhead_bytes)) *
                        ((time_q_t) m.params.byte_cost_q);
        time_q_t finish = start + cost;

        bool full = queue_pkts >= m.params.queue_limit ||
                    (m.params.queue_bytes_limit != 0 &&
                     queue_bytes + l3_len > m.params.queue_bytes_limit);
        m.admitted = (waits && full) ? 1w0 : 1w1;
        m.queued = waits ? 1w1 : 1w0;
        new_link_free = m.admitted == 1 ? finish : link_free;
        // Round up: a packet is never released before its exact instant.
        m.start_us = (time_us_t) ((start + TIME_FRAC_MASK) >> TIME_FRAC_BITS);
        m.attempt_us = (time_us_t) ((finish + TIME_FRAC_MASK) >> TIME_FRAC_BITS);
        m.due_us = m.attempt_us + m.params.delay_us;
    }
}

#endif
