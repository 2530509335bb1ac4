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

// The control's working values (a header, not locals: see headers.p4).
header packet_faults_work_h {
    bit<32> reorder_threshold;     // P x 65536
    bit<32> duplicate_threshold;
    bit<32> corrupt_threshold;
}

control PacketFaults(in bit<16> rand_reorder, in bit<16> rand_duplicate,
                     in bit<16> rand_corrupt, in bit<5> flip_bit,
                     inout l4_word_h l4_word, inout link_meta_t m, out bool corrupted) {
    packet_faults_work_h w;

    action set_faults(bit<32> reorder, bit<32> duplicate, bit<32> corrupt) {
        w.reorder_threshold = reorder;
        w.duplicate_threshold = duplicate;
        w.corrupt_threshold = corrupt;
    }

    table packet_faults {
        key = { m.pkt.dir : exact; }
        actions = { set_faults; }
        const default_action = set_faults(0, 0, 0);
        size = 2;
    }

    apply {
        corrupted = false;
        w.setValid();
        packet_faults.apply();
        if ((bit<32>) rand_reorder < w.reorder_threshold) {
            m.pkt.ahead = 1;
            m.params.delay_us = 0;
        }
        if ((bit<32>) rand_duplicate < w.duplicate_threshold) {
            m.pkt.dup = 1;
        }
        if ((bit<32>) rand_corrupt < w.corrupt_threshold && l4_word.isValid()) {
            l4_word.word = l4_word.word ^ ((bit<32>) 1 << flip_bit);
            corrupted = true;
        }
    }
}

#endif
