// Flow isolation (a profile's `cobalt: {isolation: flows}`): a direction's
// router queue split into FQ_FLOWS flow queues by a hash of the 5-tuple,
// served by DRR++ as fq_codel and Cake serve them (a flow that turns up
// goes first for a quantum, then takes its turn with the others), each flow
// queue with its own COBALT. With `triple-isolate`, as Cake's, a flow's
// quantum is divided by the bulk flows of its busier host (its sender's or
// its receiver's, hashed into FQ_FLOWS each), so hosts share the link
// before their flows do.
//
// Which packet takes the link is decided when the link frees, not when a
// packet arrives: a flow arriving later may go first. A packet joins its
// flow queue as a ticket with its arrival and size; every pass of the
// direction's queued packets and arrivals takes one scheduling step once
// the link is free (FlowStep), and a packet learns its start (or its drop)
// from its ticket's slot (FlowLearn). While it waits it sleeps until the
// earliest it could start: the link free again, then the bytes of its own
// flow ahead of it, so its flow's head wakes whenever the link frees and
// the decision it waits for falls on its own pass.
#ifndef LINKEMU_FLOW_QUEUES_P4
#define LINKEMU_FLOW_QUEUES_P4

#include "../headers.p4"
#include "../../../include/control/cobalt.p4"
#include "../../../include/control/sojourn_ramp.p4"

const bit<32> FQ_FLOWS = 1024;   // per direction
const bit<32> FQ_SLOTS = 8192;   // tickets per direction in flight at once
const bit<32> FQ_SLOT_MASK = FQ_SLOTS - 1;
const bit<32> FQ_NONE = 0;        // the lists link flows by index + 1: registers start at 0
const time_q_t FQ_MIN_COST_Q = 16777;   // 16 ns a byte, us << TIME_FRAC_BITS
const bit<2> FQ_LIST_NONE = 0;
const bit<2> FQ_LIST_NEW = 1;
const bit<2> FQ_LIST_OLD = 2;
// A ticket's state.
const bit<8> FQ_WAITING = 0;
const bit<8> FQ_START = 1;      // it starts at fq_start
const bit<8> FQ_MARK = 2;       // it starts, marked CE
const bit<8> FQ_DROP = 3;       // CoDel dropped it leaving its flow queue
const bit<8> FQ_DROP_BLUE = 4;  // BLUE did
const bit<8> FQ_RAMP = 5;       // it starts, marked CE by the sojourn ramp

// Per direction: DRR++'s two lists of flows, the packets queued, tickets.
register<bit<32>>(NUM_DIRECTIONS) fq_new_head;   // flows by index + 1, FQ_NONE for none
register<bit<32>>(NUM_DIRECTIONS) fq_new_tail;
register<bit<32>>(NUM_DIRECTIONS) fq_old_head;
register<bit<32>>(NUM_DIRECTIONS) fq_old_tail;
register<bit<32>>(NUM_DIRECTIONS) fq_backlog;
register<bit<32>>(NUM_DIRECTIONS) fq_active;     // flow queues holding packets
register<bit<32>>(NUM_DIRECTIONS) fq_tickets;
register<bit<32>>(NUM_DIRECTIONS) fq_epoch;      // lists started afresh, an idle link's arrival
// Per flow queue (direction x FQ_FLOWS + flow).
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_head;       // its first ticket
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_tail;       // its last ticket
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_count;      // packets
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_deficit;    // link bytes, two's complement
register<bit<2>>(NUM_DIRECTIONS * FQ_FLOWS) fq_list;
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_listed_in;  // the epoch of its fq_list
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_next_flow;  // in its list
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_src_host;   // triple-isolate: its hosts
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_dst_host;
register<bit<1>>(NUM_DIRECTIONS * FQ_FLOWS) fq_bulk;        // counted in its hosts' loads
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_enqueued;   // link bytes ever queued
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_dequeued;   // and taken off
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_cobalt_count;
register<bit<1>>(NUM_DIRECTIONS * FQ_FLOWS) fq_cobalt_dropping;
register<time_us_t>(NUM_DIRECTIONS * FQ_FLOWS) fq_cobalt_drop_next;
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_cobalt_p_drop;
register<time_us_t>(NUM_DIRECTIONS * FQ_FLOWS) fq_cobalt_blue_timer;
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_cobalt_generation;
// Per host (direction x FQ_FLOWS + hashed address): bulk flows, and the
// epoch they are of (a count of an older epoch is 0).
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_src_load;
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_src_epoch;
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_dst_load;
register<bit<32>>(NUM_DIRECTIONS * FQ_FLOWS) fq_dst_epoch;
// Per ticket (direction x FQ_SLOTS + ticket mod FQ_SLOTS).
register<time_us_t>(NUM_DIRECTIONS * FQ_SLOTS) fq_arrival;
register<bit<32>>(NUM_DIRECTIONS * FQ_SLOTS) fq_bytes;      // link bytes
register<bit<32>>(NUM_DIRECTIONS * FQ_SLOTS) fq_flow;       // its flow queue's index
register<bit<32>>(NUM_DIRECTIONS * FQ_SLOTS) fq_next;       // the next of its flow
register<bit<32>>(NUM_DIRECTIONS * FQ_SLOTS) fq_before;     // its flow's bytes queued before it
register<bit<2>>(NUM_DIRECTIONS * FQ_SLOTS) fq_ecn;         // ECT(1), ECN-capable
register<bit<8>>(NUM_DIRECTIONS * FQ_SLOTS) fq_state;
register<time_q_t>(NUM_DIRECTIONS * FQ_SLOTS) fq_start;
register<seq_t>(NUM_DIRECTIONS * FQ_SLOTS) fq_seq;

// Slots and indices are set by actions, and a register's new value is set
// into a field first (hdr.fq.value, or the field it updates) with
// hdr.fq.setValid() after it: p4c copies an index or a value computed at a
// register access into a temporary, a metadata field that every pass of
// every packet pays for (docs/bmv2-costs.md), and would carry the
// expression past a plain assignment into the access. (setValid() on the
// valid header changes nothing.)

// A direction's flow isolation: DRR's quantum, in link bytes, and whether
// hosts share first (triple-isolate). Every pass of the direction's
// arrivals and queued packets makes hdr.fq valid here.
control FlowParams(inout headers_t hdr) {
    action set_quantum(bit<32> quantum, bit<1> hosts) {
        hdr.fq.quantum = quantum;
        hdr.fq.hosts = hosts;
    }
    table fq_params {
        key = { hdr.link.pkt.dir : exact @name("dir"); }
        actions = { set_quantum; }
        const default_action = set_quantum(1514, 0);
        size = NUM_DIRECTIONS;
    }

    apply {
        hdr.fq.setValid();
        fq_params.apply();
    }
}

// Triple-isolate: the share of a flow's quantum, by its hosts' load (the
// bulk flows of the busier one; Cake's quantum_div), into hdr.fq.share.
// The loads are hdr.fq.src_load and dst_load, read for its epoch.
control HostShare(inout headers_t hdr) {
    action share_of(bit<32> share) { hdr.fq.share = share; }
    table fq_share {
        key = {
            hdr.link.pkt.dir : exact @name("dir");
            hdr.fq.load      : exact @name("load");
        }
        actions = { share_of; }
        const default_action = share_of(0);   // a load beyond the table: nothing a round
        size = FQ_SHARE_SIZE;
    }

    apply {
        hdr.fq.load = hdr.fq.src_load > hdr.fq.dst_load ? hdr.fq.src_load : hdr.fq.dst_load;
        if (hdr.fq.load == 0) {
            hdr.fq.load = 1;
        }
        fq_share.apply();
    }
}

// hdr.fq.src_load and dst_load: the bulk flows of the flow's hosts now.
control HostLoads(inout headers_t hdr) {
    apply {
        fq_src_load.read(hdr.fq.src_load, hdr.fq.src_host);
        fq_src_epoch.read(hdr.fq.other, hdr.fq.src_host);
        if (hdr.fq.other != hdr.fq.epoch) {
            hdr.fq.src_load = 0;
        }
        fq_dst_load.read(hdr.fq.dst_load, hdr.fq.dst_host);
        fq_dst_epoch.read(hdr.fq.other, hdr.fq.dst_host);
        if (hdr.fq.other != hdr.fq.epoch) {
            hdr.fq.dst_load = 0;
        }
    }
}

// The flow's hosts' loads as changed (hdr.fq.src_load, dst_load), for its epoch.
control HostLoadsWrite(inout headers_t hdr) {
    apply {
        fq_src_load.write(hdr.fq.src_host, hdr.fq.src_load);
        fq_src_epoch.write(hdr.fq.src_host, hdr.fq.epoch);
        fq_dst_load.write(hdr.fq.dst_host, hdr.fq.dst_load);
        fq_dst_epoch.write(hdr.fq.dst_host, hdr.fq.epoch);
    }
}

// An arriving packet joins its flow queue, or is refused (hdr.fq.overflow)
// when its direction's queue holds queue_limit packets.
control FlowEnqueue(inout headers_t hdr) {
    HostLoads() host_loads;
    HostShare() host_share;

    action flow_of() {
        hdr.fq.flow = hdr.link.pkt.dir * FQ_FLOWS + hdr.fq.hashed;
        hdr.fq.flow_ref = hdr.link.pkt.dir * FQ_FLOWS + hdr.fq.hashed + 1;
        hdr.fq.slot = hdr.link.pkt.dir * FQ_SLOTS + (hdr.fq.ticket & FQ_SLOT_MASK);
        hdr.fq.bytes = hdr.pass.l3_len + hdr.link.params.overhead_bytes;
        hdr.fq.value = hdr.fq.ticket + 1;
        hdr.fq.ecn = (hdr.feature.ect1 ? 2w2 : 2w0) | (hdr.feature.capable ? 2w1 : 2w0);
    }
    table index { actions = { flow_of; } const default_action = flow_of(); }

    apply {
        fq_backlog.read(hdr.fq.backlog, hdr.link.pkt.dir);
        fq_tickets.read(hdr.fq.ticket, hdr.link.pkt.dir);
        // The 5-tuple, with ports where the parser found them.
        if (hdr.l4.isValid()) {
            hdr.fq.src_port = hdr.l4.src_port;
            hdr.fq.dst_port = hdr.l4.dst_port;
        }
        if (hdr.ipv4.isValid()) {
            hash(hdr.fq.hashed, HashAlgorithm.crc32, (bit<32>) 0,
                 {hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                  hdr.fq.src_port, hdr.fq.dst_port}, FQ_FLOWS);
            if (hdr.fq.hosts == 1) {
                hdr.fq.value = hdr.link.pkt.dir * FQ_FLOWS;
                hdr.fq.setValid();
                hash(hdr.fq.src_host, HashAlgorithm.crc32, hdr.fq.value,
                     {hdr.ipv4.src_addr}, FQ_FLOWS);
                hash(hdr.fq.dst_host, HashAlgorithm.crc32, hdr.fq.value,
                     {hdr.ipv4.dst_addr}, FQ_FLOWS);
            }
        } else if (hdr.ipv6.isValid()) {
            hash(hdr.fq.hashed, HashAlgorithm.crc32, (bit<32>) 0,
                 {hdr.ipv6.src_addr, hdr.ipv6.dst_addr, hdr.ipv6.next_hdr,
                  hdr.fq.src_port, hdr.fq.dst_port}, FQ_FLOWS);
            if (hdr.fq.hosts == 1) {
                hdr.fq.value = hdr.link.pkt.dir * FQ_FLOWS;
                hdr.fq.setValid();
                hash(hdr.fq.src_host, HashAlgorithm.crc32, hdr.fq.value,
                     {hdr.ipv6.src_addr}, FQ_FLOWS);
                hash(hdr.fq.dst_host, HashAlgorithm.crc32, hdr.fq.value,
                     {hdr.ipv6.dst_addr}, FQ_FLOWS);
            }
        } else {
            hdr.fq.src_host = hdr.link.pkt.dir * FQ_FLOWS;   // not IP: host 0, flow 0
            hdr.fq.dst_host = hdr.link.pkt.dir * FQ_FLOWS;
        }
        index.apply();
        fq_epoch.read(hdr.fq.epoch, hdr.link.pkt.dir);
        if (hdr.fq.backlog == 0 &&
            hdr.pass.free <= ((time_q_t) hdr.pass.now) << TIME_FRAC_BITS) {
            // The link has sent everything: DRR++'s lists start afresh.
            hdr.fq.epoch = hdr.fq.epoch + 1;
            fq_epoch.write(hdr.link.pkt.dir, hdr.fq.epoch);
            fq_new_head.write(hdr.link.pkt.dir, FQ_NONE);
            fq_new_tail.write(hdr.link.pkt.dir, FQ_NONE);
            fq_old_head.write(hdr.link.pkt.dir, FQ_NONE);
            fq_old_tail.write(hdr.link.pkt.dir, FQ_NONE);
        }
        if (hdr.fq.backlog >= hdr.link.params.queue_limit) {
            hdr.fq.overflow = true;
        } else {
            fq_tickets.write(hdr.link.pkt.dir, hdr.fq.value);
            hdr.fq.backlog = hdr.fq.backlog + 1;
            fq_backlog.write(hdr.link.pkt.dir, hdr.fq.backlog);

            fq_arrival.write(hdr.fq.slot, hdr.pass.now);
            fq_bytes.write(hdr.fq.slot, hdr.fq.bytes);
            fq_flow.write(hdr.fq.slot, hdr.fq.flow);
            fq_state.write(hdr.fq.slot, FQ_WAITING);
            fq_ecn.write(hdr.fq.slot, hdr.fq.ecn);
            fq_enqueued.read(hdr.fq.before, hdr.fq.flow);
            fq_before.write(hdr.fq.slot, hdr.fq.before);
            hdr.fq.value = hdr.fq.before + hdr.fq.bytes;
            hdr.fq.setValid();
            fq_enqueued.write(hdr.fq.flow, hdr.fq.value);

            fq_count.read(hdr.fq.count, hdr.fq.flow);
            if (hdr.fq.count == 0) {
                fq_head.write(hdr.fq.flow, hdr.fq.ticket);
                fq_active.read(hdr.fq.other, hdr.link.pkt.dir);
                hdr.fq.other = hdr.fq.other + 1;
                hdr.fq.setValid();
                fq_active.write(hdr.link.pkt.dir, hdr.fq.other);
            } else {
                fq_tail.read(hdr.fq.other, hdr.fq.flow);
                hdr.fq.other_slot = hdr.link.pkt.dir * FQ_SLOTS + (hdr.fq.other & FQ_SLOT_MASK);
                hdr.fq.setValid();
                fq_next.write(hdr.fq.other_slot, hdr.fq.ticket);
            }
            fq_tail.write(hdr.fq.flow, hdr.fq.ticket);
            hdr.fq.count = hdr.fq.count + 1;
            hdr.fq.setValid();
            fq_count.write(hdr.fq.flow, hdr.fq.count);

            // A flow in no list turns up: it goes first, with a quantum.
            fq_list.read(hdr.fq.list, hdr.fq.flow);
            fq_listed_in.read(hdr.fq.other, hdr.fq.flow);
            if (hdr.fq.list == FQ_LIST_NONE || hdr.fq.other != hdr.fq.epoch) {
                fq_listed_in.write(hdr.fq.flow, hdr.fq.epoch);
                fq_list.write(hdr.fq.flow, FQ_LIST_NEW);
                hdr.fq.share = hdr.fq.quantum;
                if (hdr.fq.hosts == 1) {
                    fq_src_host.write(hdr.fq.flow, hdr.fq.src_host);
                    fq_dst_host.write(hdr.fq.flow, hdr.fq.dst_host);
                    fq_bulk.write(hdr.fq.flow, 0);
                    host_loads.apply(hdr);
                    host_share.apply(hdr);
                }
                fq_deficit.write(hdr.fq.flow, hdr.fq.share);
                fq_next_flow.write(hdr.fq.flow, FQ_NONE);
                fq_new_tail.read(hdr.fq.other, hdr.link.pkt.dir);
                if (hdr.fq.other == FQ_NONE) {
                    fq_new_head.write(hdr.link.pkt.dir, hdr.fq.flow_ref);
                } else {
                    hdr.fq.other = hdr.fq.other - 1;
                    hdr.fq.setValid();
                    fq_next_flow.write(hdr.fq.other, hdr.fq.flow_ref);
                }
                fq_new_tail.write(hdr.link.pkt.dir, hdr.fq.flow_ref);
            }
            hdr.link.pkt.ticket = hdr.fq.ticket;
        }
    }
}

// One scheduling step, once the link is free (hdr.pass.free, read and
// written back by LinkPass, with next_seq in hdr.pass.seq): the flow at the
// head of the new list, else of the old, either gives its next packet the
// link (or loses it to COBALT, taking no link time), or, its deficit spent,
// takes a quantum more and goes to the old list's tail, or, found empty,
// leaves its list (a new flow for the old list's tail while that has
// flows), as fq_codel's dequeue. An arrival refused for overflow is
// COBALT's event instead, in its flow.
control FlowStep(inout headers_t hdr) {
    Cobalt() cobalt;
    SojournRamp() sojourn_ramp;
    HostLoads() host_loads;
    HostShare() host_share;
    HostLoadsWrite() host_loads_write;

    action flow_slot() {
        hdr.fq.slot = hdr.link.pkt.dir * FQ_SLOTS + (hdr.fq.ticket & FQ_SLOT_MASK);
    }
    table slot_of { actions = { flow_slot; } const default_action = flow_slot(); }
    table new_head_slot_of { actions = { flow_slot; } const default_action = flow_slot(); }

    // The flow a list names (flow_ref: its index + 1).
    action flow_of_ref() { hdr.fq.flow = hdr.fq.flow_ref - 1; }
    table flow_index { actions = { flow_of_ref; } const default_action = flow_of_ref(); }
    table head_index { actions = { flow_of_ref; } const default_action = flow_of_ref(); }

    action take_share() { hdr.fq.deficit = hdr.fq.deficit + hdr.fq.share; }
    table refill { actions = { take_share; } const default_action = take_share(); }

    apply {
        hdr.fq.setValid();
        if (!hdr.fq.overflow) {
            fq_backlog.read(hdr.fq.backlog, hdr.link.pkt.dir);
            fq_new_head.read(hdr.fq.flow_ref, hdr.link.pkt.dir);
            fq_old_head.read(hdr.fq.other, hdr.link.pkt.dir);
            hdr.fq.now_q = ((time_q_t) hdr.pass.now) << TIME_FRAC_BITS;
            if (hdr.pass.free > hdr.fq.now_q ||
                (hdr.fq.flow_ref == FQ_NONE && hdr.fq.other == FQ_NONE)) {
                return;   // the link is busy, or no flow waits
            }
            hdr.fq.from_new = hdr.fq.flow_ref != FQ_NONE;
            if (hdr.fq.from_new && hdr.fq.other != FQ_NONE) {
                // A new flow that turned up after the link freed (this pass
                // comes late) was not there to go first: the old list's.
                flow_index.apply();
                fq_head.read(hdr.fq.ticket, hdr.fq.flow);
                new_head_slot_of.apply();
                fq_arrival.read(hdr.fq.arrival, hdr.fq.slot);
                hdr.fq.from_new = ((time_q_t) hdr.fq.arrival) << TIME_FRAC_BITS <= hdr.pass.free;
            }
            if (!hdr.fq.from_new) {
                hdr.fq.flow_ref = hdr.fq.other;
            }
            head_index.apply();
            fq_count.read(hdr.fq.count, hdr.fq.flow);
            fq_deficit.read(hdr.fq.deficit, hdr.fq.flow);
            fq_next_flow.read(hdr.fq.next_flow, hdr.fq.flow);
            hdr.fq.refill = hdr.fq.deficit == 0 || hdr.fq.deficit[31:31] == 1;   // <= 0
            hdr.fq.empty = !hdr.fq.refill && hdr.fq.count == 0;
            hdr.fq.moves = hdr.fq.refill || hdr.fq.empty;
            hdr.fq.at_us = (time_us_t) ((hdr.pass.free + TIME_FRAC_MASK) >> TIME_FRAC_BITS);
        } else {
            hdr.fq.at_us = hdr.pass.now;
        }

        if (hdr.fq.overflow || hdr.fq.moves) {
            // Off the head of its list.
            if (!hdr.fq.overflow) {
                if (hdr.fq.from_new) {
                    fq_new_head.write(hdr.link.pkt.dir, hdr.fq.next_flow);
                    if (hdr.fq.next_flow == FQ_NONE) {
                        fq_new_tail.write(hdr.link.pkt.dir, FQ_NONE);
                    }
                } else {
                    fq_old_head.write(hdr.link.pkt.dir, hdr.fq.next_flow);
                    if (hdr.fq.next_flow == FQ_NONE) {
                        fq_old_tail.write(hdr.link.pkt.dir, FQ_NONE);
                    }
                    hdr.fq.other = hdr.fq.next_flow;   // the old list's head now
                }
                hdr.fq.to_old = hdr.fq.refill ||
                                (hdr.fq.from_new && hdr.fq.other != FQ_NONE);
                hdr.fq.share = hdr.fq.quantum;
                if (hdr.fq.hosts == 1) {
                    // A flow with packets that has spent its quantum is
                    // bulk, in its hosts' loads until it is found empty.
                    fq_epoch.read(hdr.fq.epoch, hdr.link.pkt.dir);
                    fq_src_host.read(hdr.fq.src_host, hdr.fq.flow);
                    fq_dst_host.read(hdr.fq.dst_host, hdr.fq.flow);
                    fq_bulk.read(hdr.fq.bulk, hdr.fq.flow);
                    host_loads.apply(hdr);
                    if (hdr.fq.refill && hdr.fq.count != 0 && hdr.fq.bulk == 0) {
                        hdr.fq.src_load = hdr.fq.src_load + 1;
                        hdr.fq.dst_load = hdr.fq.dst_load + 1;
                        fq_bulk.write(hdr.fq.flow, 1);
                        host_loads_write.apply(hdr);
                    } else if (hdr.fq.empty && hdr.fq.bulk == 1) {
                        hdr.fq.src_load = hdr.fq.src_load - 1;
                        hdr.fq.dst_load = hdr.fq.dst_load - 1;
                        fq_bulk.write(hdr.fq.flow, 0);
                        host_loads_write.apply(hdr);
                    }
                    if (hdr.fq.refill) {
                        host_share.apply(hdr);
                    }
                }
                if (hdr.fq.refill) {
                    refill.apply();
                    fq_deficit.write(hdr.fq.flow, hdr.fq.deficit);
                }
                if (hdr.fq.to_old) {
                    fq_list.write(hdr.fq.flow, FQ_LIST_OLD);
                    fq_next_flow.write(hdr.fq.flow, FQ_NONE);
                    fq_old_tail.read(hdr.fq.other, hdr.link.pkt.dir);
                    if (hdr.fq.other == FQ_NONE) {
                        fq_old_head.write(hdr.link.pkt.dir, hdr.fq.flow_ref);
                    } else {
                        hdr.fq.other = hdr.fq.other - 1;
                        hdr.fq.setValid();
                        fq_next_flow.write(hdr.fq.other, hdr.fq.flow_ref);
                    }
                    fq_old_tail.write(hdr.link.pkt.dir, hdr.fq.flow_ref);
                } else {
                    fq_list.write(hdr.fq.flow, FQ_LIST_NONE);
                }
            }
            hdr.fq.cobalt_at = hdr.fq.at_us;
            hdr.fq.leave_at = hdr.fq.at_us;
        } else {
            // Its next packet leaves its flow queue now.
            fq_head.read(hdr.fq.ticket, hdr.fq.flow);
            slot_of.apply();
            fq_arrival.read(hdr.fq.arrival, hdr.fq.slot);
            fq_bytes.read(hdr.fq.bytes, hdr.fq.slot);
            fq_next.read(hdr.fq.other, hdr.fq.slot);
            fq_ecn.read(hdr.fq.ecn, hdr.fq.slot);
            fq_head.write(hdr.fq.flow, hdr.fq.other);
            hdr.fq.count = hdr.fq.count - 1;
            hdr.fq.backlog = hdr.fq.backlog - 1;
            hdr.fq.setValid();
            fq_count.write(hdr.fq.flow, hdr.fq.count);
            fq_backlog.write(hdr.link.pkt.dir, hdr.fq.backlog);
            if (hdr.fq.count == 0) {
                fq_active.read(hdr.fq.other, hdr.link.pkt.dir);
                hdr.fq.other = hdr.fq.other - 1;
                hdr.fq.setValid();
                fq_active.write(hdr.link.pkt.dir, hdr.fq.other);
            }

            fq_dequeued.read(hdr.fq.before, hdr.fq.flow);
            hdr.fq.value = hdr.fq.before + hdr.fq.bytes;
            hdr.fq.setValid();
            fq_dequeued.write(hdr.fq.flow, hdr.fq.value);
            // It starts when the link is free, or when it came to an idle link.
            hdr.fq.start = ((time_q_t) hdr.fq.arrival) << TIME_FRAC_BITS;
            if (hdr.pass.free > hdr.fq.start) {
                hdr.fq.start = hdr.pass.free;
            }
            hdr.fq.start_us = (time_us_t) ((hdr.fq.start + TIME_FRAC_MASK) >> TIME_FRAC_BITS);

            hdr.fq.leaves = true;
            hdr.fq.cobalt_at = hdr.fq.arrival;
            hdr.fq.leave_at = hdr.fq.start_us;
            hdr.feature.setValid();
            random(hdr.feature.rand_blue, 0, 0xffffffff);
        }

        // COBALT: the queue overflowed, a flow queue was found empty, or a
        // packet leaves one.
        if (hdr.fq.overflow || hdr.fq.empty || hdr.fq.leaves) {
            hdr.feature.setValid();
            fq_cobalt_count.read(hdr.feature.cobalt.count, hdr.fq.flow);
            fq_cobalt_dropping.read(hdr.feature.cobalt.dropping, hdr.fq.flow);
            fq_cobalt_drop_next.read(hdr.feature.cobalt.drop_next, hdr.fq.flow);
            fq_cobalt_p_drop.read(hdr.feature.cobalt.p_drop, hdr.fq.flow);
            fq_cobalt_blue_timer.read(hdr.feature.cobalt.blue_timer, hdr.fq.flow);
            fq_cobalt_generation.read(hdr.feature.cobalt.generation, hdr.fq.flow);
            cobalt.apply(hdr.fq.cobalt_at, hdr.fq.leave_at, hdr.fq.overflow, hdr.fq.empty,
                         hdr.fq.leaves, hdr.fq.ecn & 1 == 1, hdr.feature.rand_blue, hdr.link,
                         hdr.feature.cobalt, hdr.feature.cobalt_work, hdr.feature.verdict);
            fq_cobalt_count.write(hdr.fq.flow, hdr.feature.cobalt.count);
            fq_cobalt_dropping.write(hdr.fq.flow, hdr.feature.cobalt.dropping);
            fq_cobalt_drop_next.write(hdr.fq.flow, hdr.feature.cobalt.drop_next);
            fq_cobalt_p_drop.write(hdr.fq.flow, hdr.feature.cobalt.p_drop);
            fq_cobalt_blue_timer.write(hdr.fq.flow, hdr.feature.cobalt.blue_timer);
            fq_cobalt_generation.write(hdr.fq.flow, hdr.feature.cobalt.generation);
        }

        if (hdr.fq.leaves) {
            fq_start.write(hdr.fq.slot, hdr.fq.start);
            if ((hdr.feature.verdict == AQM_DROP || hdr.feature.verdict == AQM_DROP_BLUE) &&
                hdr.fq.count != 0) {
                // Off the link; the flow's next packet is up at once.
                fq_state.write(hdr.fq.slot, hdr.feature.verdict == AQM_DROP ?
                                            FQ_DROP : FQ_DROP_BLUE);
            } else {
                hdr.fq.state = hdr.feature.verdict == AQM_SIGNAL ? FQ_MARK : FQ_START;
                if (hdr.fq.state == FQ_START &&
                    hdr.link.params.features & FEATURE_SOJOURN_RAMP != 0) {
                    // The ramp on its sojourn in its own flow queue.
                    random(hdr.feature.rand_ramp, 0, 0xffff);
                    hdr.feature.sojourn = hdr.fq.start_us - hdr.fq.arrival;
                    sojourn_ramp.apply(hdr.feature.sojourn, hdr.feature.rand_ramp, hdr.link,
                                       hdr.feature.ramp_mark);
                    if (hdr.feature.ramp_mark && hdr.fq.ecn & 2 != 0) {
                        hdr.fq.state = FQ_RAMP;
                    }
                }
                fq_state.write(hdr.fq.slot, hdr.fq.state);
                fq_seq.write(hdr.fq.slot, hdr.pass.seq);
                hdr.pass.seq = hdr.pass.seq + 1;
                hdr.pass.free = hdr.fq.start + (time_q_t) hdr.fq.bytes *
                                               (time_q_t) hdr.link.params.byte_cost_q;
                hdr.fq.deficit = hdr.fq.deficit - hdr.fq.bytes;
                hdr.fq.setValid();
                fq_deficit.write(hdr.fq.flow, hdr.fq.deficit);
            }
        }
    }
}

// A queued packet reads its ticket: still waiting (hdr.fq.waiting, with
// the earliest instant it could start in hdr.fq.start), or its start, its
// place in link order and COBALT's verdict.
control FlowLearn(inout headers_t hdr) {
    // When a waiting packet looks again (hdr.fq.start): at the earliest it
    // could start, the link free again and then its own flow's bytes ahead
    // of it sent, unless its flow shares the link with others (count: the
    // flow queues holding packets): then as if they all keep it, but no
    // more than half the delay later than the earliest. It must learn its
    // start before it is due; it learns it on time either way, and looks
    // fewer times (at least a pass's worth of bytes apart, so that the
    // packets left in flow queues by a push to an unlimited rate do not
    // all go round at once).
    action wake_at() {
        time_q_t cost = (time_q_t) hdr.link.params.byte_cost_q > FQ_MIN_COST_Q ?
                        (time_q_t) hdr.link.params.byte_cost_q : FQ_MIN_COST_Q;
        time_q_t from = hdr.pass.free > hdr.fq.now_q ? hdr.pass.free : hdr.fq.now_q;
        time_q_t ahead = (time_q_t) (hdr.fq.before - hdr.fq.other) * cost;
        time_q_t shared = ahead * (time_q_t) (hdr.fq.count > 1 ? hdr.fq.count : 1);
        time_q_t slack = ((time_q_t) hdr.link.params.delay_us) << (TIME_FRAC_BITS - 1);
        hdr.fq.start = from + (shared > ahead + slack ? ahead + slack : shared);
    }
    table wake { actions = { wake_at; } const default_action = wake_at(); }

    action ticket_slot() {
        hdr.fq.slot = hdr.link.pkt.dir * FQ_SLOTS + (hdr.link.pkt.ticket & FQ_SLOT_MASK);
    }
    table slot_of { actions = { ticket_slot; } const default_action = ticket_slot(); }

    apply {
        hdr.fq.setValid();
        slot_of.apply();
        fq_state.read(hdr.fq.state, hdr.fq.slot);
        fq_bytes.read(hdr.fq.bytes, hdr.fq.slot);
        if (hdr.fq.state == FQ_WAITING) {
            hdr.fq.waiting = true;
            fq_flow.read(hdr.fq.flow, hdr.fq.slot);
            fq_before.read(hdr.fq.before, hdr.fq.slot);
            fq_dequeued.read(hdr.fq.other, hdr.fq.flow);
            hdr.fq.now_q = ((time_q_t) hdr.pass.now) << TIME_FRAC_BITS;
            fq_active.read(hdr.fq.count, hdr.link.pkt.dir);
            wake.apply();
        } else {
            fq_start.read(hdr.fq.start, hdr.fq.slot);
            fq_seq.read(hdr.link.pkt.seq, hdr.fq.slot);
        }
    }
}

#endif
