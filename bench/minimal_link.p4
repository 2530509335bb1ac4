// The least a link model does on BMv2: a virtual-clock rate, a propagation
// delay, a router queue with tail drop, an error draw whose probability
// follows the link state, and release in link order, for two directions,
// written in BMv2's cheapest form (few fields, few assignments, the
// arithmetic in one table action). No traffic classes, RED/ECN, ARQ,
// deferral, packet faults, event log or far-side MAC forwarding. Its
// zero-delay rate is the floor of what a link model costs on this BMv2
// build, beside plain forwarding's.
#include <core.p4>
#include <v1model.p4>

const bit<32> INSTANCE_TYPE_RECIRC = 4;
const bit<9>  HOLD_PORT_BASE = 448;   // 16 interface-less ports, as in linkemu
const bit<9>  HOLD_PORT_MASK = 15;
const bit<32> ETH_HEADER_BYTES = 14;
const bit<8>  FRAC = 20;              // the virtual clock's fixed point, as linkemu's
const bit<64> FRAC_MASK = 0xfffff;

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

// A packet's place on the link, carried ahead of the frame while it is held.
header link_h {
    bit<48> now_us;     // the latest egress pass
    bit<48> start_us;
    bit<48> due_us;
    bit<32> seq;        // link order
    bit<32> dir;        // a register index as it is: a cast would be a temporary
    bit<9>  out_port;
    bit<1>  queued;
    bit<6>  pad;
}

struct headers_t {
    link_h     link;
    ethernet_h ethernet;
}

// An arrival's working values.
struct metadata_t {
    bit<64> free;       // the link's virtual clock
    bit<64> new_free;
    bit<32> waiting;    // packets in the router queue
    bit<32> seq;        // the direction's next sequence number, then its next release
    bit<16> rand;
    bit<1>  drop;
}

parser MinimalParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t std) {
    state start {
        transition select(std.instance_type) {
            INSTANCE_TYPE_RECIRC : parse_held;
            default              : parse_ethernet;
        }
    }
    state parse_held {
        pkt.extract(hdr.link);
        transition accept;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control NoChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MinimalIngress(inout headers_t hdr, inout metadata_t meta,
                       inout standard_metadata_t std) {
    register<bit<64>>(2) link_free;
    register<bit<32>>(2) queue_pkts;
    register<bit<32>>(2) next_seq;
    register<bit<32>>(2) next_release;
    counter(2, CounterType.packets_and_bytes) link_in;
    counter(2, CounterType.packets_and_bytes) dropped;

    action set_direction(bit<32> dir, bit<9> out_port) {
        hdr.link.setValid();
        hdr.link.dir = dir;
        hdr.link.out_port = out_port;
        hdr.link.now_us = std.ingress_global_timestamp;
    }

    table port_map {
        key = { std.ingress_port : exact; }
        actions = { set_direction; @defaultonly NoAction; }
        const default_action = NoAction;
        const entries = { 1 : set_direction(0, 2); 2 : set_direction(1, 1); }
    }

    // start = max(arrival, link free); due = start + length x cost + delay;
    // dropped when it must queue behind queue_limit packets, or by an error
    // whose probability (of 65536) is that of the link state in force.
    action arrive(bit<48> byte_cost_q, bit<48> delay_us, bit<32> queue_limit,
                  bit<48> state_change_us, bit<16> error_now, bit<16> error_next) {
        bit<64> now_q = (bit<64>) hdr.link.now_us << FRAC;
        bit<64> start_q = meta.free > now_q ? meta.free : now_q;
        meta.new_free = start_q + (bit<64>) (std.packet_length - ETH_HEADER_BYTES) *
                                  (bit<64>) byte_cost_q;
        hdr.link.start_us = (bit<48>) ((start_q + FRAC_MASK) >> FRAC);
        hdr.link.due_us = (bit<48>) ((meta.new_free + FRAC_MASK) >> FRAC) + delay_us;
        hdr.link.queued = start_q > now_q ? 1w1 : 1w0;
        meta.drop = (start_q > now_q && meta.waiting >= queue_limit) ||
                    meta.rand < (hdr.link.now_us >= state_change_us ? error_next : error_now)
                    ? 1w1 : 1w0;
    }

    // Written by the benchmark from its profile (benchmark.minimal_link_entries).
    table link {
        key = { hdr.link.dir : exact; }
        actions = { arrive; @defaultonly NoAction; }
        const default_action = NoAction;
        size = 2;
    }

    apply {
        if (std.instance_type != INSTANCE_TYPE_RECIRC) {
            if (!port_map.apply().hit) {
                mark_to_drop(std);
                exit;
            }
            link_free.read(meta.free, hdr.link.dir);
            queue_pkts.read(meta.waiting, hdr.link.dir);
            random(meta.rand, 0, 0xffff);
            link.apply();
            if (meta.drop == 1) {
                dropped.count(hdr.link.dir);
                mark_to_drop(std);
                exit;
            }
            link_in.count(hdr.link.dir);
            link_free.write(hdr.link.dir, meta.new_free);
            next_seq.read(meta.seq, hdr.link.dir);
            hdr.link.seq = meta.seq;
            next_seq.write(hdr.link.dir, meta.seq + 1);
            if (hdr.link.queued == 1) {
                queue_pkts.write(hdr.link.dir, meta.waiting + 1);
            }
        } else if (hdr.link.queued == 1 && hdr.link.now_us >= hdr.link.start_us) {
            queue_pkts.read(meta.waiting, hdr.link.dir);
            queue_pkts.write(hdr.link.dir, meta.waiting - 1);
            hdr.link.queued = 0;
        }
        next_release.read(meta.seq, hdr.link.dir);
        if (hdr.link.now_us >= hdr.link.due_us && hdr.link.seq == meta.seq) {
            next_release.write(hdr.link.dir, meta.seq + 1);
            std.egress_spec = hdr.link.out_port;
        } else {
            std.egress_spec = HOLD_PORT_BASE + (((bit<9>) hdr.link.seq & HOLD_PORT_MASK) << 2);
        }
    }
}

control MinimalEgress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t std) {
    counter(2, CounterType.packets_and_bytes) link_out;

    apply {
        if (std.egress_port == hdr.link.out_port) {
            link_out.count(hdr.link.dir);
            hdr.link.setInvalid();
        } else {
            hdr.link.now_us = std.egress_global_timestamp;
            recirculate_preserving_field_list(1);   // empty: the state rides in the packet
        }
    }
}

control MinimalDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.link);
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(MinimalParser(), NoChecksum(), MinimalIngress(), MinimalEgress(), NoChecksum(),
         MinimalDeparser()) main;
