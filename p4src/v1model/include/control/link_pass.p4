// LinkPass: one pass of a packet through the link model, its arrival or an
// event of a held packet (a turn of the hold loop that found something due).
// It owns the direction's link state between packets (the virtual clock,
// link order, ARQ's busy line, the loss model's state) and the link's
// counters, and applies the architecture-neutral link model
// (p4src/include/control) and the v1model glue beside it. An arrival on a
// plain direction (no optional feature but link errors) is worked out in one
// table action (LinkArrival); the others' arrival and a deferred packet's
// passes read their direction's parameters into a header first (LinkParams,
// QueueParams).
#ifndef LINKEMU_LINK_PASS_P4
#define LINKEMU_LINK_PASS_P4

#include "../headers.p4"
#include "../../../include/control/port_map.p4"
#include "../../../include/control/link_params.p4"
#include "../../../include/control/traffic_class.p4"
#include "../../../include/control/best_effort.p4"
#include "../../../include/control/link_clock.p4"
#include "../../../include/control/router_queue.p4"
#include "../../../include/control/release.p4"
#include "../../../include/control/link_errors.p4"
#include "../../../include/control/loss_model.p4"
#include "../../../include/control/ecn_mark.p4"
#include "../../../include/control/sojourn_ramp.p4"
#include "../../../include/control/delay_variation.p4"
#include "../../../include/control/packet_faults.p4"
#include "../../../include/control/event_log.p4"
#include "../define_v1model.p4"
#include "hold.p4"
#include "link_arrival.p4"
#include "deferred_ring.p4"
#include "queue_state.p4"
#include "release_pacing.p4"
#include "release_departure.p4"
#include "router_cobalt.p4"
#include "flow_queues.p4"
#include "event_report.p4"

control LinkPass(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t std) {
    register<time_q_t>(NUM_DIRECTIONS) link_free;
    register<time_q_t>(NUM_QUEUES) class_free;            // a class's rate cap
    register<seq_t>(NUM_DIRECTIONS) next_seq;             // link order
    register<time_us_t>(NUM_DIRECTIONS) retx_busy_until;  // last ARQ due so far
    register<bit<1>>(NUM_DIRECTIONS) loss_bad;            // Gilbert-Elliott state
    register<bit<32>>(NUM_DIRECTIONS) started_bytes;      // link bytes given a start
    register<bit<32>>(NUM_DIRECTIONS) block_from;         // BestEffortStart's block_pos

    @brief("packets entering the link")
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) link_in;
    // Router-queue counters are per class (queue_index).
    @brief("dropped: router queue full")
    counter(NUM_QUEUES, CounterType.packets_and_bytes) drop_queue;
    @brief("ECT(1) marked CE by the sojourn-time ramp")
    counter(NUM_QUEUES, CounterType.packets) ramp_marks;
    @brief("marked CE by COBALT")
    counter(NUM_QUEUES, CounterType.packets) cobalt_marks;
    @brief("dropped: COBALT's CoDel, leaving the router queue")
    counter(NUM_QUEUES, CounterType.packets_and_bytes) drop_codel;
    @brief("dropped: COBALT's BLUE, leaving the router queue")
    counter(NUM_QUEUES, CounterType.packets_and_bytes) drop_blue;
    @brief("dropped: link error (after ARQ, if any)")
    counter(2 * NUM_DIRECTIONS, CounterType.packets_and_bytes) drop_link_error; // HELD_CELLS
    @brief("dropped: Bernoulli / Gilbert-Elliott loss model")
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) drop_loss_model;
    @brief("dropped: not an Ethernet frame")
    counter(NUM_DIRECTIONS, CounterType.packets) drop_malformed;
    @brief("dropped on arrival: the hold held as many as it takes")
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) drop_hold;
    @brief("ARQ retransmission attempts")
    counter(NUM_DIRECTIONS, CounterType.packets) retransmissions;
    @brief("packets delayed by ARQ")
    counter(NUM_DIRECTIONS, CounterType.packets) arq_delayed;
    @brief("packets held behind a retransmission (in-order release)")
    counter(NUM_DIRECTIONS, CounterType.packets) held_behind;
    @brief("packets released before an earlier one of their direction")
    counter(NUM_DIRECTIONS, CounterType.packets) release_skips;
    @brief("packets sent ahead of the others (reorder)")
    counter(NUM_DIRECTIONS, CounterType.packets) sent_ahead;
    @brief("packets released twice (duplicate; link_out counts both)")
    counter(NUM_DIRECTIONS, CounterType.packets) duplicated;
    @brief("packets with one bit flipped (corrupt)")
    counter(NUM_DIRECTIONS, CounterType.packets) corrupted;

    PortMap() port_map;
    LinkArrival() link_arrival;
    LinkParams() link_params;
    TrafficClass() traffic_class;
    QueueParams() queue_params;
    LinkClock() link_clock;
    SetTimes() set_times;
    BestEffortStart() best_effort_start;
    Release() release;
    LinkErrors() link_errors;
    LossModel() loss_model;
    EcnCapable() ecn_capable;
    EcnMark() ecn_mark;
    SojournRamp() sojourn_ramp;
    DelayVariation() delay_variation;
    PacketFaults() packet_faults;
    EventLog() event_log;
    QueueRead() queue_read;
    QueueEnter() enter_queue;
    QueueLeave() leave_queue;
    QueueBehind() queue_behind;
    QueueLastLeave() queue_last_leave;
    RouterAqm() router_aqm;
    RouterCobalt() router_cobalt;
    FlowParams() flow_params;
    FlowEnqueue() flow_enqueue;
    FlowStep() flow_step;
    FlowLearn() flow_learn;
    DeferredHead() deferred_head;
    DeferredStarted() deferred_started;
    DeferredEnqueue() deferred_enqueue;
    DeferredTake() deferred_take;
    ReleasePacing() release_pacing;
    ReleaseDeparture() release_departure;
    TurnWait() turn_wait;
    LogClockRead() log_clock_read;

    // The packet's one event, when its direction logs: EventDigest reports it
    // after the pass.
    action log_event(bit<8> outcome, time_us_t at) {
        hdr.feature.setValid();
        hdr.feature.report = true;
        hdr.feature.event = {hdr.link.pkt.dir, outcome, hdr.link.pkt.seq,
                             (bit<16>) hdr.pass.l3_len, hdr.link.pkt.arrival_us,
                             hdr.link.pkt.start_us, hdr.link.pkt.due_us, at,
                             hdr.link.pkt.retx, hdr.link.pkt.flags[7:0]};
    }

    // The packets the switch holds, both directions: each admitted in link
    // order and not yet released (paced ones keep their turn), each deferred
    // one, and, with timed departure, each released that has not reached its
    // port's egress yet. Counted from positions, so a count never drifts. An
    // arrival is refused at `capacity`: HOLD_CAPACITY for a switch whose
    // held packets all go round; the controller sets more for one with
    // timed departure (`timed`: the packet's PKT_TIMED), where only the
    // packets due go round.
    action count_held(bit<32> capacity, bit<1> timed) {
        next_seq.read(hdr.pass.held, 0);
        release_next.read(hdr.pass.held_part, 0);
        hdr.pass.held = hdr.pass.held - hdr.pass.held_part;
        next_seq.read(hdr.pass.held_part, 1);
        hdr.pass.held = hdr.pass.held + hdr.pass.held_part;
        release_next.read(hdr.pass.held_part, 1);
        hdr.pass.held = hdr.pass.held - hdr.pass.held_part;
        defer_tail.read(hdr.pass.held_part, 0);
        hdr.pass.held = hdr.pass.held + hdr.pass.held_part;
        defer_head.read(hdr.pass.held_part, 0);
        hdr.pass.held = hdr.pass.held - hdr.pass.held_part;
        defer_tail.read(hdr.pass.held_part, 1);
        hdr.pass.held = hdr.pass.held + hdr.pass.held_part;
        defer_head.read(hdr.pass.held_part, 1);
        hdr.pass.held = hdr.pass.held - hdr.pass.held_part;
        out_released.read(hdr.pass.held_part, 0);
        hdr.pass.held = hdr.pass.held + (timed == 1 ? hdr.pass.held_part : 0);
        out_reached.read(hdr.pass.held_part, 0);
        hdr.pass.held = hdr.pass.held - (timed == 1 ? hdr.pass.held_part : 0);
        out_released.read(hdr.pass.held_part, 1);
        hdr.pass.held = hdr.pass.held + (timed == 1 ? hdr.pass.held_part : 0);
        out_reached.read(hdr.pass.held_part, 1);
        hdr.pass.held = hdr.pass.held - (timed == 1 ? hdr.pass.held_part : 0);
        hdr.pass.refused = hdr.pass.held >= capacity;
        hdr.link.pkt.flags = hdr.link.pkt.flags | (timed == 1 ? PKT_TIMED : 0);
    }

    table hold_limit {
        key = { hdr.link.pkt.dir : exact @name("dir"); }
        actions = { count_held; }
        default_action = count_held(HOLD_CAPACITY, 0);
        size = NUM_DIRECTIONS;
    }

    apply {
        hdr.pass.setValid();
        // "Now": arrival for a new packet, the last egress pass for a held one
        // (a recirculated packet keeps a stale ingress timestamp). The
        // emulated link carries the L3 packet; the Ethernet header, which
        // every packet here has, is Mininet's, and a held packet carries its
        // state ahead of it. HELD_CELLS: a held packet counts in cells apart.
        // (A pass that ends here exits: a return would be a flag that p4c
        // keeps in metadata and tests before every statement after it.)
        if (std.instance_type != INSTANCE_TYPE_RECIRC) {
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
            queue_read.apply(hdr);
            release_next.read(hdr.pass.next, hdr.link.pkt.dir);
            random(hdr.pass.rand, 0, 0xffff);
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
            hdr.pass.now = hdr.link.pkt.now_us;
            hdr.pass.l3_len = std.packet_length -
                              (ETH_HEADER_BYTES + hdr.link.pkt.minSizeInBytes());
            hdr.pass.dir_cell = hdr.link.pkt.dir + NUM_DIRECTIONS;
            release_next.read(hdr.pass.next, hdr.link.pkt.dir);
        }

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

        if (std.instance_type != INSTANCE_TYPE_RECIRC) {
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
                link_free.write(hdr.link.pkt.dir, hdr.pass.free);
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
        } else {
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

        // A refused packet (admitted 0) is gone; the rest is the link's; a
        // packet still in its flow queue sleeps until it could start.
        if (hdr.link.pkt.flags & PKT_FQ != 0) {
            if (std.egress_spec == 0) {
                std.egress_spec = hold_port(hdr.link.pkt.ticket);   // no seq yet
            }
            hdr.link.pkt.wake_us = (time_us_t) ((hdr.fq.start + TIME_FRAC_MASK) >> TIME_FRAC_BITS);
            meta.depart_us = hdr.link.pkt.wake_us > hdr.pass.now ? hdr.link.pkt.wake_us : 0;
        } else if (hdr.link.pkt.flags & PKT_ADMITTED != 0) {
            // The last ARQ due so far is read where it is compared: most
            // passes need none.
            if (hdr.link.pkt.flags & PKT_LINK_DONE == 0 &&
                hdr.pass.now >= hdr.link.pkt.attempt_us) {
                random(hdr.pass.rand, 0, 0xffff);
                link_errors.apply(hdr.pass.rand, hdr.link);
                if (hdr.link.pkt.flags & PKT_LINK_DONE == 0) {   // retransmitted
                    retransmissions.count(hdr.link.pkt.dir);
                    if (hdr.link.pkt.retx == 1) {
                        arq_delayed.count(hdr.link.pkt.dir);
                    }
                    retx_busy_until.read(hdr.pass.busy_until, hdr.link.pkt.dir);
                    if (hdr.pass.busy_until <= hdr.pass.now) {   // a new block
                        block_from.write(hdr.link.pkt.dir, hdr.link.pkt.pos);
                    }
                    if (hdr.link.pkt.due_us > hdr.pass.busy_until) {
                        retx_busy_until.write(hdr.link.pkt.dir, hdr.link.pkt.due_us);
                    }
                }
            }

            release.apply(hdr.pass.now, hdr.pass.next, hdr.link);
            release_pacing.apply(hdr, std);
            release_next.write(hdr.link.pkt.dir, hdr.pass.next);
            if (hdr.link.pkt.flags & (PKT_TIMED | PKT_RELEASED | PKT_AHEAD) ==
                (PKT_TIMED | PKT_RELEASED)) {
                release_departure.apply(hdr, meta);
            }

            if (hdr.link.pkt.flags & PKT_RELEASED == 0) {
                // Sleep until the next event: it leaves the router queue, an
                // error draw, the due instant (never, for a deferred packet:
                // see the fast path), or for a packet waiting for its turn in
                // release order, in the turn lane, the instant it gives up
                // waiting (Release sets it). A paced frame is due, and has its
                // port.
                if (hdr.link.pkt.flags & PKT_TURN != 0) {
                    turn_wait.apply(hdr, meta, std, hdr.pass.next);
                    if (hdr.link.pkt.flags & PKT_HELD == 0) {
                        retx_busy_until.read(hdr.pass.busy_until, hdr.link.pkt.dir);
                        if (hdr.link.pkt.due_us < hdr.pass.busy_until) {
                            held_behind.count(hdr.link.pkt.dir);
                            hdr.link.pkt.flags = hdr.link.pkt.flags | PKT_HELD;
                        }
                    }
                } else {
                    if (std.egress_spec == 0) {
                        std.egress_spec = hold_port(hdr.link.pkt.seq);
                    }
                    hdr.link.pkt.wake_us = hdr.link.pkt.due_us;
                    if (hdr.link.pkt.flags & PKT_LINK_DONE == 0 &&
                        hdr.link.pkt.attempt_us < hdr.link.pkt.wake_us) {
                        hdr.link.pkt.wake_us = hdr.link.pkt.attempt_us;
                    }
                    if (hdr.link.pkt.flags & PKT_QUEUED != 0 &&
                        hdr.link.pkt.leave_us < hdr.link.pkt.wake_us) {
                        hdr.link.pkt.wake_us = hdr.link.pkt.leave_us;
                    }
                    // A switch with timed departure keeps it asleep in its
                    // hold port's queue until then. A deferred packet sleeps
                    // until the head of its ring could leave the router
                    // queue (an arrival meanwhile offers the head the link
                    // itself); while the head cannot start for another
                    // reason (an outage, a block behind a retransmission),
                    // it goes round.
                    if (hdr.link.pkt.flags & PKT_DEFERRED == 0) {
                        meta.depart_us = hdr.link.pkt.wake_us;
                    } else if (hdr.feature.isValid() && hdr.feature.leave_us > hdr.pass.now) {
                        hdr.link.pkt.wake_us = hdr.feature.leave_us;
                        meta.depart_us = hdr.feature.leave_us;
                    }
                    // Those behind it in link order wait for it until it is
                    // due, or with timed departure until its next event,
                    // when it may be released ahead (Release).
                    if (hdr.link.pkt.flags & (PKT_DEFERRED | PKT_AHEAD) == 0) {
                        order_due.write(order_slot(hdr.link.pkt.dir, hdr.link.pkt.seq),
                                        hdr.link.pkt.flags & PKT_TIMED == 0 ?
                                        hdr.link.pkt.due_us : hdr.link.pkt.wake_us);
                    }
                }
            } else if (hdr.link.pkt.flags & (PKT_SKIPPED | PKT_LOG | PKT_LOST | PKT_DUPLICATE |
                                             PKT_FLOOD) == 0) {
                std.egress_spec = (bit<9>) hdr.link.pkt.dest;   // the common case: one test
            } else {
                if (hdr.link.pkt.flags & PKT_SKIPPED != 0) {
                    release_skips.count(hdr.link.pkt.dir);
                }
                if (hdr.link.pkt.flags & PKT_LOG != 0) {
                    log_clock_read.apply(hdr);
                    if (hdr.link.pkt.flags & (PKT_AQM_LATE | PKT_BLUE) ==
                        (PKT_AQM_LATE | PKT_BLUE)) {
                        log_event(EVENT_DROP_BLUE, hdr.pass.clock);
                    } else if (hdr.link.pkt.flags & PKT_AQM_LATE != 0) {
                        log_event(EVENT_DROP_CODEL, hdr.pass.clock);
                    } else if (hdr.link.pkt.flags & PKT_LOST != 0) {
                        log_event(EVENT_DROP_LINK_ERROR, hdr.pass.clock);
                    } else {
                        log_event(EVENT_RELEASED, hdr.pass.clock);
                    }
                }
                if (hdr.link.pkt.flags & (PKT_AQM_LATE | PKT_BLUE) ==
                    (PKT_AQM_LATE | PKT_BLUE)) {
                    drop_blue.count(hdr.link.pkt.queue);
                    mark_to_drop(std);
                } else if (hdr.link.pkt.flags & PKT_AQM_LATE != 0) {
                    drop_codel.count(hdr.link.pkt.queue);
                    mark_to_drop(std);
                } else if (hdr.link.pkt.flags & PKT_LOST != 0) {
                    drop_link_error.count(hdr.pass.dir_cell);
                    mark_to_drop(std);
                } else if (hdr.link.pkt.flags & PKT_DUPLICATE != 0) {
                    duplicated.count(hdr.link.pkt.dir);
                    std.mcast_grp = DUP_GROUP_BASE + hdr.link.pkt.dest;
                } else if (hdr.link.pkt.flags & PKT_FLOOD != 0) {
                    std.mcast_grp = hdr.link.pkt.dest;
                } else {
                    std.egress_spec = (bit<9>) hdr.link.pkt.dest;
                }
            }
        }
    }
}


#endif
