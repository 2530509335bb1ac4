// The price of linkemu's shape: bench/hold.p4's loop (forward a frame when
// the hold written in it is over, recirculate it until then) in a program of
// linkemu's shape that does nothing else with it. BMv2 resets every metadata
// field on every pass and walks every table and condition on a packet's path,
// whatever they do, and marks every header invalid when a packet's pass
// ends. This program has 19 metadata fields and 18 headers, as linkemu has
// (p4c's locals and temporaries included), carries its hold ahead of the
// frame as linkemu carries its state, and on a frame's first pass it takes
// 50 conditions and 50 table applications (a zero-delay linkemu frame went
// through about 50 tables and 56 conditions, counted with callgrind, and
// resets the headers of its pass besides); its held passes, like linkemu's
// fast path, only check the time. Its rate and hold error are what that
// shape alone costs on this BMv2 build.
#include <core.p4>
#include <v1model.p4>

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

header unused_h {
    bit<8> b;
}

#define UNUSED5(t) unused_h u##t##0; unused_h u##t##1; unused_h u##t##2; unused_h u##t##3; \
    unused_h u##t##4;

struct headers_t {
    hold_h     hold;
    ethernet_h ethernet;
    bench_h    bench;
    UNUSED5(0) UNUSED5(1) UNUSED5(2)
}

#define FIELDS10(t) bit<32> f##t##0; bit<32> f##t##1; bit<32> f##t##2; bit<32> f##t##3; \
    bit<32> f##t##4; bit<32> f##t##5; bit<32> f##t##6; bit<32> f##t##7; bit<32> f##t##8; \
    bit<32> f##t##9;

struct metadata_t {
    FIELDS10(0)
    bit<32> f10; bit<32> f11; bit<32> f12; bit<32> f13; bit<32> f14; bit<32> f15; bit<32> f16;
    bit<32> f17; bit<32> f18;
}

parser ShapeParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
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

// One statement run as p4c makes it: a condition, then a keyless table whose
// action does two assignments.
#define STEP(n) \
    action step##n() { meta.f00 = meta.f01 + n; meta.f02 = meta.f00; } \
    table run##n { actions = { step##n; } const default_action = step##n(); }
#define APPLY(n) if (meta.f03 != n + 1) { run##n.apply(); }
#define STEPS10(t) STEP(t##0) STEP(t##1) STEP(t##2) STEP(t##3) STEP(t##4) \
    STEP(t##5) STEP(t##6) STEP(t##7) STEP(t##8) STEP(t##9)
#define APPLIES10(t) APPLY(t##0) APPLY(t##1) APPLY(t##2) APPLY(t##3) APPLY(t##4) \
    APPLY(t##5) APPLY(t##6) APPLY(t##7) APPLY(t##8) APPLY(t##9)

control ShapeIngress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t std) {
    STEPS10(1) STEPS10(2) STEPS10(3) STEPS10(4) STEPS10(5)

    apply {
        if (std.instance_type != INSTANCE_TYPE_RECIRC) {
            APPLIES10(1) APPLIES10(2) APPLIES10(3) APPLIES10(4) APPLIES10(5)
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
        }
    }
}

control ShapeEgress(inout headers_t hdr, inout metadata_t meta,
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

control ShapeDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.hold);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.bench);
    }
}

V1Switch(ShapeParser(), NoChecksum(), ShapeIngress(), ShapeEgress(), NoChecksum(),
         ShapeDeparser()) main;
