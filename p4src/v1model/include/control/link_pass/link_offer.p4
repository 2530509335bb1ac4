// LinkOffer, a pass's second phase (LinkPass): a featured direction's
// parameters, the link offered to the head of its deferred best effort
// (BestEffortStart), and the delay of a packet whose instants are set now.
#ifndef LINKEMU_LINK_OFFER_P4
#define LINKEMU_LINK_OFFER_P4

#include "../../../../include/control/link_params.p4"
#include "../../../../include/control/best_effort.p4"
#include "../../../../include/control/delay_variation.p4"
#include "../../headers.p4"
#include "../flow_queues.p4"
#include "../deferred_ring.p4"
#include "../queue_state.p4"

control LinkOffer(inout headers_t hdr)
                 (register<time_q_t> link_free, register<time_q_t> class_free,
                  register<seq_t> next_seq, register<time_us_t> retx_busy_until,
                  register<bit<32>> started_bytes, register<bit<32>> block_from) {
    LinkParams() link_params;
    FlowParams() flow_params;
    DeferredHead() deferred_head;
    BestEffortStart() best_effort_start;
    DeferredStarted() deferred_started;
    QueueLastLeave() queue_last_leave;
    DelayVariation() delay_variation;

    apply {
        // A direction with optional features, or a packet of one that
        // defers best effort, reads its parameters. Every event of such a
        // direction offers the link to the head of its deferred best effort,
        // before a new packet can claim it. A deferred packet left over from
        // a profile without deferral settles itself on its own passes.
        // (Features are tested in place: p4c gives a function's result in a
        // condition a temporary of its own. head, tail and settles are 0
        // unless set here: BMv2 zeroes a header made valid.)
        if (hdr.pass.featured ||
            hdr.link.pkt.flags & (PKT_OFFERS | PKT_DEFERRED | PKT_AQM_LATE | PKT_FQ) != 0) {
            link_params.apply(hdr.link);
            // (A packet queued before a push that took flow isolation away
            // drains with the default quantum, at the new rate.)
            if (hdr.link.params.features & FEATURE_FLOWS != 0 ||
                hdr.link.pkt.flags & PKT_FQ != 0) {
                flow_params.apply(hdr);
            }
            if (hdr.link.params.features & FEATURE_DEFERRED != 0 ||
                hdr.link.pkt.flags & PKT_DEFERRED != 0) {
                deferred_head.apply(hdr);
                if (hdr.pass.head != hdr.pass.tail) {
                    link_free.read(hdr.pass.free, hdr.link.pkt.dir);
                    class_free.read(hdr.feature.cap_free, hdr.link.pkt.dir);
                    if (hdr.link.params.send_buffer != 0) {
                        started_bytes.read(hdr.feature.pos_in, hdr.link.pkt.dir);
                        block_from.read(hdr.feature.block_pos, hdr.link.pkt.dir);
                        retx_busy_until.read(hdr.pass.busy_until, hdr.link.pkt.dir);
                    }
                    best_effort_start.apply(hdr.pass.now, hdr.link.params, hdr.pass.free,
                                            hdr.feature.cap_free, hdr.feature.arrival,
                                            hdr.feature.bytes, hdr.feature.share_cost,
                                            hdr.feature.pos_in, hdr.feature.block_pos,
                                            hdr.pass.busy_until, hdr.feature.settled,
                                            hdr.feature.start, hdr.feature.leave_us,
                                            hdr.feature.cost);
                    if (!hdr.feature.settled) {
                        // An outage, or blocked behind a retransmission: the
                        // link's time passed unused (every offer pays for
                        // the test, not the write).
                        if (hdr.link.params.down == 1 || hdr.link.params.send_buffer != 0) {
                            link_free.write(hdr.link.pkt.dir, hdr.pass.free);
                        }
                    } else {
                        next_seq.read(hdr.pass.seq, hdr.link.pkt.dir);
                        deferred_started.apply(hdr);
                        hdr.pass.seq = hdr.pass.seq + 1;
                        next_seq.write(hdr.link.pkt.dir, hdr.pass.seq);
                        hdr.feature.pos_in = hdr.feature.pos_in + hdr.feature.bytes;
                        started_bytes.write(hdr.link.pkt.dir, hdr.feature.pos_in);
                        link_free.write(hdr.link.pkt.dir, hdr.pass.free);
                        class_free.write(hdr.link.pkt.dir, hdr.feature.cap_free);
                        queue_last_leave.apply(hdr.link.pkt.dir, hdr.feature.leave_us);
                    }
                }
                hdr.pass.settles = hdr.link.pkt.flags & PKT_DEFERRED != 0 &&
                                   (int<32>) (hdr.link.pkt.ticket - hdr.pass.head) < 0;
            }

            // This packet's own delay, drawn where its instants are set: on
            // arrival, or when a deferred packet's start is settled.
            if ((hdr.pass.featured || hdr.pass.settles) &&
                hdr.link.params.features & FEATURE_DELAY_VARIATION != 0) {
                hdr.feature.setValid();
                random(hdr.feature.rand_index, 0, 1023);
                random(hdr.feature.rand_spike, 0, 0xffff);
                delay_variation.apply(hdr.feature.rand_index, hdr.feature.rand_spike, hdr.link);
            }
        }
    }
}

#endif
