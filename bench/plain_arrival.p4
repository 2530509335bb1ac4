// linkemu's handling of a frame on a plain link, in the least link model's
// form (bench/minimal_link.p4): what rewriting linkemu's link model in
// BMv2's cheapest form could gain at most. It parses, carries and forwards
// a frame as linkemu does: linkemu's headers, its link state (every field
// of which some feature of linkemu needs) and its port map. Its link is a
// plain one: a virtual-clock rate with per-frame overhead, a delay, a
// router queue limited in frames and in bytes, and release in link order.
// The arithmetic is one table action with its parameters in place; the
// working values are one header of seven fields. It has none of linkemu's
// optional features, and tests for none; no error draw (a direction whose
// link states never err draws none in linkemu either), no traffic classes,
// event log or controller probe.
#include <core.p4>
#include <v1model.p4>

#include "../p4src/v1model/include/parser.p4"

const bit<9>  HOLD_PORT_BASE = 448;   // 16 interface-less ports, as in linkemu
const bit<9>  HOLD_PORT_MASK = 15;

// A pass's working values.
header plain_pass_h {
    time_us_t now;
    bit<32>   l3_len;
    time_q_t  free;      // the link's virtual clock, then its next value
    bit<32>   waiting;   // frames in the router queue
    bit<32>   waiting_bytes;
    seq_t     seq;       // the direction's next sequence number
    seq_t     next;      // its next release
}

struct plain_headers_t {
    clock_stamp_h clock_stamp;
    ethernet_h    ethernet;
    ipv4_h        ipv4;
    ipv6_h        ipv6;
    l4_h          l4;
    link_state_h  link;
    plain_pass_h  pass;
}

struct plain_metadata_t { }

parser PlainParser(packet_in pkt, out plain_headers_t hdr, inout plain_metadata_t meta,
                   inout standard_metadata_t std) {
    FrameParser() frame_parser;

    state start {
        transition select(std.instance_type) {
            INSTANCE_TYPE_RECIRC : parse_held;
            default              : parse_frame;
        }
    }
    state parse_held {
        pkt.extract(hdr.link);
        transition accept;
    }
    state parse_frame {
        frame_parser.apply(pkt, hdr.ethernet, hdr.ipv4, hdr.ipv6, hdr.l4);
        transition accept;
    }
}

control NoChecksum(inout plain_headers_t hdr, inout plain_metadata_t meta) {
    apply { }
}

control PlainIngress(inout plain_headers_t hdr, inout plain_metadata_t meta,
                     inout standard_metadata_t std) {
    register<time_q_t>(NUM_DIRECTIONS) link_free;
    register<bit<32>>(NUM_DIRECTIONS) queue_pkts;
    register<bit<32>>(NUM_DIRECTIONS) queue_bytes;
    register<seq_t>(NUM_DIRECTIONS) next_seq;
    register<seq_t>(NUM_DIRECTIONS) next_release;
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) link_in;
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) drop_queue;

    // linkemu's port map (PortMap), on this program's link state.
    action set_direction(direction_t dir) {
        hdr.link.dir = dir;
    }
    table port_map {
        key = { std.ingress_port : exact; }
        actions = { set_direction; @defaultonly NoAction; }
        const default_action = NoAction;
        size = 64;
    }
    action to_port(bit<9> port) {
        hdr.link.dest = (bit<16>) port;
    }
    action flood(bit<16> group) {
        hdr.link.dest = group;
        hdr.link.flags = PKT_FLOOD;
    }
    table forward {
        key = {
            hdr.link.dir           : exact;
            hdr.ethernet.dst_addr  : ternary;
        }
        actions = { to_port; flood; @defaultonly NoAction; }
        const default_action = NoAction;
        size = 1024;
    }

    // start = max(arrival, link free); the instants as linkemu's SetTimes
    // rounds them; admitted unless it must queue behind queue_limit frames
    // or past queue_bytes_limit bytes.
    action arrive(bit<48> byte_cost_q, bit<32> overhead_bytes, time_us_t delay_us,
                  bit<32> queue_limit, bit<32> queue_bytes_limit) {
        time_q_t now_q = ((time_q_t) hdr.pass.now) << TIME_FRAC_BITS;
        time_q_t start = hdr.pass.free > now_q ? hdr.pass.free : now_q;
        bool full = hdr.pass.waiting >= queue_limit ||
                    (queue_bytes_limit != 0 &&
                     hdr.pass.waiting_bytes + hdr.pass.l3_len > queue_bytes_limit);
        hdr.link.flags = hdr.link.flags | (start > now_q ? PKT_QUEUED : 0) |
                         (start > now_q && full ? 0 : PKT_ADMITTED);
        hdr.link.start_us = (time_us_t) ((start + TIME_FRAC_MASK) >> TIME_FRAC_BITS);
        // Last: start reads the clock as it came in.
        hdr.pass.free = start + (time_q_t) (hdr.pass.l3_len + overhead_bytes) *
                                (time_q_t) byte_cost_q;
        hdr.link.due_us = (time_us_t) ((hdr.pass.free + TIME_FRAC_MASK) >> TIME_FRAC_BITS) +
                          delay_us;
    }

    // Written by the benchmark from its profile (benchmark.plain_arrival_entries).
    table link {
        key = { hdr.link.dir : exact; }
        actions = { arrive; @defaultonly NoAction; }
        const default_action = NoAction;
        size = 2;
    }

    apply {
        hdr.pass.setValid();
        if (std.instance_type != INSTANCE_TYPE_RECIRC) {
            hdr.link.setValid();
            if (port_map.apply().hit) {
                forward.apply();
            }
            if (hdr.link.dest == 0) {
                mark_to_drop(std);
                exit;
            }
            hdr.pass.now = std.ingress_global_timestamp;
            hdr.pass.l3_len = std.packet_length - ETH_HEADER_BYTES;
            link_free.read(hdr.pass.free, hdr.link.dir);
            queue_pkts.read(hdr.pass.waiting, hdr.link.dir);
            queue_bytes.read(hdr.pass.waiting_bytes, hdr.link.dir);
            link.apply();
            if (hdr.link.flags & PKT_ADMITTED == 0) {
                drop_queue.count(hdr.link.dir);
                mark_to_drop(std);
                exit;
            }
            link_in.count(hdr.link.dir);
            link_free.write(hdr.link.dir, hdr.pass.free);
            // (A value computed in a register write would be a metadata
            // field of p4c's, reset on every pass.)
            next_seq.read(hdr.pass.seq, hdr.link.dir);
            hdr.link.seq = hdr.pass.seq;
            hdr.pass.seq = hdr.pass.seq + 1;
            next_seq.write(hdr.link.dir, hdr.pass.seq);
            if (hdr.link.flags & PKT_QUEUED != 0) {
                hdr.pass.waiting = hdr.pass.waiting + 1;
                queue_pkts.write(hdr.link.dir, hdr.pass.waiting);
                hdr.pass.waiting_bytes = hdr.pass.waiting_bytes + hdr.pass.l3_len;
                queue_bytes.write(hdr.link.dir, hdr.pass.waiting_bytes);
            }
        } else {
            hdr.pass.now = hdr.link.now_us;
            if (hdr.link.flags & PKT_QUEUED != 0 && hdr.pass.now >= hdr.link.start_us) {
                hdr.pass.l3_len = std.packet_length -
                                  (ETH_HEADER_BYTES + hdr.link.minSizeInBytes());
                queue_pkts.read(hdr.pass.waiting, hdr.link.dir);
                hdr.pass.waiting = hdr.pass.waiting - 1;
                queue_pkts.write(hdr.link.dir, hdr.pass.waiting);
                queue_bytes.read(hdr.pass.waiting_bytes, hdr.link.dir);
                hdr.pass.waiting_bytes = hdr.pass.waiting_bytes - hdr.pass.l3_len;
                queue_bytes.write(hdr.link.dir, hdr.pass.waiting_bytes);
                hdr.link.flags = hdr.link.flags & ~PKT_QUEUED;
            }
        }
        next_release.read(hdr.pass.next, hdr.link.dir);
        if (hdr.pass.now >= hdr.link.due_us && hdr.link.seq == hdr.pass.next) {
            hdr.pass.next = hdr.pass.next + 1;
            next_release.write(hdr.link.dir, hdr.pass.next);
            hdr.link.flags = hdr.link.flags | PKT_RELEASED;
            if (hdr.link.flags & PKT_FLOOD == 0) {
                std.egress_spec = (bit<9>) hdr.link.dest;
            } else {
                std.mcast_grp = hdr.link.dest;
            }
        } else {
            std.egress_spec = HOLD_PORT_BASE + (((bit<9>) hdr.link.seq & HOLD_PORT_MASK) << 2);
        }
    }
}

control PlainEgress(inout plain_headers_t hdr, inout plain_metadata_t meta,
                    inout standard_metadata_t std) {
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) link_out;

    apply {
        if (hdr.link.flags & PKT_RELEASED != 0) {
            link_out.count(hdr.link.dir);
            hdr.link.setInvalid();
        } else {
            hdr.link.now_us = std.egress_global_timestamp;
            recirculate_preserving_field_list(1);   // empty: the state rides in the packet
        }
    }
}

control PlainDeparser(packet_out pkt, in plain_headers_t hdr) {
    apply {
        pkt.emit(hdr.clock_stamp);
        pkt.emit(hdr.link);   // held: its state rides ahead of the frame
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv6);
        pkt.emit(hdr.l4);
    }
}

V1Switch(PlainParser(), NoChecksum(), PlainIngress(), PlainEgress(), NoChecksum(),
         PlainDeparser()) main;
