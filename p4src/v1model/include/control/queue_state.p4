// The router queues' state between packets: what waits in each (queue_index),
// when it last had a packet leave, and RED's average. The controller samples
// queue_enter and queue_leave: their difference is the queue.
#ifndef LINKEMU_QUEUE_STATE_P4
#define LINKEMU_QUEUE_STATE_P4

#include "../../../include/headers.p4"
#include "../../../include/control/red.p4"
#include "../../../include/control/ecn_mark.p4"

register<bit<32>>(NUM_QUEUES) queue_pkts;
register<bit<32>>(NUM_QUEUES) queue_bytes;     // L3 bytes waiting
register<time_us_t>(NUM_QUEUES) last_leave;    // the queue is empty since

// hdr.pass.waiting and waiting_bytes: the packet's queue as it arrives.
control QueueRead(inout headers_t hdr) {
    apply {
        queue_pkts.read(hdr.pass.waiting, hdr.link.pkt.queue);
        queue_bytes.read(hdr.pass.waiting_bytes, hdr.link.pkt.queue);
    }
}

// The packet enters its queue (hdr.pass.waiting as read on arrival).
control QueueEnter(inout headers_t hdr) {
    @brief("packets that waited in the router queue")
    counter(NUM_QUEUES, CounterType.packets_and_bytes) queue_enter;

    apply {
        hdr.pass.waiting = hdr.pass.waiting + 1;
        queue_pkts.write(hdr.link.pkt.queue, hdr.pass.waiting);
        hdr.pass.waiting_bytes = hdr.pass.waiting_bytes + hdr.pass.l3_len;
        queue_bytes.write(hdr.link.pkt.queue, hdr.pass.waiting_bytes);
        queue_enter.count(hdr.link.pkt.queue);
    }
}

// A queued packet leaves its router queue for the link send buffer (or,
// without one, the link), always on a later pass than its arrival:
// queue_leave counts held packets only (HELD_CELLS).
control QueueLeave(inout headers_t hdr) {
    @brief("packets that left the router queue for the link")
    counter(NUM_QUEUES, CounterType.packets_and_bytes) queue_leave;

    apply {
        hdr.link.pkt.flags = hdr.link.pkt.flags & ~PKT_QUEUED;
        queue_pkts.read(hdr.pass.waiting, hdr.link.pkt.queue);
        hdr.pass.waiting = hdr.pass.waiting - 1;
        queue_pkts.write(hdr.link.pkt.queue, hdr.pass.waiting);
        queue_bytes.read(hdr.pass.waiting_bytes, hdr.link.pkt.queue);
        hdr.pass.waiting_bytes = hdr.pass.waiting_bytes - hdr.pass.l3_len;
        queue_bytes.write(hdr.link.pkt.queue, hdr.pass.waiting_bytes);
        queue_leave.count(hdr.link.pkt.queue);
    }
}

// The queue's last packet so far leaves at leave_us: RED's idle time counts
// from there.
control QueueLastLeave(in bit<32> queue, in time_us_t leave_us) {
    apply {
        last_leave.write(queue, leave_us);
    }
}

// RED on an arrival whose queue has it (params.aqm): the packet is marked
// CE, or dropped (hdr.pass.refused), or passes.
control RouterAqm(inout headers_t hdr, inout standard_metadata_t std) {
    register<bit<64>>(NUM_QUEUES) red_avg;
    register<bit<32>>(NUM_QUEUES) red_count;
    register<bit<32>>(NUM_QUEUES) red_target;
    register<bit<32>>(NUM_QUEUES) red_generation;
    @brief("dropped: RED (not ECN-capable, or above max_th)")
    counter(NUM_QUEUES, CounterType.packets_and_bytes) drop_aqm;
    @brief("of which ECN-capable (above max_th, or ECN off)")
    counter(NUM_QUEUES, CounterType.packets) drop_aqm_ect;
    @brief("marked CE by RED")
    counter(NUM_QUEUES, CounterType.packets) ecn_marks;

    Red() red;
    EcnCapable() ecn_capable;
    EcnMark() ecn_mark;

    apply {
        last_leave.read(hdr.feature.empty_since, hdr.link.pkt.queue);
        red_avg.read(hdr.feature.aqm.avg, hdr.link.pkt.queue);
        red_count.read(hdr.feature.aqm.count, hdr.link.pkt.queue);
        red_target.read(hdr.feature.aqm.target, hdr.link.pkt.queue);
        red_generation.read(hdr.feature.aqm.generation, hdr.link.pkt.queue);
        random(hdr.feature.rand_aqm, 0, 0xffff);
        hdr.feature.idle = hdr.pass.now - hdr.feature.empty_since;
        red.apply(hdr.pass.waiting, hdr.pass.waiting_bytes,
                  hdr.feature.idle, hdr.feature.rand_aqm, hdr.link,
                  hdr.feature.aqm, hdr.feature.red, hdr.feature.verdict,
                  hdr.feature.use_ecn);
        red_avg.write(hdr.link.pkt.queue, hdr.feature.aqm.avg);
        red_count.write(hdr.link.pkt.queue, hdr.feature.aqm.count);
        red_target.write(hdr.link.pkt.queue, hdr.feature.aqm.target);
        red_generation.write(hdr.link.pkt.queue, hdr.feature.aqm.generation);
        ecn_capable.apply(hdr.ipv4, hdr.ipv6, hdr.feature.capable, hdr.feature.ect1);
        if (hdr.feature.verdict == AQM_SIGNAL && hdr.feature.use_ecn &&
            hdr.feature.capable) {
            ecn_mark.apply(hdr);
            ecn_marks.count(hdr.link.pkt.queue);
            hdr.link.pkt.flags = hdr.link.pkt.flags | PKT_MARKED;
        } else if (hdr.feature.verdict != AQM_PASS) {
            drop_aqm.count(hdr.link.pkt.queue);
            if (hdr.feature.capable) {
                drop_aqm_ect.count(hdr.link.pkt.queue);
            }
            mark_to_drop(std);
            hdr.pass.refused = true;
        }
    }
}

#endif
