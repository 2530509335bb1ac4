// linkemu on BMv2 simple_switch (v1model): the only architecture-specific
// file. It owns the state (registers), the counters and the hold loop; the
// link model itself lives in the architecture-neutral controls it applies.
//
// Hold loop: a packet that is not yet due is sent to one of 16 interface-less
// hold ports and recirculated at the end of egress, with its link state
// (link_state_h, the egress clock in it) emitted ahead of the frame and
// extracted again on the next pass: cheaper in BMv2 than a field list, whose
// fields are reset and copied one by one on every pass. Ingress decides on
// every pass, so all link state is touched by BMv2's single ingress thread
// only. A pass with nothing due (the packet's wake_us is ahead) takes the
// fast path in LinkemuIngress: one condition, no table of the link model;
// every other pass is a full pass (LinkPass), several times dearer. An
// arrival on a plain direction (no optional feature but link errors) is
// worked out in one table action (LinkArrival); the others' arrival and a
// deferred packet's passes read their direction's parameters into a header
// first (LinkParams, QueueParams). The hold
// ports spread the held packets over 16 egress queues of BMv2's default 64
// packets, which matches the 1024-packet recirculation queue: that queue
// bounds the loop (hold queues deepened to 4096 over Thrift held no more:
// 2000 held 1 s, 33 out, measured); they are all = 0 mod 4, so one BMv2
// egress worker serves them all, which keeps the loop on two threads.
//
// Turn lane: a due packet waiting for its turn in release order, or one
// that release pacing holds back, goes round on the port beside its hold
// port (= 1 mod 4: egress worker 1), not behind the held packets queued for
// worker 0, so it is looked at again sooner than a round of the loop later
// (500 frames held: 5-6 ms a round against the main loop's 8, measured; not
// within a few passes, as the switch's threads share one core). Packets
// join the loop wherever its round stands when they arrive, so its order is
// not link order; behind the main loop alone, packets due at once left one
// or two a round, and the wait added up from packet to packet (a loaded 10
// Mbit/s, 300 ms link: p99 293 ms late; with the lane 30-34 ms, measured
// 2026-11-24).
//
// Deferred best effort (a profile's priority split, or a rate that changes
// over time): the waiting best-effort packets of a direction are a ring of
// tickets with their arrival and sizes;
// every event of the direction offers the head the link (BestEffortStart), and
// a deferred packet picks its start and sequence number up from its slot.
#include <core.p4>
#include <v1model.p4>

#include "../include/defines.p4"
#include "../include/headers.p4"
#include "../include/control/port_map.p4"
#include "../include/control/link_params.p4"
#include "../include/control/traffic_class.p4"
#include "../include/control/best_effort.p4"
#include "../include/control/link_clock.p4"
#include "../include/control/router_queue.p4"
#include "../include/control/release.p4"
#include "../include/control/link_errors.p4"
#include "../include/control/loss_model.p4"
#include "../include/control/red.p4"
#include "../include/control/ecn_mark.p4"
#include "../include/control/sojourn_ramp.p4"
#include "../include/control/delay_variation.p4"
#include "../include/control/packet_faults.p4"
#include "../include/control/event_log.p4"

const bit<32> INSTANCE_TYPE_RECIRC = 4;
const bit<9>  CPU_PORT = 255;         // simple_switch_grpc --cpu-port: P4Runtime packet I/O
const bit<9>  HOLD_PORT_BASE = 448;   // 448, 452, .. 508; no port from 448 up is attached
const bit<9>  HOLD_PORT_MASK = 15;    // 16 hold ports, chosen by sequence number
const bit<9>  TURN_PORT_OFFSET = 1;   // 449, 453, .. 509: the turn lane
const bit<8>  FL_HOLD = 1;            // empty (p4c warns so): the state rides in the packet
const bit<16> DUP_GROUP_BASE = 256;   // + port: that port twice (PacketFaults' duplicate)
// HELD_CELLS: BMv2 counts a held packet's bytes with the state it carries
// ahead of the frame (link_state_h). The counters that can count a held
// packet have a second half of cells for it, and the controller takes those
// bytes off (dataplane.counter_cells), so every byte count is the frame's.
// Deferred best-effort packets per direction; the profile keeps the
// best-effort queue limit at or below it, so a slot is never overwritten
// while its packet waits.
const bit<32> DEFER_RING = 1024;
const bit<32> DEFER_MASK = DEFER_RING - 1;

// Release pacing: BMv2 queues 64 frames for an output port by default and
// drops the rest, and held frames due together
// (the ones behind a retransmitted frame, or a burst held by the delay) would
// be released faster than the port's egress thread, which shares the switch's
// core, sends them. So a held frame is released only while fewer than
// OUT_PACE of its direction's held releases are still ahead of the port's
// egress; else it goes round once more, in the turn lane, which comes back
// sooner than the main loop. (A frame released on arrival is forwarded as
// BMv2 forwards any frame.) Each held release carries its number
// (pass_h.out_no) to egress, which records it in out_reached: a frame BMv2
// drops anyway is passed over by the next. Should BMv2 drop every release
// still counted ahead, no later one would reach egress to say so: after
// OUT_STALL_US in which the releases made no progress (out_progress_us: the
// last held release, or the last to reach egress, whichever is later) the
// count is taken as lost, and frames are released again. The last release
// counts too: after a quiet spell the port's egress thread may take longer
// than BMv2's queue of 64 lasts to send the first of a burst on.
const bit<32>   OUT_PACE = 48;
const time_us_t OUT_STALL_US = 10000;
register<bit<32>>(NUM_DIRECTIONS) out_reached;
register<time_us_t>(NUM_DIRECTIONS) out_progress_us;

// The latest egress pass of a logged packet: "now" for the event log, fresher
// than a held packet's own last pass.
register<time_us_t>(1) log_clock;

// Read by the hold loop's fast path as well as by a full pass.
register<seq_t>(NUM_DIRECTIONS) next_release;
register<bit<32>>(NUM_DIRECTIONS) defer_head;   // a direction's next deferred ticket to start

// The hold port of a held packet: its sequence number spreads the held
// packets over the hold ports.
bit<9> hold_port(in seq_t seq) {
    return HOLD_PORT_BASE + (((bit<9>) seq & HOLD_PORT_MASK) << 2);
}

bit<9> turn_port(in seq_t seq) {
    return hold_port(seq) + TURN_PORT_OFFSET;
}

bit<32> defer_slot(in direction_t dir, in bit<32> ticket) {
    return (dir * DEFER_RING) | (ticket & DEFER_MASK);
}

parser LinkemuParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t std) {
    state start {
        // A held packet was parsed on its first pass; later passes only read
        // its metadata, which keeps each pass of the hold loop cheap.
        transition select(std.instance_type) {
            INSTANCE_TYPE_RECIRC : parse_held;
            default              : parse_ethernet;
        }
    }
    state parse_held {
        pkt.extract(hdr.link.pkt);
        transition accept;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4 : parse_ipv4;
            ETHERTYPE_IPV6 : parse_ipv6;
            default        : accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        // Ports only where they follow a plain header in the first fragment.
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_TCP) : parse_l4;
            (5, 0, IP_PROTO_UDP) : parse_l4;
            default              : accept;
        }
    }
    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        transition select(hdr.ipv6.next_hdr) {
            IP_PROTO_TCP : parse_l4;
            IP_PROTO_UDP : parse_l4;
            default      : accept;
        }
    }
    state parse_l4 {
        pkt.extract(hdr.l4);
        transition accept;
    }
}

control NoChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

// One pass of a packet through the link model: its arrival, or a turn of the
// hold loop.
control LinkPass(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t std) {
    register<time_q_t>(NUM_DIRECTIONS) link_free;
    register<time_q_t>(NUM_QUEUES) class_free;            // a class's rate cap
    register<bit<32>>(NUM_QUEUES) queue_pkts;
    register<seq_t>(NUM_DIRECTIONS) next_seq;             // link order
    register<time_us_t>(NUM_DIRECTIONS) retx_busy_until;  // last ARQ due so far
    register<bit<32>>(NUM_DIRECTIONS) out_released;       // held releases (OUT_PACE)
    register<bit<1>>(NUM_DIRECTIONS) loss_bad;            // Gilbert-Elliott state
    register<bit<32>>(NUM_QUEUES) queue_bytes;            // L3 bytes waiting
    register<time_us_t>(NUM_QUEUES) last_leave;           // the queue is empty since
    register<bit<64>>(NUM_QUEUES) red_avg;
    register<bit<32>>(NUM_QUEUES) red_count;
    register<bit<32>>(NUM_QUEUES) red_target;
    register<bit<32>>(NUM_DIRECTIONS) defer_tail;         // next ticket to hand out
    register<time_us_t>(NUM_DIRECTIONS * DEFER_RING) defer_arrival;
    register<bit<32>>(NUM_DIRECTIONS * DEFER_RING) defer_bytes;     // link bytes
    register<time_q_t>(NUM_DIRECTIONS * DEFER_RING) defer_cost;     // set when it starts
    register<time_q_t>(NUM_DIRECTIONS * DEFER_RING) defer_share_cost;
    register<time_q_t>(NUM_DIRECTIONS * DEFER_RING) defer_start;
    register<seq_t>(NUM_DIRECTIONS * DEFER_RING) defer_seq;
    register<bit<32>>(NUM_DIRECTIONS * DEFER_RING) defer_pos;
    register<bit<32>>(NUM_DIRECTIONS) started_bytes;      // link bytes given a start
    register<bit<32>>(NUM_DIRECTIONS) block_from;         // BestEffortStart's block_pos

    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) link_in;
    // Router-queue counters are per class (queue_index).
    counter(NUM_QUEUES, CounterType.packets_and_bytes) drop_queue;
    counter(NUM_QUEUES, CounterType.packets_and_bytes) drop_aqm;
    counter(NUM_QUEUES, CounterType.packets) drop_aqm_ect;
    counter(NUM_QUEUES, CounterType.packets) ecn_marks;
    counter(NUM_QUEUES, CounterType.packets) ramp_marks;
    // The router queue over time: the controller samples both counters, and
    // their difference is the queue (frames; bytes as captured).
    counter(NUM_QUEUES, CounterType.packets_and_bytes) queue_enter;
    counter(NUM_QUEUES, CounterType.packets_and_bytes) queue_leave;   // held packets only
    counter(2 * NUM_DIRECTIONS, CounterType.packets_and_bytes) drop_link_error; // HELD_CELLS
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) drop_loss_model;
    counter(NUM_DIRECTIONS, CounterType.packets) drop_malformed;
    counter(NUM_DIRECTIONS, CounterType.packets) retransmissions;
    counter(NUM_DIRECTIONS, CounterType.packets) arq_delayed;
    counter(NUM_DIRECTIONS, CounterType.packets) held_behind;
    counter(NUM_DIRECTIONS, CounterType.packets) release_skips;
    counter(NUM_DIRECTIONS, CounterType.packets) release_paced;
    counter(NUM_DIRECTIONS, CounterType.packets) sent_ahead;
    counter(NUM_DIRECTIONS, CounterType.packets) duplicated;
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
    Red() red;
    EcnCapable() ecn_capable;
    EcnMark() ecn_mark;
    SojournRamp() sojourn_ramp;
    DelayVariation() delay_variation;
    PacketFaults() packet_faults;
    EventLog() event_log;

    // A deferred packet's slot in its ring, for the register accesses that
    // follow, set by a table's action: p4c copies a slot computed in the
    // control into a temporary of its own at every access, and each is one
    // more metadata field for BMv2 to reset on every pass. A packet entering
    // the ring takes its link bytes there too, for the same reason.
    action head_slot() { hdr.feature.slot = defer_slot(hdr.link.pkt.dir, hdr.pass.head); }
    action tail_slot() {
        hdr.feature.slot = defer_slot(hdr.link.pkt.dir, hdr.pass.tail);
        hdr.feature.bytes = hdr.pass.l3_len + hdr.link.params.overhead_bytes;
    }
    action ticket_slot() { hdr.feature.slot = defer_slot(hdr.link.pkt.dir, hdr.link.pkt.ticket); }
    table slot_of_head { actions = { head_slot; } const default_action = head_slot(); }
    table slot_of_tail { actions = { tail_slot; } const default_action = tail_slot(); }
    table slot_of_ticket { actions = { ticket_slot; } const default_action = ticket_slot(); }

    // The packet's one event, when its direction logs: LinkemuIngress
    // reports it after the pass.
    action log_event(bit<8> outcome, time_us_t at) {
        hdr.feature.setValid();
        hdr.feature.report = true;
        hdr.feature.event = {hdr.link.pkt.dir, outcome, hdr.link.pkt.seq,
                             (bit<16>) hdr.pass.l3_len, hdr.link.pkt.arrival_us,
                             hdr.link.pkt.start_us, hdr.link.pkt.due_us, at,
                             hdr.link.pkt.retx, hdr.link.pkt.flags[7:0]};
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
                    // A controller's clock probe goes back stamped.
                    hdr.clock_stamp.setValid();
                    hdr.clock_stamp.ingress_us = std.ingress_global_timestamp;
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
            queue_pkts.read(hdr.pass.waiting, hdr.link.pkt.queue);
            queue_bytes.read(hdr.pass.waiting_bytes, hdr.link.pkt.queue);
            next_release.read(hdr.pass.next, hdr.link.pkt.dir);
            event_log.apply(hdr.pass.now, hdr.link);
            link_arrival.apply(hdr.pass, hdr.link);
        } else {
            hdr.pass.now = hdr.link.pkt.now_us;
            hdr.pass.l3_len = std.packet_length -
                              (ETH_HEADER_BYTES + hdr.link.pkt.minSizeInBytes());
            hdr.pass.dir_cell = hdr.link.pkt.dir + NUM_DIRECTIONS;
            next_release.read(hdr.pass.next, hdr.link.pkt.dir);
        }

        // A direction with optional features, or a packet of one that
        // defers best effort, reads its parameters. Every event of such a
        // direction offers the link to the head of its deferred best effort,
        // before a new packet can claim it. A deferred packet left over from
        // a profile without deferral settles itself on its own passes.
        // (Features are tested in place: p4c gives a function's result in a
        // condition a temporary of its own. head, tail and settles are 0
        // unless set here: BMv2 zeroes a header made valid.)
        if (hdr.pass.featured || hdr.link.pkt.flags & (PKT_OFFERS | PKT_DEFERRED) != 0) {
            link_params.apply(hdr.link);
            if (hdr.link.params.features & FEATURE_DEFERRED != 0 ||
                hdr.link.pkt.flags & PKT_DEFERRED != 0) {
                defer_head.read(hdr.pass.head, hdr.link.pkt.dir);
                defer_tail.read(hdr.pass.tail, hdr.link.pkt.dir);
                if (hdr.pass.head != hdr.pass.tail) {
                    hdr.feature.setValid();
                    slot_of_head.apply();
                    defer_arrival.read(hdr.feature.arrival, hdr.feature.slot);
                    defer_bytes.read(hdr.feature.bytes, hdr.feature.slot);
                    defer_share_cost.read(hdr.feature.share_cost, hdr.feature.slot);
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
                        defer_seq.write(hdr.feature.slot, hdr.pass.seq);
                        hdr.pass.seq = hdr.pass.seq + 1;
                        next_seq.write(hdr.link.pkt.dir, hdr.pass.seq);
                        defer_start.write(hdr.feature.slot, hdr.feature.start);
                        defer_cost.write(hdr.feature.slot, hdr.feature.cost);
                        defer_pos.write(hdr.feature.slot, hdr.feature.pos_in);
                        hdr.feature.pos_in = hdr.feature.pos_in + hdr.feature.bytes;
                        started_bytes.write(hdr.link.pkt.dir, hdr.feature.pos_in);
                        link_free.write(hdr.link.pkt.dir, hdr.pass.free);
                        class_free.write(hdr.link.pkt.dir, hdr.feature.cap_free);
                        last_leave.write(hdr.link.pkt.dir, hdr.feature.leave_us);
                        hdr.pass.head = hdr.pass.head + 1;
                        defer_head.write(hdr.link.pkt.dir, hdr.pass.head);
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
                        queue_pkts.read(hdr.pass.waiting, hdr.link.pkt.queue);
                        queue_bytes.read(hdr.pass.waiting_bytes, hdr.link.pkt.queue);
                    }
                    queue_params.apply(hdr.link);
                    if (hdr.link.params.aqm == 1) {
                        last_leave.read(hdr.feature.empty_since, hdr.link.pkt.queue);
                        red_avg.read(hdr.feature.aqm.avg, hdr.link.pkt.queue);
                        red_count.read(hdr.feature.aqm.count, hdr.link.pkt.queue);
                        red_target.read(hdr.feature.aqm.target, hdr.link.pkt.queue);
                        random(hdr.feature.rand_aqm, 0, 0xffff);
                        hdr.feature.idle = hdr.pass.now - hdr.feature.empty_since;
                        red.apply(hdr.pass.waiting, hdr.pass.waiting_bytes,
                                  hdr.feature.idle, hdr.feature.rand_aqm, hdr.link,
                                  hdr.feature.aqm, hdr.feature.red, hdr.feature.verdict,
                                  hdr.feature.use_ecn);
                        red_avg.write(hdr.link.pkt.queue, hdr.feature.aqm.avg);
                        red_count.write(hdr.link.pkt.queue, hdr.feature.aqm.count);
                        red_target.write(hdr.link.pkt.queue, hdr.feature.aqm.target);
                        ecn_capable.apply(hdr.ipv4, hdr.ipv6, hdr.feature.capable,
                                          hdr.feature.ect1);
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
                            if (hdr.link.pkt.flags & PKT_LOG != 0) {
                                log_event(EVENT_DROP_AQM, hdr.pass.now);
                            }
                            mark_to_drop(std);
                            hdr.pass.refused = true;
                        }
                    }
                }
                if (!hdr.pass.refused) {
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
                    slot_of_tail.apply();
                    defer_arrival.write(hdr.feature.slot, hdr.pass.now);
                    defer_bytes.write(hdr.feature.slot, hdr.feature.bytes);
                    defer_share_cost.write(hdr.feature.slot, hdr.feature.share_cost);
                    hdr.link.pkt.ticket = hdr.pass.tail;
                    // Its ticket spreads it over the hold ports until it starts.
                    hdr.link.pkt.seq = hdr.pass.tail;
                    hdr.pass.tail = hdr.pass.tail + 1;
                    defer_tail.write(hdr.link.pkt.dir, hdr.pass.tail);
                } else {
                    link_free.write(hdr.link.pkt.dir, hdr.pass.free);
                    class_free.write(hdr.link.pkt.queue, hdr.feature.cap_free);
                    last_leave.write(hdr.link.pkt.queue, hdr.link.pkt.leave_us);
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
                            ecn_mark.apply(hdr);
                            ramp_marks.count(hdr.link.pkt.queue);
                            hdr.link.pkt.flags = hdr.link.pkt.flags | PKT_MARKED;
                        }
                    }
                }
            }
            if (hdr.link.pkt.flags & PKT_QUEUED != 0) {
                hdr.pass.waiting = hdr.pass.waiting + 1;
                queue_pkts.write(hdr.link.pkt.queue, hdr.pass.waiting);
                hdr.pass.waiting_bytes = hdr.pass.waiting_bytes + hdr.pass.l3_len;
                queue_bytes.write(hdr.link.pkt.queue, hdr.pass.waiting_bytes);
                queue_enter.count(hdr.link.pkt.queue);
            }
        } else {
            if (hdr.pass.settles) {
                // Its start was settled: take it, with its place in link order.
                hdr.feature.setValid();
                slot_of_ticket.apply();
                defer_start.read(hdr.feature.start, hdr.feature.slot);
                defer_cost.read(hdr.feature.cost, hdr.feature.slot);
                defer_seq.read(hdr.link.pkt.seq, hdr.feature.slot);
                defer_pos.read(hdr.link.pkt.pos, hdr.feature.slot);
                set_times.apply(hdr.feature.start, hdr.feature.cost, hdr.link);
                hdr.link.pkt.leave_us = hdr.pass.now;   // settled: it has left
                hdr.link.pkt.flags = hdr.link.pkt.flags & ~PKT_DEFERRED;
            }
            // A queued packet leaves the router queue for the link send
            // buffer (or, without one, the link), always on a later pass than
            // its arrival: queue_leave counts held packets only (HELD_CELLS).
            if (hdr.link.pkt.flags & PKT_QUEUED != 0 &&
                hdr.pass.now >= hdr.link.pkt.leave_us) {
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

        // A refused packet (admitted 0) is gone; the rest is the link's.
        if (hdr.link.pkt.flags & PKT_ADMITTED != 0) {
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
            // Release pacing (OUT_PACE), for a held frame released to a port:
            // one that finds OUT_PACE of its direction's held releases still
            // ahead of the port keeps its turn and goes round once more in
            // the turn lane.
            if (std.instance_type == INSTANCE_TYPE_RECIRC &&
                hdr.link.pkt.flags & (PKT_RELEASED | PKT_LOST | PKT_DUPLICATE | PKT_FLOOD) ==
                PKT_RELEASED) {
                out_released.read(hdr.pass.out_no, hdr.link.pkt.dir);
                out_reached.read(hdr.pass.out_seen, hdr.link.pkt.dir);
                out_progress_us.read(hdr.pass.out_progress_us, hdr.link.pkt.dir);
                if (hdr.pass.out_no - hdr.pass.out_seen >= OUT_PACE &&
                    hdr.pass.now < hdr.pass.out_progress_us + OUT_STALL_US) {
                    release_paced.count(hdr.link.pkt.dir);
                    hdr.link.pkt.flags = hdr.link.pkt.flags & ~(PKT_RELEASED | PKT_SKIPPED);
                    next_release.read(hdr.pass.next, hdr.link.pkt.dir);
                    std.egress_spec = turn_port(hdr.link.pkt.seq);
                } else {
                    hdr.pass.out_no = hdr.pass.out_no + 1;
                    out_released.write(hdr.link.pkt.dir, hdr.pass.out_no);
                    if (hdr.pass.now > hdr.pass.out_progress_us) {
                        out_progress_us.write(hdr.link.pkt.dir, hdr.pass.now);
                    }
                }
            }
            next_release.write(hdr.link.pkt.dir, hdr.pass.next);

            if (hdr.link.pkt.flags & PKT_RELEASED == 0) {
                // Sleep until the next event: it leaves the router queue, an
                // error draw, the due instant (never, for a deferred packet:
                // see the fast path), or for a packet waiting for its turn in
                // release order, in the turn lane, the instant it gives up
                // waiting (Release sets it). A paced frame is due, and has its
                // port.
                if (hdr.link.pkt.flags & PKT_TURN != 0) {
                    std.egress_spec = turn_port(hdr.link.pkt.seq);
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
                }
            } else if (hdr.link.pkt.flags & (PKT_SKIPPED | PKT_LOG | PKT_LOST | PKT_DUPLICATE |
                                             PKT_FLOOD) == 0) {
                std.egress_spec = (bit<9>) hdr.link.pkt.dest;   // the common case: one test
            } else {
                if (hdr.link.pkt.flags & PKT_SKIPPED != 0) {
                    release_skips.count(hdr.link.pkt.dir);
                }
                if (hdr.link.pkt.flags & PKT_LOG != 0) {
                    log_clock.read(hdr.pass.clock, 0);
                    if (hdr.pass.clock < hdr.pass.now) {
                        hdr.pass.clock = hdr.pass.now;
                    }
                    if (hdr.link.pkt.flags & PKT_LOST != 0) {
                        log_event(EVENT_DROP_LINK_ERROR, hdr.pass.clock);
                    } else {
                        log_event(EVENT_RELEASED, hdr.pass.clock);
                    }
                }
                if (hdr.link.pkt.flags & PKT_LOST != 0) {
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

control LinkemuIngress(inout headers_t hdr, inout metadata_t meta,
                       inout standard_metadata_t std) {
    LinkPass() link_pass;

    apply {
        // The hold loop's fast path: a held packet with nothing due goes
        // straight round again, on one condition. Most passes end here. A
        // deferred packet sleeps until it heads its ring (then it looks every
        // pass: its passes are events that settle it) or another event
        // settled it; a due packet waiting for its turn in release order
        // sleeps until its turn comes or it gives up waiting. It is here, not
        // in LinkPass, and without a return: p4c turns a return into a flag
        // checked before every statement that follows it, which the fast path
        // would pay on every pass. (No locals here or anywhere in a pass: p4c
        // makes each a metadata field, which BMv2 resets on every pass of
        // every packet.) A held packet's state is valid from its parser on;
        // an arriving packet's only once LinkPass makes it valid: one test,
        // cheaper than the instance type's.
        if (hdr.link.pkt.isValid() &&
            hdr.link.pkt.now_us < hdr.link.pkt.wake_us &&
            hdr.link.pkt.flags & (PKT_DEFERRED | PKT_TURN) == 0) {
            std.egress_spec = hold_port(hdr.link.pkt.seq);
        } else {
            if (hdr.link.pkt.isValid() &&
                hdr.link.pkt.now_us < hdr.link.pkt.wake_us) {
                if (hdr.link.pkt.flags & PKT_DEFERRED != 0) {
                    defer_head.read(hdr.link.pkt.peek, hdr.link.pkt.dir);
                } else {
                    next_release.read(hdr.link.pkt.peek, hdr.link.pkt.dir);
                }
                // Still asleep: its ticket, or its turn (PKT_TURN), has not come.
                if (hdr.link.pkt.flags & PKT_DEFERRED != 0 &&
                    (int<32>) (hdr.link.pkt.ticket - hdr.link.pkt.peek) > 0) {
                    std.egress_spec = hold_port(hdr.link.pkt.seq);
                } else if (hdr.link.pkt.flags & PKT_DEFERRED == 0 &&
                           (int<32>) (hdr.link.pkt.seq - hdr.link.pkt.peek) > 0) {
                    std.egress_spec = turn_port(hdr.link.pkt.seq);
                }
            }
            // Not sent round: a full pass. (Every pass starts with egress_spec
            // 0, a port never attached: a test of one field, where the held
            // state's would be three.)
            if (std.egress_spec == 0) {
                link_pass.apply(hdr, meta, std);
                // One digest call for every event: BMv2 makes a learn list of
                // each call, and P4Runtime configures only one list of a
                // digest's name; another keeps BMv2's defaults and holds its
                // events back for up to 16 samples or a second.
                if (hdr.feature.isValid() && hdr.feature.report) {
                    digest<event_digest_t>(1, {hdr.feature.event.dir ++
                                               hdr.feature.event.outcome ++
                                               hdr.feature.event.seq ++
                                               hdr.feature.event.length ++
                                               hdr.feature.event.arrival_us ++
                                               hdr.feature.event.start_us ++
                                               hdr.feature.event.due_us ++
                                               hdr.feature.event.event_us ++
                                               hdr.feature.event.retx ++
                                               hdr.feature.event.flags});
                }
            }
        }
    }
}

control LinkemuEgress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t std) {
    counter(2 * NUM_DIRECTIONS, CounterType.packets_and_bytes) link_out;   // HELD_CELLS

    apply {
        if (hdr.link.pkt.flags & PKT_LOG != 0) {
            log_clock.write(0, std.egress_global_timestamp);
        }
        if (hdr.link.pkt.flags & PKT_RELEASED != 0) {
            // A flooded frame leaves the link once: its first copy counts
            // (the control plane numbers a group's replicas from 1).
            if (!hdr.clock_stamp.isValid() &&
                (hdr.link.pkt.flags & PKT_FLOOD == 0 || std.egress_rid == 1)) {
                link_out.count(hdr.pass.dir_cell);
                if (hdr.pass.out_no != 0) {   // a held release (OUT_PACE)
                    out_reached.write(hdr.link.pkt.dir, hdr.pass.out_no);
                    out_progress_us.write(hdr.link.pkt.dir, std.egress_global_timestamp);
                }
            }
            hdr.link.pkt.setInvalid();
        } else {
            hdr.link.pkt.now_us = std.egress_global_timestamp;
            recirculate_preserving_field_list(FL_HOLD);
        }
    }
}

control LinkemuDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.clock_stamp);
        pkt.emit(hdr.link.pkt);   // held: its state rides ahead of the frame
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv6);
        pkt.emit(hdr.l4);
    }
}

V1Switch(LinkemuParser(), NoChecksum(), LinkemuIngress(), LinkemuEgress(),
         NoChecksum(), LinkemuDeparser()) main;
