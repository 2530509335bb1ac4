// COBALT on an arrival whose direction has it (FEATURE_COBALT): its router
// queue's state, read and written once, and the verdict applied. A packet
// marked CE goes on (LinkPass counts it); one to drop keeps its place in the queue but not on the
// link, and is dropped when it leaves the queue (LinkPass), unless nothing
// waits behind it then. A packet that leaves at once is never dropped: it is
// its queue's last.
#ifndef LINKEMU_ROUTER_COBALT_P4
#define LINKEMU_ROUTER_COBALT_P4

#include "../headers.p4"
#include "../../../include/control/cobalt.p4"
#include "../../../include/control/ecn_mark.p4"

control RouterCobalt(inout headers_t hdr) {
    register<bit<32>>(NUM_QUEUES) cobalt_count;
    register<bit<1>>(NUM_QUEUES) cobalt_dropping;
    register<time_us_t>(NUM_QUEUES) cobalt_drop_next;
    register<bit<32>>(NUM_QUEUES) cobalt_p_drop;
    register<time_us_t>(NUM_QUEUES) cobalt_blue_timer;
    register<bit<32>>(NUM_QUEUES) cobalt_generation;

    Cobalt() cobalt;
    EcnCapable() ecn_capable;
    EcnMark() ecn_mark;

    apply {
        cobalt_count.read(hdr.feature.cobalt.count, hdr.link.pkt.queue);
        cobalt_dropping.read(hdr.feature.cobalt.dropping, hdr.link.pkt.queue);
        cobalt_drop_next.read(hdr.feature.cobalt.drop_next, hdr.link.pkt.queue);
        cobalt_p_drop.read(hdr.feature.cobalt.p_drop, hdr.link.pkt.queue);
        cobalt_blue_timer.read(hdr.feature.cobalt.blue_timer, hdr.link.pkt.queue);
        cobalt_generation.read(hdr.feature.cobalt.generation, hdr.link.pkt.queue);
        random(hdr.feature.rand_blue, 0, 0xffffffff);
        ecn_capable.apply(hdr.ipv4, hdr.ipv6, hdr.feature.capable, hdr.feature.ect1);
        cobalt.apply(hdr.pass.now, hdr.link.pkt.leave_us,
                     hdr.link.pkt.flags & PKT_ADMITTED == 0, hdr.pass.waiting == 0,
                     hdr.link.pkt.flags & PKT_ADMITTED != 0,
                     hdr.feature.capable, hdr.feature.rand_blue, hdr.link,
                     hdr.feature.cobalt, hdr.feature.cobalt_work, hdr.feature.verdict);
        cobalt_count.write(hdr.link.pkt.queue, hdr.feature.cobalt.count);
        cobalt_dropping.write(hdr.link.pkt.queue, hdr.feature.cobalt.dropping);
        cobalt_drop_next.write(hdr.link.pkt.queue, hdr.feature.cobalt.drop_next);
        cobalt_p_drop.write(hdr.link.pkt.queue, hdr.feature.cobalt.p_drop);
        cobalt_blue_timer.write(hdr.link.pkt.queue, hdr.feature.cobalt.blue_timer);
        cobalt_generation.write(hdr.link.pkt.queue, hdr.feature.cobalt.generation);

        if (hdr.feature.verdict == AQM_SIGNAL) {
            ecn_mark.apply(hdr.ipv4, hdr.ipv6);
            hdr.link.pkt.flags = hdr.link.pkt.flags | PKT_MARKED;
        } else if (hdr.feature.verdict != AQM_PASS &&
                   hdr.link.pkt.flags & PKT_QUEUED != 0) {
            // Off the link: its serialization never happens (the link is
            // free from its start, which is where the link was free before
            // it), and it is due, to be dropped, when it leaves the queue.
            hdr.pass.free = hdr.pass.start;
            hdr.link.pkt.start_us = hdr.link.pkt.leave_us;
            hdr.link.pkt.attempt_us = hdr.link.pkt.leave_us;
            hdr.link.pkt.due_us = hdr.link.pkt.leave_us;
            hdr.link.pkt.flags = hdr.link.pkt.flags | PKT_AQM_LATE | PKT_LOST | PKT_LINK_DONE |
                                 (hdr.feature.verdict == AQM_DROP_BLUE ? PKT_BLUE : 0);
        }
    }
}

#endif
