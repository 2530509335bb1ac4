// Deferred best effort (a profile's priority split, or a rate that changes
// over time): the waiting best-effort packets of a direction are a ring of
// tickets with their arrival and sizes. Every event of the direction offers
// the head the link (BestEffortStart, in LinkPass); a deferred packet picks
// its start and place in link order up from its slot.
#ifndef LINKEMU_DEFERRED_RING_P4
#define LINKEMU_DEFERRED_RING_P4

#include "../headers.p4"

const bit<32> DEFER_MASK = DEFER_RING - 1;

register<bit<32>>(NUM_DIRECTIONS) defer_head;   // next ticket to start; the hold's
                                                // fast path reads it too
register<bit<32>>(NUM_DIRECTIONS) defer_tail;   // next ticket to hand out
register<time_us_t>(NUM_DIRECTIONS * DEFER_RING) defer_arrival;
register<bit<32>>(NUM_DIRECTIONS * DEFER_RING) defer_bytes;       // link bytes
register<time_q_t>(NUM_DIRECTIONS * DEFER_RING) defer_share_cost;
register<time_q_t>(NUM_DIRECTIONS * DEFER_RING) defer_start;      // set when it starts
register<time_q_t>(NUM_DIRECTIONS * DEFER_RING) defer_cost;
register<seq_t>(NUM_DIRECTIONS * DEFER_RING) defer_seq;
register<bit<32>>(NUM_DIRECTIONS * DEFER_RING) defer_pos;

bit<32> defer_slot(in direction_t dir, in bit<32> ticket) {
    return (dir * DEFER_RING) | (ticket & DEFER_MASK);
}

// A slot for the register accesses that follow is set by a table's action:
// p4c copies a slot computed in a control into a temporary of its own at
// every access (docs/bmv2-costs.md).

// hdr.pass.head and tail; the head's arrival and sizes if the ring is not
// empty.
control DeferredHead(inout headers_t hdr) {
    action head_slot() { hdr.feature.slot = defer_slot(hdr.link.pkt.dir, hdr.pass.head); }
    table slot_of_head { actions = { head_slot; } const default_action = head_slot(); }

    apply {
        defer_head.read(hdr.pass.head, hdr.link.pkt.dir);
        defer_tail.read(hdr.pass.tail, hdr.link.pkt.dir);
        if (hdr.pass.head != hdr.pass.tail) {
            hdr.feature.setValid();
            slot_of_head.apply();
            defer_arrival.read(hdr.feature.arrival, hdr.feature.slot);
            defer_bytes.read(hdr.feature.bytes, hdr.feature.slot);
            defer_share_cost.read(hdr.feature.share_cost, hdr.feature.slot);
        }
    }
}

// The head was given its start (hdr.feature.start, cost, pos_in) and its
// place in link order (hdr.pass.seq): its packet picks them up; the next
// ticket heads the ring.
control DeferredStarted(inout headers_t hdr) {
    apply {
        defer_seq.write(hdr.feature.slot, hdr.pass.seq);
        defer_start.write(hdr.feature.slot, hdr.feature.start);
        defer_cost.write(hdr.feature.slot, hdr.feature.cost);
        defer_pos.write(hdr.feature.slot, hdr.feature.pos_in);
        hdr.pass.head = hdr.pass.head + 1;
        defer_head.write(hdr.link.pkt.dir, hdr.pass.head);
    }
}

// An arriving best-effort packet takes the tail's ticket, with its link
// bytes (taken in the action, for the same reason as the slot).
control DeferredEnqueue(inout headers_t hdr) {
    action tail_slot() {
        hdr.feature.slot = defer_slot(hdr.link.pkt.dir, hdr.pass.tail);
        hdr.feature.bytes = hdr.pass.l3_len + hdr.link.params.overhead_bytes;
    }
    table slot_of_tail { actions = { tail_slot; } const default_action = tail_slot(); }

    apply {
        slot_of_tail.apply();
        defer_arrival.write(hdr.feature.slot, hdr.pass.now);
        defer_bytes.write(hdr.feature.slot, hdr.feature.bytes);
        defer_share_cost.write(hdr.feature.slot, hdr.feature.share_cost);
        hdr.link.pkt.ticket = hdr.pass.tail;
        // Its ticket spreads it over the hold ports until it starts.
        hdr.link.pkt.seq = hdr.pass.tail;
        hdr.pass.tail = hdr.pass.tail + 1;
        defer_tail.write(hdr.link.pkt.dir, hdr.pass.tail);
    }
}

// A deferred packet whose start was settled: its start, cost, place in link
// order and link position from its slot.
control DeferredTake(inout headers_t hdr) {
    action ticket_slot() { hdr.feature.slot = defer_slot(hdr.link.pkt.dir, hdr.link.pkt.ticket); }
    table slot_of_ticket { actions = { ticket_slot; } const default_action = ticket_slot(); }

    apply {
        slot_of_ticket.apply();
        defer_start.read(hdr.feature.start, hdr.feature.slot);
        defer_cost.read(hdr.feature.cost, hdr.feature.slot);
        defer_seq.read(hdr.link.pkt.seq, hdr.feature.slot);
        defer_pos.read(hdr.link.pkt.pos, hdr.feature.slot);
    }
}

#endif
