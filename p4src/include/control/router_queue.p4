// The router queue of a packet's traffic class: its parameters, looked up
// on arrival (limits, an optional rate cap, its share of the link, and for
// best effort a deferred start: see best_effort.p4), and the packet leaving
// it once its serialization starts.
#ifndef LINKEMU_ROUTER_QUEUE_P4
#define LINKEMU_ROUTER_QUEUE_P4

#include "../headers.p4"

control QueueParams(inout link_meta_t m) {

    action set_queue(bit<32> queue_limit, bit<32> queue_bytes_limit,
                     bit<48> share_cost_q, bit<1> deferred, bit<1> aqm) {
        m.queue.setValid();
        m.queue.queue_limit = queue_limit;
        m.queue.queue_bytes_limit = queue_bytes_limit;
        m.queue.share_cost_q = share_cost_q;
        m.queue.deferred = deferred;
        m.queue.aqm = aqm;
        m.params.q_index = queue_index(m.pkt.dir, m.pkt.cls);
    }

    // Without an entry a class has no router queue: only a packet that finds
    // the link free gets through (an ideal link never queues).
    action no_queue() {
        m.queue.setValid();
        m.queue.queue_limit = 0;
        m.queue.queue_bytes_limit = 0;
        m.queue.share_cost_q = 0;
        m.queue.deferred = 0;
        m.queue.aqm = 0;
        m.params.q_index = queue_index(m.pkt.dir, m.pkt.cls);
    }

    table queue_params {
        key = {
            m.pkt.dir : exact;
            m.pkt.cls : exact;
        }
        actions = { set_queue; @defaultonly no_queue; }
        const default_action = no_queue;
        size = 4;
    }

    apply {
        queue_params.apply();   // its actions make the header valid (see LinkParams)
    }
}

// A queued packet leaves the router queue once its serialization starts.
control RouterQueueLeave(in time_us_t now_us, inout link_meta_t m, out bool left) {
    apply {
        left = m.pkt.flags & PKT_QUEUED != 0 && now_us >= m.pkt.start_us;
        if (left) {
            m.pkt.flags = m.pkt.flags & ~PKT_QUEUED;
        }
    }
}

#endif
