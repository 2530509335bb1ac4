// NetEm's packet faults, per direction, each with its own probability:
//
// - reorder: the packet is sent ahead. It still takes its turn on the link
//   (the rate stays exact) but skips the propagation delay and does not wait
//   for the packets ahead of it, so it overtakes them;
// - duplicate: a second copy is released with it;
// - corrupt: one random bit of the four bytes after the TCP/UDP ports (TCP's
//   sequence number, UDP's length and checksum) is flipped, so the receiver's
//   checksum catches it as it would a bit error. Packets without those
//   headers are not corrupted.
//
// Drawn on arrival, where the headers are parsed.
#ifndef LINKEMU_PACKET_FAULTS_P4
#define LINKEMU_PACKET_FAULTS_P4

#include "../headers.p4"

control PacketFaults(in bit<16> rand_reorder, in bit<16> rand_duplicate,
                     in bit<16> rand_corrupt, in bit<5> flip_bit,
                     inout l4_h l4, inout link_meta_t m, out bool corrupted) {

    // Drawn in the action, with its parameters in place (docs/bmv2-costs.md).
    action set_faults(bit<32> reorder, bit<32> duplicate, bit<32> corrupt) {
        m.pkt.flags = m.pkt.flags | ((bit<32>) rand_reorder < reorder ? PKT_AHEAD : 0);
        m.params.delay_us = (bit<32>) rand_reorder < reorder ? 0 : m.params.delay_us;
        m.pkt.flags = m.pkt.flags | ((bit<32>) rand_duplicate < duplicate ? PKT_DUPLICATE : 0);
        corrupted = (bit<32>) rand_corrupt < corrupt && l4.isValid();
    }

    table packet_faults {
        key = { m.pkt.dir : exact @name("dir"); }
        actions = { set_faults; }
        const default_action = set_faults(0, 0, 0);
        size = NUM_DIRECTIONS;
    }

    apply {
        packet_faults.apply();
        if (corrupted) {
            l4.word = l4.word ^ ((bit<32>) 1 << flip_bit);
        }
    }
}

#endif
