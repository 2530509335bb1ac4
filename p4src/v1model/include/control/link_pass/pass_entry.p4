// PassEntry, a pass's first phase (LinkPass): an arrival's direction and far
// end, the hold's admission and a plain direction's arrival (LinkArrival);
// a held packet's "now" and its direction's next release.
#ifndef LINKEMU_PASS_ENTRY_P4
#define LINKEMU_PASS_ENTRY_P4

#include "../../../../include/control/port_map.p4"
#include "../../../../include/control/event_log.p4"
#include "../../headers.p4"
#include "../../define_v1model.p4"
#include "../link_arrival.p4"
#include "../hold.p4"
#include "../deferred_ring.p4"
#include "../release_pacing.p4"
#include "../queue_state.p4"
#include "../event_report.p4"

control PassEntry(inout headers_t hdr, inout standard_metadata_t std)
                 (register<time_q_t> link_free, register<seq_t> next_seq) {
    @brief("packets entering the link")
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) link_in;
    @brief("dropped: not an Ethernet frame")
    counter(NUM_DIRECTIONS, CounterType.packets) drop_malformed;
    @brief("dropped on arrival: the hold held as many as it takes")
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) drop_hold;

    PortMap() port_map;
    QueueRead() queue_read;
    EventLog() event_log;
    LinkArrival() link_arrival;

    LOG_EVENT_ACTION

    // The packets the switch holds, both directions: each admitted in link
    // order and not yet released (paced ones keep their turn), each deferred
    // one, and, with timed departure, each released that has not reached its
    // port's egress yet. Counted from positions, so a count never drifts. An
    // arrival is refused at `capacity`: HOLD_CAPACITY for a switch whose
    // held packets all go round; the controller sets more for one with
    // timed departure (`timed`: the packet's PKT_TIMED), where only the
    // packets due go round.
    action count_held(bit<32> capacity, bit<1> timed) {
        next_seq.read(hdr.pass.held.admitted_0, 0);
        next_seq.read(hdr.pass.held.admitted_1, 1);
        release_next.read(hdr.pass.held.released_0, 0);
        release_next.read(hdr.pass.held.released_1, 1);
        defer_tail.read(hdr.pass.held.deferred_0, 0);
        defer_tail.read(hdr.pass.held.deferred_1, 1);
        defer_head.read(hdr.pass.held.settled_0, 0);
        defer_head.read(hdr.pass.held.settled_1, 1);
        out_released.read(hdr.pass.held.out_released_0, 0);
        out_released.read(hdr.pass.held.out_released_1, 1);
        out_reached.read(hdr.pass.held.out_reached_0, 0);
        out_reached.read(hdr.pass.held.out_reached_1, 1);
        hdr.pass.refused = hdr.pass.held.admitted_0 - hdr.pass.held.released_0 +
                           hdr.pass.held.admitted_1 - hdr.pass.held.released_1 +
                           hdr.pass.held.deferred_0 - hdr.pass.held.settled_0 +
                           hdr.pass.held.deferred_1 - hdr.pass.held.settled_1 +
                           (timed == 1 ? hdr.pass.held.out_released_0 -
                                         hdr.pass.held.out_reached_0 +
                                         hdr.pass.held.out_released_1 -
                                         hdr.pass.held.out_reached_1 : 0) >= capacity;
        hdr.link.pkt.flags = hdr.link.pkt.flags | (timed == 1 ? PKT_TIMED : 0);
    }

    table hold_limit {
        key = { hdr.link.pkt.dir : exact @name("dir"); }
        actions = { count_held; }
        default_action = count_held(HOLD_CAPACITY, 0);
        size = NUM_DIRECTIONS;
    }

    apply {
        // "Now": arrival for a new packet, the last egress pass for a held one
        // (a recirculated packet keeps a stale ingress timestamp). The
        // emulated link carries the L3 packet; the Ethernet header, which
        // every packet here has, is Mininet's, and a held packet carries its
        // state ahead of it. HELD_CELLS: a held packet counts in cells apart.
        // (A pass that ends here exits: a return would be a flag that p4c
        // keeps in metadata and tests before every statement after it.)
        // (pass_h made valid in each branch, in the table of what follows.)
        if (std.instance_type != INSTANCE_TYPE_RECIRC) {
            hdr.pass.setValid();
            hdr.link.pkt.setValid();   // zeroed, as the link model expects it
            port_map.apply(std.ingress_port, hdr.ethernet, hdr.link);
            if (hdr.link.pkt.dest == 0 || !hdr.ethernet.isValid()) {
                if (!hdr.ethernet.isValid()) {
                    drop_malformed.count(hdr.link.pkt.dir);
                    mark_to_drop(std);
                } else if (std.ingress_port == CPU_PORT) {
                    // A controller's probe goes back stamped with the clock
                    // and the queue its destination address names.
                    hdr.clock_stamp.setValid();
                    hdr.clock_stamp.ingress_us = std.ingress_global_timestamp;
                    hdr.pass.now = std.ingress_global_timestamp;
                    hdr.link.pkt.queue = (bit<32>) hdr.ethernet.dst_addr[1:0];
                    hdr.link.pkt.setValid();   // valid: keeps p4c from a temporary
                    queue_read.apply(hdr);
                    hdr.clock_stamp.waiting = hdr.pass.waiting;
                    hdr.clock_stamp.waiting_bytes = hdr.pass.waiting_bytes;
                    std.egress_spec = CPU_PORT;
                    hdr.link.pkt.flags = PKT_RELEASED;
                } else {
                    mark_to_drop(std);
                }
                exit;
            }
            hdr.pass.now = std.ingress_global_timestamp;
            hdr.pass.l3_len = std.packet_length - ETH_HEADER_BYTES;
            hdr.pass.dir_cell = hdr.link.pkt.dir;
            link_in.count(hdr.link.pkt.dir);
            // The link and the direction's best effort, as a plain direction's
            // arrival takes them (the others' only learns that they take
            // more), and release order. (Register accesses together: p4c
            // makes a table of each run of statements.)
            link_free.read(hdr.pass.free, hdr.link.pkt.dir);
            release_next.read(hdr.pass.next, hdr.link.pkt.dir);
            random(hdr.pass.rand, 0, 0xffff);
            queue_read.apply(hdr);
            event_log.apply(hdr.pass.now, hdr.pass.rand, hdr.link);
            hold_limit.apply();
            if (hdr.pass.refused) {
                drop_hold.count(hdr.link.pkt.dir);
                if (hdr.link.pkt.flags & PKT_LOG != 0) {
                    log_event(EVENT_DROP_HOLD, hdr.pass.now);
                }
                mark_to_drop(std);
            } else {
                link_arrival.apply(hdr.pass, hdr.link);
            }
        } else {
            hdr.pass.setValid();
            hdr.pass.now = hdr.link.pkt.now_us;
            hdr.pass.l3_len = std.packet_length -
                              (ETH_HEADER_BYTES + hdr.link.pkt.minSizeInBytes());
            hdr.pass.dir_cell = hdr.link.pkt.dir + NUM_DIRECTIONS;
            release_next.read(hdr.pass.next, hdr.link.pkt.dir);
        }
    }
}

#endif
