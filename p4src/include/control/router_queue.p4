// The router queue of a packet's traffic class on a direction with optional
// features: its parameters, looked up on arrival (limits, an optional rate
// cap, its share of the link, and for best effort a deferred start: see
// best_effort.p4). A plain direction's arrival takes its one queue's limits
// in place (LinkArrival).
#ifndef LINKEMU_ROUTER_QUEUE_P4
#define LINKEMU_ROUTER_QUEUE_P4

#include "../headers.p4"

// Into the link's parameters, which LinkParams has made valid.
control QueueParams(inout link_meta_t m) {

    action set_queue(bit<32> queue_limit, bit<32> queue_bytes_limit,
                     bit<48> share_cost_q, bit<1> deferred, bit<1> aqm) {
        m.params.queue_limit = queue_limit;
        m.params.queue_bytes_limit = queue_bytes_limit;
        m.params.share_cost_q = share_cost_q;
        m.params.deferred = deferred;
        m.params.aqm = aqm;
    }

    // Without an entry a class has no router queue (the parameters came in
    // zeroed): only a packet that finds the link free gets through (an ideal
    // link never queues).
    table queue_params {
        key = { m.pkt.queue : exact @name("queue"); }
        actions = { set_queue; @defaultonly NoAction; }
        const default_action = NoAction;
        size = NUM_QUEUES;
    }

    apply {
        queue_params.apply();
    }
}

#endif
