// Whether a packet is ECN-capable (ECT(0), ECT(1), or CE already), and marking
// it Congestion Experienced. IPv4's header checksum is the architecture's:
// its glue defines ECN_MARK_IPV4_CHECKSUM(ipv4), a statement EcnMark runs
// before it changes the ECN field (v1model's updates the checksum there,
// incrementally: define_v1model.p4; a TNA deparser recomputes it, and its
// glue defines the statement empty).
#ifndef LINKEMU_ECN_MARK_P4
#define LINKEMU_ECN_MARK_P4

#include "../headers.p4"

#ifndef ECN_MARK_IPV4_CHECKSUM
#error "the architecture's glue defines ECN_MARK_IPV4_CHECKSUM(ipv4) first"
#endif

const bit<2> ECN_NOT_ECT = 0;
const bit<2> ECN_ECT1 = 1;
const bit<2> ECN_CE = 3;

control EcnCapable(in ipv4_h ipv4, in ipv6_h ipv6, out bool capable, out bool ect1) {
    apply {
        capable = (ipv4.isValid() && ipv4.ecn != ECN_NOT_ECT) ||
                  (ipv6.isValid() && ipv6.ecn != ECN_NOT_ECT);
        ect1 = (ipv4.isValid() && ipv4.ecn == ECN_ECT1) ||
               (ipv6.isValid() && ipv6.ecn == ECN_ECT1);
    }
}

control EcnMark(inout ipv4_h ipv4, inout ipv6_h ipv6) {
    apply {
        if (ipv4.isValid()) {
            ECN_MARK_IPV4_CHECKSUM(ipv4);
            ipv4.ecn = ECN_CE;
        } else if (ipv6.isValid()) {
            ipv6.ecn = ECN_CE;
        }
    }
}

#endif
