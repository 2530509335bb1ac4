// QueueDeparture, a held packet's third phase (LinkPass): a deferred packet
// whose start was settled takes it; a packet whose router-queue departure
// has come leaves the queue, and COBALT's late verdict spares the queue's
// last packet, which takes the link then.
#ifndef LINKEMU_QUEUE_DEPARTURE_P4
#define LINKEMU_QUEUE_DEPARTURE_P4

#include "../../../../include/control/link_clock.p4"
#include "../../headers.p4"
#include "../deferred_ring.p4"
#include "../queue_state.p4"

control QueueDeparture(inout headers_t hdr)(register<time_q_t> link_free) {
    DeferredTake() deferred_take;
    SetTimes() set_times;
    QueueLeave() leave_queue;
    QueueBehind() queue_behind;

    apply {
        if (hdr.pass.settles) {
            // Its start was settled: take it, with its place in link order.
            hdr.feature.setValid();
            deferred_take.apply(hdr);
            set_times.apply(hdr.feature.start, hdr.feature.cost, hdr.link);
            hdr.link.pkt.leave_us = hdr.pass.now;   // settled: it has left
            hdr.link.pkt.flags = hdr.link.pkt.flags & ~PKT_DEFERRED;
        }
        if (hdr.link.pkt.flags & (PKT_QUEUED | PKT_FQ) == PKT_QUEUED &&
            hdr.pass.now >= hdr.link.pkt.leave_us) {
            if (hdr.link.pkt.flags & PKT_AQM_LATE == 0) {
                leave_queue.apply(hdr);
            } else {
                queue_behind.apply(hdr);
                if (hdr.pass.waiting == 0) {
                    // COBALT spares its queue's last packet: it takes the
                    // link where the link is free, the instant it leaves.
                    hdr.feature.setValid();
                    link_free.read(hdr.pass.free, hdr.link.pkt.dir);
                    hdr.feature.cost = (time_q_t) (hdr.pass.l3_len +
                                                   hdr.link.params.overhead_bytes) *
                                       (time_q_t) hdr.link.params.byte_cost_q;
                    set_times.apply(hdr.pass.free, hdr.feature.cost, hdr.link);
                    hdr.pass.free = hdr.pass.free + hdr.feature.cost;
                    link_free.write(hdr.link.pkt.dir, hdr.pass.free);
                    hdr.link.pkt.flags = (hdr.link.pkt.flags &
                                          ~(PKT_AQM_LATE | PKT_BLUE | PKT_LOST |
                                            PKT_LINK_DONE)) |
                                         (hdr.link.params.features & FEATURE_LINK_ERRORS == 0 ?
                                          PKT_LINK_DONE : 0);
                }
            }
        }
    }
}

#endif
