// LinkPass: one pass of a packet through the link model, its arrival or an
// event of a held packet (a turn of the hold loop that found something due),
// as a sequence of phases (link_pass/), each a control with the
// architecture-neutral link model (p4src/include/control) and the v1model
// glue it applies, and the counters only it counts. LinkPass owns the
// direction's link state between packets, which several phases read and
// write, and the counters that more than one phase counts, and hands them
// to the phases that use them as constructor arguments. An arrival on a plain direction (no optional
// feature but link errors) is worked out in one table action (LinkArrival,
// in PassEntry); the others' arrival and a deferred packet's passes read
// their direction's parameters into a header first (LinkOffer).
#ifndef LINKEMU_LINK_PASS_P4
#define LINKEMU_LINK_PASS_P4

#include "../headers.p4"
#include "link_pass/pass_entry.p4"
#include "link_pass/link_offer.p4"
#include "link_pass/arrival_features.p4"
#include "link_pass/admission.p4"
#include "link_pass/queue_departure.p4"
#include "link_pass/flow_turn.p4"
#include "link_pass/pass_exit.p4"

control LinkPass(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t std) {
    register<time_q_t>(NUM_DIRECTIONS) link_free;
    register<time_q_t>(NUM_QUEUES) class_free;            // a class's rate cap
    register<seq_t>(NUM_DIRECTIONS) next_seq;             // link order
    register<time_us_t>(NUM_DIRECTIONS) retx_busy_until;  // last ARQ due so far
    register<bit<32>>(NUM_DIRECTIONS) started_bytes;      // link bytes given a start
    register<bit<32>>(NUM_DIRECTIONS) block_from;         // BestEffortStart's block_pos

    // Router-queue counters are per class (queue_index).
    @brief("ECT(1) marked CE by the sojourn-time ramp")
    counter(NUM_QUEUES, CounterType.packets) ramp_marks;
    @brief("marked CE by COBALT")
    counter(NUM_QUEUES, CounterType.packets) cobalt_marks;
    @brief("dropped: COBALT's CoDel, leaving the router queue")
    counter(NUM_QUEUES, CounterType.packets_and_bytes) drop_codel;
    @brief("dropped: COBALT's BLUE, leaving the router queue")
    counter(NUM_QUEUES, CounterType.packets_and_bytes) drop_blue;

    PassEntry(link_free, next_seq) pass_entry;
    LinkOffer(link_free, class_free, next_seq, retx_busy_until, started_bytes,
              block_from) link_offer;
    ArrivalFeatures(class_free, retx_busy_until, started_bytes, block_from,
                    cobalt_marks) arrival_features;
    Admission(link_free, class_free, next_seq, started_bytes, ramp_marks) admission;
    QueueDeparture(link_free) queue_departure;
    FlowTurn(link_free, next_seq, ramp_marks, cobalt_marks, drop_codel, drop_blue) flow_turn;
    PassExit(retx_busy_until, block_from, drop_codel, drop_blue) pass_exit;

    apply {
        pass_entry.apply(hdr, std);           // exits unless the frame is the link's
        link_offer.apply(hdr);
        if (std.instance_type != INSTANCE_TYPE_RECIRC) {
            arrival_features.apply(hdr, std);
            admission.apply(hdr, std);
        } else {
            queue_departure.apply(hdr);
        }
        flow_turn.apply(hdr, std);
        pass_exit.apply(hdr, meta, std);
    }
}

#endif
