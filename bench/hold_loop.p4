// The benchmark's hold loop, included by bench/hold.p4 (the loop alone) and
// bench/shape.p4 (the loop in linkemu's shape): each frame leaves on port 2
// once the hold written in it by bench/traffic.py is over, and is
// recirculated until then (asleep until then in its hold port's queue, on a
// switch with timed departure), its hold carried in a header ahead of the frame
// as linkemu carries its link state (cheaper in BMv2 than a field list).
//
// An including program may define, before the #include:
//   EXTRA_HEADERS    more members of headers_t
//   EXTRA_METADATA   members of metadata_t
//   FIRST_PASS_DECLS declarations of the ingress control
//   FIRST_PASS       statements run on a frame's first pass only
#ifndef BENCH_HOLD_LOOP_P4
#define BENCH_HOLD_LOOP_P4

#include <core.p4>
#include <v1model.p4>

#ifndef EXTRA_HEADERS
#define EXTRA_HEADERS
#endif
#ifndef EXTRA_METADATA
#define EXTRA_METADATA
#endif
#ifndef FIRST_PASS_DECLS
#define FIRST_PASS_DECLS
#endif
#ifndef FIRST_PASS
#define FIRST_PASS
#endif

const bit<32> INSTANCE_TYPE_RECIRC = 4;
const bit<9>  HOLD_PORT_BASE = 448;   // 16 interface-less ports, as in linkemu
const bit<9>  HOLD_PORT_MASK = 15;
const bit<16> ETHERTYPE_BENCH = 0x88b5;

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

// bench/traffic.py's frame: a sequence number, then the hold in microseconds.
header bench_h {
    bit<32> seq;
    bit<32> hold_us;
}

// The hold, emitted ahead of the frame while it is held.
header hold_h {
    bit<48> due_us;
    bit<48> now_us;
    bit<9>  hold_port;
    bit<7>  pad;
}

struct headers_t {
    hold_h     hold;
    ethernet_h ethernet;
    bench_h    bench;
    EXTRA_HEADERS
}

// The instant a held frame's hold port sends it round again, on a switch
// with timed departure (tools/bmv2), as linkemu's: there the loop sleeps.
struct metadata_t {
    bit<48> depart_us;
    EXTRA_METADATA
}

parser HoldParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t std) {
    state start {
        transition select(std.instance_type) {
            INSTANCE_TYPE_RECIRC : parse_held;   // as linkemu: only its hold is parsed again
            default              : parse_ethernet;
        }
    }
    state parse_held {
        pkt.extract(hdr.hold);
        transition accept;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_BENCH : parse_bench;
            default         : accept;
        }
    }
    state parse_bench {
        pkt.extract(hdr.bench);
        transition accept;
    }
}

control NoChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control HoldIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t std) {
    FIRST_PASS_DECLS

    apply {
        if (std.instance_type != INSTANCE_TYPE_RECIRC) {
            FIRST_PASS
            hdr.hold.setValid();
            hdr.hold.now_us = std.ingress_global_timestamp;
            hdr.hold.due_us = hdr.hold.now_us;
            if (hdr.bench.isValid()) {
                hdr.hold.due_us = hdr.hold.now_us + (bit<48>) hdr.bench.hold_us;
            }
            hdr.hold.hold_port = HOLD_PORT_BASE + (((bit<9>) hdr.bench.seq & HOLD_PORT_MASK) << 2);
        }
        if (hdr.hold.now_us >= hdr.hold.due_us) {
            std.egress_spec = 2;
        } else {
            std.egress_spec = hdr.hold.hold_port;
            meta.depart_us = hdr.hold.due_us;
        }
    }
}

control HoldEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t std) {
    apply {
        if (std.egress_port != 2) {
            hdr.hold.now_us = std.egress_global_timestamp;
            recirculate_preserving_field_list(1);   // empty: the hold rides in the packet
        } else {
            hdr.hold.setInvalid();
        }
    }
}

control HoldDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.hold);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.bench);
    }
}

V1Switch(HoldParser(), NoChecksum(), HoldIngress(), HoldEgress(), NoChecksum(),
         HoldDeparser()) main;

#endif
