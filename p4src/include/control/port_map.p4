// Which way a frame crosses the link, and where it leaves on the far side.
// A frame it does not know (an unknown port or far-side destination) keeps
// neither a port nor a group (dest 0): the link state comes in zeroed.
#ifndef LINKEMU_PORT_MAP_P4
#define LINKEMU_PORT_MAP_P4

#include "../headers.p4"

control PortMap(in bit<9> ingress_port, in ethernet_h ethernet, inout link_meta_t m) {

    // Its queue is its direction's best effort (queue_index) unless
    // TrafficClass finds it a priority packet.
    action set_direction(direction_t dir) {
        m.pkt.dir = dir;
        m.pkt.queue = dir;
    }

    // Every port belongs to the fixed side (downlink) or the mobile side
    // (uplink); frames from any other port are dropped.
    table port_map {
        key = { ingress_port : exact; }
        actions = { set_direction; @defaultonly NoAction; }
        const default_action = NoAction;
        size = PORT_MAP_SIZE;
    }

    action to_port(bit<9> port) {
        m.pkt.dest = (bit<16>) port;
    }

    action flood(bit<16> group) {
        m.pkt.dest = group;
        m.pkt.flags = PKT_FLOOD;   // the first flag of an arriving packet
    }

    // Far-side destination: a host's MAC, or flooding to every far-side port
    // (broadcast, ARP, unknown unicast) with a low-priority wildcard entry.
    table forward {
        key = {
            m.pkt.dir         : exact @name("dir");
            ethernet.dst_addr : ternary @name("dst_addr");
        }
        actions = { to_port; flood; @defaultonly NoAction; }
        const default_action = NoAction;
        size = FORWARD_SIZE;
    }

    apply {
        if (port_map.apply().hit) {
            forward.apply();
        }
    }
}

#endif
