// A TNA shell around one architecture-neutral control of p4src/include:
// check_controls.py fills in CONTROL_FILE, PROBE_DECL and PROBE_APPLY and
// compiles it with bf-p4c, to tell which controls Tofino takes as they are.
#include <core.p4>
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif
#include "../../p4src/include/headers.p4"
// TNA's deparser recomputes IPv4's header checksum: EcnMark leaves it.
#define ECN_MARK_IPV4_CHECKSUM(ipv4)
#include CONTROL_FILE

struct ig_hdr_t { ethernet_h ethernet; ipv4_h ipv4; ipv6_h ipv6; l4_h l4; }
// The link state, and arguments of every width the controls take.
struct ig_meta_t {
    link_meta_t link;
    time_q_t q1; time_q_t q2; time_q_t q3; time_q_t q4; time_q_t q5; time_q_t q6;
    time_us_t u1; time_us_t u2; time_us_t u3;
    bit<32> b1; bit<32> b2; bit<32> b3; bit<32> b4;
    bit<16> r1; bit<16> r2; bit<16> r3; bit<10> r10; bit<5> r5; bit<1> bit1; bit<1> bit2;
    bool f1; bool f2; bool f3; bool f4; bool f5;
    bit<2> v2;
    seq_t seq;
    link_params_h params;
    cobalt_state_t cs; cobalt_work_t cw;
    red_state_t rs; red_work_t rw;
    class_key_t ck;
}

parser IgParser(packet_in pkt, out ig_hdr_t hdr, out ig_meta_t meta,
                out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control Ig(inout ig_hdr_t hdr, inout ig_meta_t meta,
           in ingress_intrinsic_metadata_t ig_intr_md,
           in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
           inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
           inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    PROBE_DECL
    apply {
        PROBE_APPLY
        ig_tm_md.ucast_egress_port = 0;
    }
}

control IgDeparser(packet_out pkt, inout ig_hdr_t hdr, in ig_meta_t meta,
                   in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply { pkt.emit(hdr); }
}

parser EgParser(packet_in pkt, out ig_hdr_t hdr, out ig_meta_t meta,
                out egress_intrinsic_metadata_t eg_intr_md) {
    state start { pkt.extract(eg_intr_md); transition accept; }
}
control Eg(inout ig_hdr_t hdr, inout ig_meta_t meta, in egress_intrinsic_metadata_t eg_intr_md,
           in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
           inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
           inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) { apply {} }
control EgDeparser(packet_out pkt, inout ig_hdr_t hdr, in ig_meta_t meta,
                   in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply { pkt.emit(hdr); }
}
Pipeline(IgParser(), Ig(), IgDeparser(), EgParser(), Eg(), EgDeparser()) pipe;
Switch(pipe) main;
