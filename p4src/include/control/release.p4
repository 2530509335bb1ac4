// When a held packet may leave the far end of the link.
//
// A packet is released once its due instant has passed and every packet
// admitted before it in the same direction has left (FIFO), so frames behind
// one under ARQ retransmission are released right after it, in order. The
// wait ends stall_us after the due instant: the control plane sets it past
// the longest ARQ hold, or to 0 to turn in-order release off. A lost packet
// (ARQ gave up) is "released" in its turn, to be dropped. A packet sent ahead
// (PacketFaults' reorder) has no place in that order and goes when due.
#ifndef LINKEMU_RELEASE_P4
#define LINKEMU_RELEASE_P4

#include "../headers.p4"

control Release(in time_us_t now_us, in seq_t next_release, inout link_meta_t m,
                out seq_t new_next_release, out bool skipped, out bool blocked) {

    // In an action, where ?: stays an expression (see headers.p4).
    action decide() {
        // Modular distance to the next packet in line; negative means this
        // packet's turn was skipped already and it must not wait any more.
        int<32> ahead = (int<32>) (m.pkt.seq - next_release);
        bool due = now_us >= m.pkt.due_us;
        bool gave_up = now_us >= m.pkt.due_us + m.params.stall_us;

        bool in_line = m.pkt.flags & PKT_AHEAD == 0;
        bool go = due && (!in_line || ahead <= 0 || gave_up);
        skipped = go && in_line && ahead > 0;
        blocked = due && !go;
        new_next_release = go && in_line && ahead >= 0 ? m.pkt.seq + 1 : next_release;
        // Last: the values above read the flags as they came in.
        m.pkt.flags = m.pkt.flags | (go ? PKT_RELEASED : 0);   // a held packet's is 0
    }

    apply {
        decide();
    }
}

#endif
