// Whether a packet is ECN-capable (ECT(0), ECT(1), or CE already), and marking
// it Congestion Experienced. IPv4's header checksum is updated incrementally
// (RFC 1624), so options need no parsing.
#ifndef LINKEMU_ECN_MARK_P4
#define LINKEMU_ECN_MARK_P4

#include "../headers.p4"

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
            // The checksum first, the ECN field last: a local live across a
            // change of the header is a metadata field (docs/bmv2-costs.md).
            bit<32> sum = (bit<32>) ~ipv4.hdr_checksum +
                          (bit<32>) ~(ipv4.version ++ ipv4.ihl ++ ipv4.dscp ++ ipv4.ecn) +
                          (bit<32>) (ipv4.version ++ ipv4.ihl ++ ipv4.dscp ++ ECN_CE);
            sum = (sum & 0xffff) + (sum >> 16);
            sum = (sum & 0xffff) + (sum >> 16);
            ipv4.hdr_checksum = ~((bit<16>) sum);
            ipv4.ecn = ECN_CE;
        } else if (ipv6.isValid()) {
            ipv6.ecn = ECN_CE;
        }
    }
}

#endif
