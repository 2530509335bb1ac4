// FlowTurn, a pass's next-to-last phase (LinkPass): flow isolation's
// scheduling step and a flow-queued packet's start, or its drop or mark by
// COBALT as it leaves its flow queue.
#ifndef LINKEMU_FLOW_TURN_P4
#define LINKEMU_FLOW_TURN_P4

#include "../../../../include/control/link_clock.p4"
#include "../../../../include/control/ecn_mark.p4"
#include "../../headers.p4"
#include "../flow_queues.p4"
#include "../queue_state.p4"
#include "../event_report.p4"

control FlowTurn(inout headers_t hdr, inout standard_metadata_t std)
                (register<time_q_t> link_free, register<seq_t> next_seq,
                 counter ramp_marks, counter cobalt_marks, counter drop_codel,
                 counter drop_blue) {
    FlowStep() flow_step;
    FlowLearn() flow_learn;
    QueueLeave() leave_queue;
    SetTimes() set_times;
    EcnMark() ecn_mark;

    LOG_EVENT_ACTION

    apply {
        // Flow isolation: a scheduling step once the link is free, and a
        // queued packet learns whether it starts (flow_queues.p4).
        if (hdr.link.pkt.flags & PKT_FQ != 0 || (hdr.fq.isValid() && hdr.fq.overflow)) {
            if (std.instance_type == INSTANCE_TYPE_RECIRC) {
                link_free.read(hdr.pass.free, hdr.link.pkt.dir);
            }
            next_seq.read(hdr.pass.seq, hdr.link.pkt.dir);
            flow_step.apply(hdr);
            link_free.write(hdr.link.pkt.dir, hdr.pass.free);
            next_seq.write(hdr.link.pkt.dir, hdr.pass.seq);
            if (hdr.link.pkt.flags & PKT_FQ != 0) {
                flow_learn.apply(hdr);
                if (!hdr.fq.waiting) {
                    leave_queue.apply(hdr);
                    hdr.link.pkt.flags = hdr.link.pkt.flags & ~PKT_FQ;
                    if (hdr.fq.state == FQ_DROP || hdr.fq.state == FQ_DROP_BLUE) {
                        hdr.link.pkt.start_us = 0;   // it never gets one
                        hdr.link.pkt.due_us = 0;
                        if (hdr.fq.state == FQ_DROP) {
                            drop_codel.count(hdr.link.pkt.queue);
                            if (hdr.link.pkt.flags & PKT_LOG != 0) {
                                log_event(EVENT_DROP_CODEL, hdr.pass.now);
                            }
                        } else {
                            drop_blue.count(hdr.link.pkt.queue);
                            if (hdr.link.pkt.flags & PKT_LOG != 0) {
                                log_event(EVENT_DROP_BLUE, hdr.pass.now);
                            }
                        }
                        hdr.link.pkt.flags = hdr.link.pkt.flags & ~PKT_ADMITTED;
                        mark_to_drop(std);
                    } else {
                        hdr.feature.setValid();
                        hdr.feature.cost = (time_q_t) hdr.fq.bytes *
                                           (time_q_t) hdr.link.params.byte_cost_q;
                        set_times.apply(hdr.fq.start, hdr.feature.cost, hdr.link);
                        hdr.link.pkt.leave_us = hdr.link.pkt.start_us;
                        hdr.link.pkt.flags = hdr.link.pkt.flags |
                                             (hdr.link.params.features & FEATURE_LINK_ERRORS == 0 ?
                                              PKT_LINK_DONE : 0);
                        if (hdr.fq.state == FQ_MARK || hdr.fq.state == FQ_RAMP) {
                            ecn_mark.apply(hdr.ipv4, hdr.ipv6);
                            if (hdr.fq.state == FQ_MARK) {
                                cobalt_marks.count(hdr.link.pkt.queue);
                            } else {
                                ramp_marks.count(hdr.link.pkt.queue);
                            }
                            hdr.link.pkt.flags = hdr.link.pkt.flags | PKT_MARKED;
                        }
                    }
                }
            }
        }
    }
}

#endif
