// v1model's constants: instance types, ports and groups of simple_switch.
#ifndef LINKEMU_DEFINE_V1MODEL_P4
#define LINKEMU_DEFINE_V1MODEL_P4

const bit<32> INSTANCE_TYPE_RECIRC = 4;
const bit<9>  CPU_PORT = 255;         // simple_switch_grpc --cpu-port: P4Runtime packet I/O
const bit<16> DUP_GROUP_BASE = 256;   // + port: that port twice (PacketFaults' duplicate)
const bit<8>  FL_HOLD = 1;            // empty (p4c warns so): the state rides in the packet

// HELD_CELLS: BMv2 counts a held packet's bytes with the state it carries
// ahead of the frame (link_state_h). The counters that can count a held
// packet have a second half of cells for it, and the controller takes those
// bytes off (switch/counters.py, counter_cells), so every byte count is the frame's.

// EcnMark's update of IPv4's header checksum (p4src/include/control/
// ecn_mark.p4), incremental (RFC 1624), so options need no parsing: only the
// ECN bits of the header's first word change, growing by ECN_CE - ecn, so
// HC' = ~(~HC + ~m + m') is ~(~HC + ECN_CE - ecn) in one's complement, and
// one fold carries the sum back into 16 bits. (The sum is written out
// twice: a local would be a metadata field, docs/bmv2-costs.md.)
#define ECN_MARK_IPV4_CHECKSUM(ipv4) \
    ipv4.hdr_checksum = ~((bit<16>) ( \
        (((bit<32>) ~ipv4.hdr_checksum + (bit<32>) (ECN_CE - ipv4.ecn)) & 0xffff) + \
        (((bit<32>) ~ipv4.hdr_checksum + (bit<32>) (ECN_CE - ipv4.ecn)) >> 16)))

#endif
