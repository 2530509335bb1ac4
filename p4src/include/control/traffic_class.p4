// The traffic class of a packet.
//
// Every packet is best effort unless its direction has a priority split
// (FEATURE_PRIORITY), whose ternary entries on DSCP, IP protocol and TCP/UDP
// ports put a packet in the priority class; each class then has its own
// router queue (QueueParams, router_queue.p4).
#ifndef LINKEMU_TRAFFIC_CLASS_P4
#define LINKEMU_TRAFFIC_CLASS_P4

#include "../headers.p4"

// w: the classification's key, a working value of the caller's (on BMv2 in
// a header: docs/bmv2-costs.md). Applied on arrival, by the caller, for a
// direction with a priority split only: without one a packet stays in its
// direction's best effort, as PortMap puts it.
control TrafficClass(in ipv4_h ipv4, in ipv6_h ipv6, in l4_h l4, inout link_meta_t m,
                     inout class_key_t w) {

    action set_class(bit<1> cls) {
        m.pkt.queue = queue_index(m.pkt.dir, cls);
    }

    table traffic_class {
        key = {
            m.pkt.dir  : exact @name("dir");
            w.is_ip    : exact @name("is_ip");
            w.dscp     : ternary @name("dscp");
            w.protocol : ternary @name("protocol");
            w.src_port : ternary @name("src_port");
            w.dst_port : ternary @name("dst_port");
        }
        actions = { set_class; @defaultonly NoAction; }
        const default_action = NoAction;
        size = TRAFFIC_CLASS_SIZE;
    }

    apply {
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
}

#endif
