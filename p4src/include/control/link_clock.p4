// Byte-accurate link rate as a virtual clock, with router-queue admission.
//
//   start  = max(arrival, link free, class free)
//   finish = start + (L3 length + overhead) x cost per byte
//   due    = finish + propagation delay
//
// "Class free" is the class's own rate cap (its share of the link); without
// one it never lies ahead of the link. A packet whose start lies in the future
// waits in its class's router queue; it is tail-dropped when queue_limit
// packets are already waiting, or when it would take the bytes waiting past
// queue_bytes_limit. A best-effort packet behind a priority class cannot be
// given its start yet (a priority packet arriving later may go first): it is
// deferred, and BestEffortStart settles it. So is every best-effort packet of
// a direction whose rate changes over time, which takes the rate in force
// when it starts, and waits out an outage. Pure arithmetic: the architecture
// glue reads and writes the state it is given.
#ifndef LINKEMU_LINK_CLOCK_P4
#define LINKEMU_LINK_CLOCK_P4

#include "../headers.p4"

const time_us_t TIME_NEVER = 0xffffffffffff;

// A packet's instants once its serialization start is known. Rounded up: a
// packet is never released before its exact instant.
void set_times(inout link_meta_t m, in time_q_t start, in time_q_t cost) {
    m.start_us = (time_us_t) ((start + TIME_FRAC_MASK) >> TIME_FRAC_BITS);
    m.attempt_us = (time_us_t) ((start + cost + TIME_FRAC_MASK) >> TIME_FRAC_BITS);
    m.due_us = m.attempt_us + m.params.delay_us;
}

control LinkClock(in time_us_t arrival_us, in bit<32> l3_len,
                  in time_q_t link_free, in time_q_t class_free, in bool behind,
                  in bit<32> queue_pkts, in bit<32> queue_bytes,
                  inout link_meta_t m, out time_q_t new_link_free,
                  out time_q_t new_class_free, out time_q_t cost, out time_q_t share_cost) {
    apply {
        time_q_t now_q = ((time_q_t) arrival_us) << TIME_FRAC_BITS;
        time_q_t start = link_free > now_q ? link_free : now_q;
        start = class_free > start ? class_free : start;
        time_q_t bytes = (time_q_t) (l3_len + m.params.overhead_bytes);
        cost = bytes * (time_q_t) m.params.byte_cost_q;
        share_cost = bytes * (time_q_t) m.queue.share_cost_q;

        // Deferred packets ahead of it in its class keep it behind them.
        bool defer = m.queue.deferred == 1 && (behind || start > now_q || m.params.down == 1);
        bool waits = defer || start > now_q;
        bool full = queue_pkts >= m.queue.queue_limit ||
                    (m.queue.queue_bytes_limit != 0 &&
                     queue_bytes + l3_len > m.queue.queue_bytes_limit);
        m.admitted = (waits && full) ? 1w0 : 1w1;
        m.queued = waits ? 1w1 : 1w0;
        m.deferred = defer ? 1w1 : 1w0;
        bool commit = m.admitted == 1 && !defer;
        new_link_free = commit ? start + cost : link_free;
        new_class_free = commit ? start + share_cost : class_free;
        if (defer) {
            m.start_us = TIME_NEVER;
            m.attempt_us = TIME_NEVER;
            m.due_us = TIME_NEVER;
        } else {
            set_times(m, start, cost);
        }
    }
}

#endif
