// When a held packet may leave the far end of the link.
//
// A packet is released once its due instant has passed and every packet
// admitted before it in the same direction has left (FIFO), so frames behind
// one under ARQ retransmission are released right after it, in order. The
// wait ends stall_us after the due instant: the control plane sets it past
// the longest ARQ hold, or to 0 to turn in-order release off. A packet that
// waits for its turn sleeps until then (wake_us). A lost packet
// (ARQ gave up) is "released" in its turn, to be dropped. A packet sent ahead
// (PacketFaults' reorder) has no place in that order and goes when due.
//
// Where the switch has timed departure (PKT_TIMED), a packet is released
// before it is due once it is settled: next in line, through the router
// queue, and through the link or lost (no error draw left). It then sleeps
// in its output port's queue until it is due, in line behind the packets
// released before it, and costs no pass at its due instant. A packet whose
// event is logged (the log reads the clock at its release) or that is
// replicated (a flood or a duplicate) is released when due.
#ifndef LINKEMU_RELEASE_P4
#define LINKEMU_RELEASE_P4

#include "../headers.p4"

// next_release comes in as the register holds it and leaves as it is to be
// written back. The verdict is in the flags: PKT_RELEASED (with
// PKT_SKIPPED when earlier packets have not left), or PKT_TURN for a due
// packet that waits for its turn.
control Release(in time_us_t now_us, inout seq_t next_release, inout link_meta_t m) {

    // In an action, where ?: stays an expression (docs/bmv2-costs.md), with
    // its parameter in place. The flags are set first, and the rest reads
    // them there: BMv2 evaluates an expression anew wherever p4c puts it.
    action decide(time_us_t stall_us) {
        // Modular distance to the next packet in line: below 2^31 this
        // packet is at or after it, above it its turn was skipped already and
        // it must not wait any more. Compared unsigned: a signed cast costs
        // BMv2 a modulo.
        bit<32> behind = m.pkt.seq - next_release;
        bool waits = behind - 1 < 0x7fffffff;   // behind is in 1 .. 2^31 - 1
        bool in_line = m.pkt.flags & PKT_AHEAD == 0;
        bool settled = m.pkt.flags & (PKT_TIMED | PKT_LINK_DONE | PKT_QUEUED | PKT_DEFERRED |
                                      PKT_LOG | PKT_AHEAD | PKT_DUPLICATE | PKT_FLOOD) ==
                       (PKT_TIMED | PKT_LINK_DONE) && behind == 0;
        m.pkt.flags = (m.pkt.flags & ~PKT_TURN) |
                      (now_us < m.pkt.due_us && !settled ? 0 :
                       (!in_line || !waits || now_us >= m.pkt.due_us + stall_us ?
                        PKT_RELEASED | (in_line && waits ? PKT_SKIPPED : 0) :
                        PKT_TURN));
        m.pkt.wake_us = m.pkt.due_us + stall_us;   // for PKT_TURN: when it gives up
        // (The flags read anew, not a local kept from before they changed,
        // which would be a metadata field.)
        next_release = m.pkt.flags & (PKT_RELEASED | PKT_AHEAD) == PKT_RELEASED &&
                       behind < 0x80000000 ? m.pkt.seq + 1 : next_release;
    }

    // Without an entry a direction releases each packet when it is due.
    table release {
        key = { m.pkt.dir : exact @name("dir"); }
        actions = { decide; }
        const default_action = decide(0);
        size = NUM_DIRECTIONS;
    }

    apply {
        release.apply();
    }
}

#endif
