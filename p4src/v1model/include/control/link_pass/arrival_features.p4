// ArrivalFeatures, an arrival's third phase (LinkPass): the features of a
// featured direction on the way to the link: the loss model, the traffic
// class, the AQM, flow isolation's enqueue, packet faults, the link clock
// (LinkClock) and COBALT.
#ifndef LINKEMU_ARRIVAL_FEATURES_P4
#define LINKEMU_ARRIVAL_FEATURES_P4

#include "../../../../include/control/loss_model.p4"
#include "../../../../include/control/traffic_class.p4"
#include "../../../../include/control/router_queue.p4"
#include "../../../../include/control/ecn_mark.p4"
#include "../../../../include/control/packet_faults.p4"
#include "../../../../include/control/link_clock.p4"
#include "../../headers.p4"
#include "../queue_state.p4"
#include "../flow_queues.p4"
#include "../router_cobalt.p4"
#include "../event_report.p4"

control ArrivalFeatures(inout headers_t hdr, inout standard_metadata_t std)
                       (register<time_q_t> class_free, register<time_us_t> retx_busy_until,
                        register<bit<32>> started_bytes, register<bit<32>> block_from,
                        counter cobalt_marks) {
    register<bit<1>>(NUM_DIRECTIONS) loss_bad;   // Gilbert-Elliott state

    @brief("dropped: Bernoulli / Gilbert-Elliott loss model")
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) drop_loss_model;

    LossModel() loss_model;
    TrafficClass() traffic_class;
    QueueRead() queue_read;
    QueueParams() queue_params;
    RouterAqm() router_aqm;
    EcnCapable() ecn_capable;
    FlowEnqueue() flow_enqueue;
    PacketFaults() packet_faults;
    LinkClock() link_clock;
    RouterCobalt() router_cobalt;

    LOG_EVENT_ACTION

    apply {
        // A featured arrival: what its direction's profile leaves out costs
        // it one condition each; the working values and the tests of their
        // outcome stay inside. A packet refused on its way to the link
        // (the loss model, RED) is dropped, its admitted flag 0, which
        // skips the rest of the pass. (No exit: the pass ends with its
        // event, LinkemuIngress's digest.)
        if (hdr.pass.featured) {
            hdr.feature.setValid();
            if (hdr.link.params.features & FEATURE_DEFERRED != 0) {
                hdr.link.pkt.flags = hdr.link.pkt.flags | PKT_OFFERS;
            }
            if (hdr.link.params.features & FEATURE_LOSS_MODEL != 0) {
                loss_bad.read(hdr.feature.bad, hdr.link.pkt.dir);
                random(hdr.feature.rand_move, 0, 0xffff);
                random(hdr.feature.rand_loss, 0, 0xffff);
                loss_model.apply(hdr.feature.rand_move, hdr.feature.rand_loss,
                                 hdr.feature.bad, hdr.link, hdr.feature.new_bad,
                                 hdr.pass.refused);
                loss_bad.write(hdr.link.pkt.dir, hdr.feature.new_bad);
                if (hdr.pass.refused) {
                    drop_loss_model.count(hdr.link.pkt.dir);
                    if (hdr.link.pkt.flags & PKT_LOG != 0) {
                        log_event(EVENT_DROP_LOSS_MODEL, hdr.pass.now);
                    }
                    mark_to_drop(std);
                }
            }
            if (!hdr.pass.refused) {
                if (hdr.link.params.features & FEATURE_PRIORITY != 0) {
                    traffic_class.apply(hdr.ipv4, hdr.ipv6, hdr.l4, hdr.link,
                                        hdr.feature.class_key);
                    queue_read.apply(hdr);
                }
                queue_params.apply(hdr.link);
                if (hdr.link.params.aqm == 1) {
                    router_aqm.apply(hdr, std);
                    if (hdr.pass.refused && hdr.link.pkt.flags & PKT_LOG != 0) {
                        log_event(EVENT_DROP_AQM, hdr.pass.now);
                    }
                }
            }
            if (!hdr.pass.refused && hdr.link.params.features & FEATURE_FLOWS != 0) {
                // Into its flow queue; its start is decided when the
                // link frees (below).
                ecn_capable.apply(hdr.ipv4, hdr.ipv6, hdr.feature.capable,
                                  hdr.feature.ect1);
                flow_enqueue.apply(hdr);
                if (!hdr.fq.overflow) {
                    hdr.link.pkt.flags = hdr.link.pkt.flags |
                                         (PKT_ADMITTED | PKT_QUEUED | PKT_FQ);
                }
            } else if (!hdr.pass.refused) {
                if (hdr.link.params.features & FEATURE_PACKET_FAULTS != 0) {
                    random(hdr.feature.rand_reorder, 0, 0xffff);
                    random(hdr.feature.rand_duplicate, 0, 0xffff);
                    random(hdr.feature.rand_corrupt, 0, 0xffff);
                    random(hdr.feature.flip_bit, 0, 31);
                    packet_faults.apply(hdr.feature.rand_reorder,
                                        hdr.feature.rand_duplicate, hdr.feature.rand_corrupt,
                                        hdr.feature.flip_bit, hdr.l4, hdr.link,
                                        hdr.feature.corrupt);
                }
                class_free.read(hdr.feature.cap_free, hdr.link.pkt.queue);
                if (hdr.link.params.send_buffer != 0) {
                    started_bytes.read(hdr.feature.pos_in, hdr.link.pkt.dir);
                    block_from.read(hdr.feature.block_pos, hdr.link.pkt.dir);
                    retx_busy_until.read(hdr.pass.busy_until, hdr.link.pkt.dir);
                }
                link_clock.apply(hdr.pass.now, hdr.pass.l3_len,
                                 hdr.pass.head != hdr.pass.tail, hdr.pass.waiting,
                                 hdr.pass.waiting_bytes, hdr.link, hdr.pass.free,
                                 hdr.feature.cap_free, hdr.feature.pos_in,
                                 hdr.feature.block_pos, hdr.pass.busy_until,
                                 hdr.pass.leave, hdr.pass.start, hdr.feature.cost,
                                 hdr.feature.share_cost);
                if (hdr.link.params.features & FEATURE_COBALT != 0 &&
                    hdr.link.pkt.flags & PKT_DEFERRED == 0) {
                    router_cobalt.apply(hdr);
                    if (hdr.feature.verdict == AQM_SIGNAL) {
                        cobalt_marks.count(hdr.link.pkt.queue);
                    }
                }
            }
        }
    }
}

#endif
