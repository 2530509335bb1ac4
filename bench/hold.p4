// The hold loop's baseline: BMv2 holding each benchmark frame for the time
// written in it, by the same recirculation loop as linkemu and nothing else.
// Its release error with N frames held is the floor any recirculating hold
// has on this BMv2 build and machine.
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

struct headers_t {
    ethernet_h ethernet;
    bench_h    bench;
}

struct metadata_t {
    @field_list(1) bit<48> due_us;
    @field_list(1) bit<48> now_us;
    @field_list(1) bit<9>  hold_port;
}

parser HoldParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t std) {
    state start {
        transition select(std.instance_type) {
            INSTANCE_TYPE_RECIRC : accept;   // as linkemu: a held frame is not parsed again
            default              : parse_ethernet;
        }
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
    apply {
        bit<48> now = meta.now_us;
        if (std.instance_type != INSTANCE_TYPE_RECIRC) {
            now = std.ingress_global_timestamp;
            meta.due_us = now + (bit<48>) (hdr.bench.isValid() ? hdr.bench.hold_us : 0);
            meta.hold_port = HOLD_PORT_BASE + (((bit<9>) hdr.bench.seq & HOLD_PORT_MASK) << 2);
        }
        std.egress_spec = now >= meta.due_us ? 9w2 : meta.hold_port;
    }
}

control HoldEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t std) {
    apply {
        if (std.egress_port != 2) {
            meta.now_us = std.egress_global_timestamp;
            recirculate_preserving_field_list(1);
        }
    }
}

control HoldDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.bench);
    }
}

V1Switch(HoldParser(), NoChecksum(), HoldIngress(), HoldEgress(), NoChecksum(),
         HoldDeparser()) main;
