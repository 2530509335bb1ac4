// The benchmark's baseline: BMv2 forwarding port 1 <-> port 2 and nothing
// else, to measure linkemu against the substrate's own latency and capacity.
#include <core.p4>
#include <v1model.p4>

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

struct headers_t {
    ethernet_h ethernet;
}

struct metadata_t { }

parser ForwardParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control NoChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control ForwardIngress(inout headers_t hdr, inout metadata_t meta,
                       inout standard_metadata_t std) {
    apply {
        std.egress_spec = std.ingress_port == 1 ? 9w2 : 9w1;
    }
}

control ForwardEgress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t std) {
    apply { }
}

control ForwardDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(ForwardParser(), NoChecksum(), ForwardIngress(), ForwardEgress(), NoChecksum(),
         ForwardDeparser()) main;
