// Admission, an arrival's fourth phase (LinkPass): a packet the router
// queue refused is dropped; an admitted one takes the link and its place in
// link order, or its place in the deferred ring, and may be marked by the
// sojourn ramp; one that waits enters its router queue.
#ifndef LINKEMU_ADMISSION_P4
#define LINKEMU_ADMISSION_P4

#include "../../../../include/control/sojourn_ramp.p4"
#include "../../../../include/control/ecn_mark.p4"
#include "../../headers.p4"
#include "../deferred_ring.p4"
#include "../queue_state.p4"
#include "../event_report.p4"

control Admission(inout headers_t hdr, inout standard_metadata_t std)
                 (register<time_q_t> link_free, register<time_q_t> class_free,
                  register<seq_t> next_seq, register<bit<32>> started_bytes,
                  counter ramp_marks) {
    @brief("dropped: router queue full")
    counter(NUM_QUEUES, CounterType.packets_and_bytes) drop_queue;
    @brief("packets sent ahead of the others (reorder)")
    counter(NUM_DIRECTIONS, CounterType.packets) sent_ahead;
    @brief("packets with one bit flipped (corrupt)")
    counter(NUM_DIRECTIONS, CounterType.packets) corrupted;

    DeferredEnqueue() deferred_enqueue;
    QueueLastLeave() queue_last_leave;
    SojournRamp() sojourn_ramp;
    EcnCapable() ecn_capable;
    EcnMark() ecn_mark;
    QueueEnter() enter_queue;

    LOG_EVENT_ACTION

    apply {
        if (hdr.link.pkt.flags & PKT_ADMITTED == 0) {
            if (!hdr.pass.refused) {   // the loss model and RED count their own
                drop_queue.count(hdr.link.pkt.queue);
                if (hdr.link.pkt.flags & PKT_LOG != 0) {
                    hdr.link.pkt.start_us = 0;   // it never gets one
                    hdr.link.pkt.due_us = 0;
                    log_event(EVENT_DROP_QUEUE, hdr.pass.now);
                }
                mark_to_drop(std);
            }
        } else if (!hdr.pass.featured) {
            link_free.write(hdr.link.pkt.dir, hdr.pass.finish);   // LinkArrival's
            next_seq.read(hdr.link.pkt.seq, hdr.link.pkt.dir);
            hdr.pass.seq = hdr.link.pkt.seq + 1;
            hdr.pass.setValid();   // valid: only keeps p4c from a temporary (LinkArrival)
            next_seq.write(hdr.link.pkt.dir, hdr.pass.seq);
        } else {
            if (hdr.feature.corrupt) {
                corrupted.count(hdr.link.pkt.dir);
                hdr.link.pkt.flags = hdr.link.pkt.flags | PKT_CORRUPTED;
            }
            if (hdr.link.pkt.flags & PKT_DEFERRED != 0) {
                // its delay is drawn when its start is settled
                hdr.link.pkt.flags = hdr.link.pkt.flags & ~PKT_AHEAD;
                deferred_enqueue.apply(hdr);
            } else if (hdr.link.pkt.flags & PKT_FQ == 0) {
                link_free.write(hdr.link.pkt.dir, hdr.pass.free);
                class_free.write(hdr.link.pkt.queue, hdr.feature.cap_free);
                queue_last_leave.apply(hdr.link.pkt.queue, hdr.link.pkt.leave_us);
                if (hdr.link.params.send_buffer != 0) {
                    hdr.link.pkt.pos = hdr.feature.pos_in;
                    hdr.feature.pos_in = hdr.feature.pos_in + hdr.pass.l3_len +
                                         hdr.link.params.overhead_bytes;
                    started_bytes.write(hdr.link.pkt.dir, hdr.feature.pos_in);
                }
                next_seq.read(hdr.pass.seq, hdr.link.pkt.dir);
                hdr.link.pkt.seq = hdr.pass.seq;
                if (hdr.link.pkt.flags & PKT_AHEAD != 0) {
                    sent_ahead.count(hdr.link.pkt.dir);
                } else {
                    hdr.pass.seq = hdr.pass.seq + 1;
                    next_seq.write(hdr.link.pkt.dir, hdr.pass.seq);
                }
                if (hdr.link.params.features & FEATURE_SOJOURN_RAMP != 0) {
                    random(hdr.feature.rand_ramp, 0, 0xffff);
                    hdr.feature.sojourn = hdr.link.pkt.leave_us - hdr.pass.now;
                    sojourn_ramp.apply(hdr.feature.sojourn, hdr.feature.rand_ramp,
                                       hdr.link, hdr.feature.ramp_mark);
                    ecn_capable.apply(hdr.ipv4, hdr.ipv6, hdr.feature.capable,
                                      hdr.feature.ect1);
                    if (hdr.feature.ramp_mark && hdr.feature.ect1) {
                        ecn_mark.apply(hdr.ipv4, hdr.ipv6);
                        ramp_marks.count(hdr.link.pkt.queue);
                        hdr.link.pkt.flags = hdr.link.pkt.flags | PKT_MARKED;
                    }
                }
            }
        }
        if (hdr.link.pkt.flags & PKT_QUEUED != 0) {
            enter_queue.apply(hdr);
        }
    }
}

#endif
