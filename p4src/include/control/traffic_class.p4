// The traffic class of a packet and the router queue of that class.
//
// Every packet is best effort unless its direction has a priority split
// (FEATURE_PRIORITY), whose ternary entries on DSCP, IP protocol and TCP/UDP
// ports put a packet in the priority class; each class then has its own
// queue_params entry: limits, an optional rate cap (its share of the link),
// and, for best effort, a deferred start (see best_effort.p4).
#ifndef LINKEMU_TRAFFIC_CLASS_P4
#define LINKEMU_TRAFFIC_CLASS_P4

#include "../headers.p4"

// w: the classification's key, in a header of the caller's (see
// headers.p4), valid when the direction has a priority split.
control TrafficClass(in ipv4_h ipv4, in ipv6_h ipv6, in l4_h l4, inout link_meta_t m,
                     inout class_key_t w) {

    action set_class(bit<1> cls) {
        m.pkt.cls = cls;
    }

    table traffic_class {
        key = {
            m.pkt.dir  : exact;
            w.is_ip    : exact @name("is_ip");
            w.dscp     : ternary @name("dscp");
            w.protocol : ternary @name("protocol");
            w.src_port : ternary @name("src_port");
            w.dst_port : ternary @name("dst_port");
        }
        actions = { set_class; @defaultonly NoAction; }
        const default_action = NoAction;
        size = 256;
    }

    action set_queue(bit<32> queue_limit, bit<32> queue_bytes_limit,
                     bit<48> share_cost_q, bit<1> deferred, bit<1> aqm) {
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

    // Applied once, when the packet arrives. A direction without a priority
    // split has no traffic_class entries: its packets skip the lookup.
    apply {
        // cls comes in as CLASS_BEST_EFFORT (0): the link state is zeroed.
        if (m.params.features & FEATURE_PRIORITY != 0) {
            w.src_port = 0;
            w.dst_port = 0;
            w.protocol = 0;
            w.dscp = 0;
            w.is_ip = 0;
            if (ipv4.isValid()) {
                w.is_ip = 1;
                w.dscp = ipv4.dscp;
                w.protocol = ipv4.protocol;
            } else if (ipv6.isValid()) {
                w.is_ip = 1;
                w.dscp = ipv6.dscp;
                w.protocol = ipv6.next_hdr;
            }
            if (l4.isValid()) {
                w.src_port = l4.src_port;
                w.dst_port = l4.dst_port;
            }
            traffic_class.apply();
        }
        m.queue.setValid();
        queue_params.apply();
    }
}

#endif
