// The router queues' state between packets: what waits in each
// (queue_index), when it last had a packet leave, and RED's average.
//
// A packet that waits in a router queue mostly leaves it at an instant its
// arrival fixes (the virtual clock), and its queue is then what arrivals
// left there: a ring per queue of the instants its packets leave, in the
// order they came (ring_leave), beside the L3 bytes it took so far
// (ring_bytes). Those instants only grow, so the packets waiting at `now`
// are the ring's last ones, after those whose instant has come, found by a
// binary search; a packet in the ring takes no pass when it leaves, but
// one that COBALT drops unless a packet waits behind it, which learns then
// from its place in the ring (its ticket) whether one came. A packet whose
// leaving an event decides (a deferred one, one in a flow queue) is counted
// in queue_pkts and queue_bytes instead, and taken out by its pass then. The
// controller reads a queue by a probe (LinkPass).
#ifndef LINKEMU_QUEUE_STATE_P4
#define LINKEMU_QUEUE_STATE_P4

#include "../headers.p4"
#include "../../../include/control/red.p4"
#include "../../../include/control/ecn_mark.p4"

register<bit<32>>(NUM_QUEUES) queue_pkts;
register<bit<32>>(NUM_QUEUES) queue_bytes;     // L3 bytes waiting
register<time_us_t>(NUM_QUEUES) last_leave;    // the queue is empty since
register<time_us_t>(NUM_QUEUES * QUEUE_RING) ring_leave;
register<bit<32>>(NUM_QUEUES * QUEUE_RING) ring_bytes;   // L3 bytes so far, mod 2^32
register<bit<32>>(NUM_QUEUES) ring_tail;
register<time_us_t>(NUM_QUEUES) ring_last;

// One step of the search over the ring's last QUEUE_RING slots, oldest
// first: `left` of them are known to have left; the n after them have too
// if the last of those has. (A macro: the steps differ in a constant only,
// and a loop is not P4. setValid() on the valid header changes nothing but
// keeps p4c from carrying the value just set into what follows, through a
// temporary: see LinkArrival.)
#define RING_STEP(n) \
    hdr.ring.at = hdr.ring.base | ((hdr.ring.tail + hdr.ring.left + (n - 1)) & QUEUE_RING_MASK); \
    hdr.ring.setValid(); \
    ring_leave.read(hdr.ring.leave, hdr.ring.at); \
    hdr.ring.left = hdr.ring.leave <= hdr.pass.now ? hdr.ring.left + n : hdr.ring.left; \
    hdr.ring.setValid();

// hdr.pass.waiting and waiting_bytes: the packet's queue at hdr.pass.now.
control QueueRead(inout headers_t hdr) {

    // The ring's last packet is still waiting, so of its last QUEUE_RING
    // slots fewer than all have left: how many, in QUEUE_RING_BITS steps.
    // A slot never written reads 0, long left.
    action search() {
        hdr.ring.left = 0;
        hdr.ring.setValid();
        RING_STEP(8192)
        RING_STEP(4096)
        RING_STEP(2048)
        RING_STEP(1024)
        RING_STEP(512)
        RING_STEP(256)
        RING_STEP(128)
        RING_STEP(64)
        RING_STEP(32)
        RING_STEP(16)
        RING_STEP(8)
        RING_STEP(4)
        RING_STEP(2)
        RING_STEP(1)
        hdr.ring.at = hdr.ring.base | ((hdr.ring.tail + QUEUE_RING_MASK) & QUEUE_RING_MASK);
        hdr.ring.setValid();
        ring_bytes.read(hdr.ring.bytes, hdr.ring.at);
        hdr.ring.at = hdr.ring.base |
                      ((hdr.ring.tail + hdr.ring.left + QUEUE_RING_MASK) & QUEUE_RING_MASK);
        hdr.ring.setValid();
        ring_bytes.read(hdr.ring.bytes_at, hdr.ring.at);
        hdr.pass.waiting = hdr.pass.waiting + (QUEUE_RING - hdr.ring.left);
        hdr.pass.waiting_bytes = hdr.pass.waiting_bytes + (hdr.ring.bytes - hdr.ring.bytes_at);
    }

    apply {
        hdr.ring.setValid();
        hdr.ring.base = hdr.link.pkt.queue << QUEUE_RING_BITS;
        queue_pkts.read(hdr.pass.waiting, hdr.link.pkt.queue);
        queue_bytes.read(hdr.pass.waiting_bytes, hdr.link.pkt.queue);
        ring_tail.read(hdr.ring.tail, hdr.link.pkt.queue);
        ring_last.read(hdr.ring.last, hdr.link.pkt.queue);
        if (hdr.ring.last > hdr.pass.now) {
            search();
        }
    }
}

// The packet enters its queue (hdr.pass.waiting as read on arrival): the
// ring, unless an event decides when it leaves.
control QueueEnter(inout headers_t hdr) {
    @brief("packets that waited in the router queue")
    counter(NUM_QUEUES, CounterType.packets_and_bytes) queue_enter;

    // The instant kept is never before the last one: a push that enlarges
    // the link buffer lets a packet leave before one queued earlier under
    // the old profile, and the search needs the instants in order.
    action into_ring() {
        hdr.ring.at = hdr.ring.base | ((hdr.ring.tail + QUEUE_RING_MASK) & QUEUE_RING_MASK);
        hdr.ring.setValid();
        ring_bytes.read(hdr.ring.bytes, hdr.ring.at);
        hdr.ring.bytes = hdr.ring.bytes + hdr.pass.l3_len;
        hdr.ring.at = hdr.ring.base | (hdr.ring.tail & QUEUE_RING_MASK);
        hdr.link.pkt.ticket = hdr.ring.tail;
        hdr.ring.tail = hdr.ring.tail + 1;
        hdr.ring.last = hdr.link.pkt.leave_us > hdr.ring.last ? hdr.link.pkt.leave_us :
                                                                hdr.ring.last;
        hdr.ring.setValid();
        ring_leave.write(hdr.ring.at, hdr.ring.last);
        ring_bytes.write(hdr.ring.at, hdr.ring.bytes);
        ring_tail.write(hdr.link.pkt.queue, hdr.ring.tail);
        ring_last.write(hdr.link.pkt.queue, hdr.ring.last);
        hdr.link.pkt.flags = hdr.link.pkt.flags & PKT_AQM_LATE != 0 ? hdr.link.pkt.flags :
                             hdr.link.pkt.flags & ~PKT_QUEUED;
    }

    // (Read afresh: hdr.pass.waiting counts the ring's too.)
    action counted() {
        queue_pkts.read(hdr.pass.waiting, hdr.link.pkt.queue);
        hdr.pass.waiting = hdr.pass.waiting + 1;
        queue_bytes.read(hdr.pass.waiting_bytes, hdr.link.pkt.queue);
        hdr.pass.waiting_bytes = hdr.pass.waiting_bytes + hdr.pass.l3_len;
        hdr.pass.setValid();
        queue_pkts.write(hdr.link.pkt.queue, hdr.pass.waiting);
        queue_bytes.write(hdr.link.pkt.queue, hdr.pass.waiting_bytes);
    }

    apply {
        if (hdr.link.pkt.flags & (PKT_DEFERRED | PKT_FQ) != 0) {
            counted();
        } else {
            into_ring();
        }
        queue_enter.count(hdr.link.pkt.queue);
    }
}

// A packet in the ring that COBALT drops unless one waits behind it, at the
// instant it leaves: hdr.pass.waiting, the packets that came into its ring
// after it (each waits still: none leaves before it).
control QueueBehind(inout headers_t hdr) {
    apply {
        hdr.link.pkt.flags = hdr.link.pkt.flags & ~PKT_QUEUED;
        ring_tail.read(hdr.pass.waiting, hdr.link.pkt.queue);
        hdr.pass.waiting = hdr.pass.waiting - (hdr.link.pkt.ticket + 1);
    }
}

// A counted packet leaves its router queue for the link send buffer (or,
// without one, the link), always on a later pass than its arrival.
control QueueLeave(inout headers_t hdr) {
    apply {
        hdr.link.pkt.flags = hdr.link.pkt.flags & ~PKT_QUEUED;
        queue_pkts.read(hdr.pass.waiting, hdr.link.pkt.queue);
        hdr.pass.waiting = hdr.pass.waiting - 1;
        queue_pkts.write(hdr.link.pkt.queue, hdr.pass.waiting);
        queue_bytes.read(hdr.pass.waiting_bytes, hdr.link.pkt.queue);
        hdr.pass.waiting_bytes = hdr.pass.waiting_bytes - hdr.pass.l3_len;
        queue_bytes.write(hdr.link.pkt.queue, hdr.pass.waiting_bytes);
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
            ecn_mark.apply(hdr.ipv4, hdr.ipv6);
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
