// The hold: a packet that is not yet due is sent to one of 16
// interface-less hold ports and recirculated at the end of egress, with its
// link state (link_state_h, the egress clock in it) emitted ahead of the
// frame and extracted again on the next pass: cheaper in BMv2 than a field
// list, whose fields are reset and copied one by one on every pass. Ingress
// decides on every pass, so all link state is touched by BMv2's single
// ingress thread only.
//
// A switch with timed departure (tools/bmv2) keeps the packet asleep in its
// hold port's queue until the instant of its next event (metadata_t's
// depart_us: its wake_us), so a packet costs its arrival and one pass per
// event, whatever it waits; the controller deepens the hold ports' queues
// and raises the hold's capacity (LinkPass's hold_limit). A packet that
// waits for others sleeps until the earliest instant they could let it go:
// one waiting for its turn in release order until the packet it waits for
// is due (TurnWait), a deferred one until the head of its ring could leave
// the router queue. It goes round only while what it waits for is a pass
// away or has no instant (an outage), and so does a paced release.
//
// On stock BMv2 every held packet goes round, and a pass with nothing due
// (its wake_us is ahead) takes the fast path (LinkemuIngress): one
// condition, no table of the link model; every other pass is a full pass
// (LinkPass), several times dearer. The hold ports spread the held packets
// over 16 egress queues of BMv2's default 64 packets, which matches the
// 1024-packet recirculation queue: that queue bounds the loop (hold queues
// deepened to 4096 over Thrift held no more: 2000 held 1 s, 33 out,
// measured), so LinkPass admits no packet past HOLD_CAPACITY (size.p4).
// The hold ports are all = 0 mod 4, so one BMv2 egress worker serves them
// all, which keeps the loop on two threads.
//
// Turn lane: a due packet waiting for its turn in release order, or one
// that release pacing holds back, goes round on the port beside its hold
// port (= 1 mod 4: egress worker 1), not behind the held packets queued for
// worker 0, so it is looked at again sooner than a round of the loop later
// (500 frames held: 5-6 ms a round against the main loop's 8, measured; not
// within a few passes, as the switch's threads share one core; with hundreds
// due together no sooner, as the backlog then waits in the recirculation
// queue the lane shares: docs/benchmark.md). Packets
// join the loop wherever its round stands when they arrive, so its order is
// not link order; behind the main loop alone, packets due at once left one
// or two a round, and the wait added up from packet to packet (a loaded 10
// Mbit/s, 300 ms link: p99 293 ms late; with the lane 30-34 ms, measured
// 2026-11-24).
#ifndef LINKEMU_HOLD_P4
#define LINKEMU_HOLD_P4

#include "../headers.p4"
#include "../define_v1model.p4"
#include "deferred_ring.p4"

const bit<9> HOLD_PORT_BASE = 448;   // 448, 452, .. 508; no port from 448 up is attached
const bit<9> HOLD_PORT_MASK = 15;    // 16 hold ports, chosen by sequence number
const bit<9> TURN_PORT_OFFSET = 1;   // 449, 453, .. 509: the turn lane

// A direction's next packet to release, in link order (Release's
// next_release): LinkPass keeps it, and the fast path reads it for a packet
// waiting for its turn.
register<seq_t>(NUM_DIRECTIONS) release_next;

// By its place in link order, per direction, the instant those waiting for
// a held packet wake: its due instant, or with timed departure its next
// event, at which it may be released ahead (Release).
// A ring as long as a direction can hold (the timed hold's capacity), so no
// place is reused while its packet waits.
const bit<32> ORDER_RING = 16384;
const bit<32> ORDER_MASK = ORDER_RING - 1;
register<time_us_t>(NUM_DIRECTIONS * ORDER_RING) order_due;

bit<32> order_slot(in direction_t dir, in seq_t seq) {
    return (dir * ORDER_RING) | (seq & ORDER_MASK);
}

// The hold port of a held packet: its sequence number spreads the held
// packets over the hold ports.
bit<9> hold_port(in seq_t seq) {
    return HOLD_PORT_BASE + (((bit<9>) seq & HOLD_PORT_MASK) << 2);
}

bit<9> turn_port(in seq_t seq) {
    return hold_port(seq) + TURN_PORT_OFFSET;
}

// A due packet waiting for its turn behind `next` (the next to release in
// its direction) goes to the turn lane, with a timed departure asleep until
// `next` is due, at the latest when it gives up waiting (its wake_us); at
// once when `next` is due already, its release one pass away.
control TurnWait(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t std, in seq_t next) {
    apply {
        std.egress_spec = turn_port(hdr.link.pkt.seq);
        order_due.read(meta.depart_us, order_slot(hdr.link.pkt.dir, next));
        if (meta.depart_us > hdr.link.pkt.wake_us) {
            meta.depart_us = hdr.link.pkt.wake_us;
        }
    }
}

// A held packet that is not yet due but waits for something other than the
// clock: a deferred packet sleeps until it heads its ring (then it looks
// every pass: its passes are events that settle it) or another event
// settled it; a due packet waiting for its turn in release order sleeps
// until its turn comes or it gives up waiting. Sent round (std.egress_spec
// set) while it still waits. No locals here or anywhere in a pass: each is
// a metadata field (docs/bmv2-costs.md).
control HoldWait(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t std) {
    TurnWait() turn_wait;

    apply {
        if (hdr.link.pkt.isValid() &&
            hdr.link.pkt.now_us < hdr.link.pkt.wake_us) {
            if (hdr.link.pkt.flags & PKT_DEFERRED != 0) {
                defer_head.read(hdr.link.pkt.peek, hdr.link.pkt.dir);
            } else {
                release_next.read(hdr.link.pkt.peek, hdr.link.pkt.dir);
            }
            // Still asleep: its ticket, or its turn (PKT_TURN), has not come.
            if (hdr.link.pkt.flags & PKT_DEFERRED != 0 &&
                (int<32>) (hdr.link.pkt.ticket - hdr.link.pkt.peek) > 0) {
                std.egress_spec = hold_port(hdr.link.pkt.seq);
            } else if (hdr.link.pkt.flags & PKT_DEFERRED == 0 &&
                       (int<32>) (hdr.link.pkt.seq - hdr.link.pkt.peek) > 0) {
                turn_wait.apply(hdr, meta, std, hdr.link.pkt.peek);
            }
        }
    }
}

// A held packet goes round again with the egress clock, "now" for its next
// pass (a recirculated packet keeps a stale ingress timestamp).
control HoldRecirculate(inout headers_t hdr, inout standard_metadata_t std) {
    apply {
        hdr.link.pkt.now_us = std.egress_global_timestamp;
        recirculate_preserving_field_list(FL_HOLD);
    }
}

#endif
