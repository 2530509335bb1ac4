// linkemu on BMv2 simple_switch (v1model): the only architecture-specific
// file. It owns the state (registers), the counters and the hold loop; the
// link model itself lives in the architecture-neutral controls it applies.
//
// Hold loop: a packet that is not yet due is sent to one of 16 interface-less
// hold ports and recirculated at the end of egress, carrying the egress clock
// in its field list. Ingress decides on every pass, so all link state is
// touched by BMv2's single ingress thread only; a pass with nothing due (the
// packet's wake_us is ahead) costs one comparison. The hold ports spread the
// held packets over 16 egress queues because each holds 64 packets and
// simple_switch_grpc has no Thrift server to deepen it (16 x 64 matches the
// 1024-packet recirculation queue); they are all = 0 mod 4, so one BMv2
// egress worker serves them all, which keeps the loop on two threads.
#include <core.p4>
#include <v1model.p4>

#include "../include/defines.p4"
#include "../include/headers.p4"
#include "../include/control/port_map.p4"
#include "../include/control/link_params.p4"
#include "../include/control/link_clock.p4"
#include "../include/control/router_queue.p4"
#include "../include/control/release.p4"
#include "../include/control/link_errors.p4"
#include "../include/control/loss_model.p4"
#include "../include/control/red.p4"
#include "../include/control/ecn_mark.p4"
#include "../include/control/sojourn_ramp.p4"

const bit<32> INSTANCE_TYPE_RECIRC = 4;
const bit<9>  HOLD_PORT_BASE = 448;   // 448, 452, .. 508: never attach these
const bit<9>  HOLD_PORT_MASK = 15;    // 16 hold ports, chosen by sequence number
const bit<8>  FL_HOLD = 1;            // @field_list(1) in link_meta_t

// The emulated link carries the L3 packet; the Ethernet header is Mininet's.
bit<32> l3_length(in bit<32> frame_len) {
    return frame_len > ETH_HEADER_BYTES ? frame_len - ETH_HEADER_BYTES : 0;
}

parser LinkemuParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t std) {
    state start {
        // A held packet was parsed on its first pass; later passes only read
        // its metadata, which keeps each pass of the hold loop cheap.
        transition select(std.instance_type) {
            INSTANCE_TYPE_RECIRC : accept;
            default              : parse_ethernet;
        }
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
        transition accept;
    }
    state parse_ipv6 {
        pkt.extract(hdr.ipv6);
        transition accept;
    }
}

control NoChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control LinkemuIngress(inout headers_t hdr, inout metadata_t meta,
                       inout standard_metadata_t std) {
    register<time_q_t>(NUM_DIRECTIONS) link_free;
    register<bit<32>>(NUM_DIRECTIONS) queue_pkts;
    register<seq_t>(NUM_DIRECTIONS) next_seq;
    register<seq_t>(NUM_DIRECTIONS) next_release;
    register<time_us_t>(NUM_DIRECTIONS) retx_busy_until;  // last ARQ due so far
    register<bit<1>>(NUM_DIRECTIONS) loss_bad;            // Gilbert-Elliott state
    register<bit<32>>(NUM_DIRECTIONS) queue_bytes;        // L3 bytes waiting
    register<time_us_t>(NUM_DIRECTIONS) last_start;       // the queue is empty since
    register<bit<64>>(NUM_DIRECTIONS) red_avg;
    register<bit<32>>(NUM_DIRECTIONS) red_count;
    register<bit<32>>(NUM_DIRECTIONS) red_target;

    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) link_in;
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) drop_queue;
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) drop_aqm;
    counter(NUM_DIRECTIONS, CounterType.packets) drop_aqm_ect;
    counter(NUM_DIRECTIONS, CounterType.packets) ecn_marks;
    counter(NUM_DIRECTIONS, CounterType.packets) ramp_marks;
    // The router queue over time: the controller samples both counters, and
    // their difference is the queue (frames; bytes as captured).
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) queue_enter;
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) queue_leave;
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) drop_link_error;
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) drop_loss_model;
    counter(NUM_DIRECTIONS, CounterType.packets) drop_malformed;
    counter(NUM_DIRECTIONS, CounterType.packets) retransmissions;
    counter(NUM_DIRECTIONS, CounterType.packets) arq_delayed;
    counter(NUM_DIRECTIONS, CounterType.packets) held_behind;
    counter(NUM_DIRECTIONS, CounterType.packets) release_skips;

    PortMap() port_map;
    LinkParams() link_params;
    LinkClock() link_clock;
    RouterQueueLeave() router_queue_leave;
    Release() release;
    LinkErrors() link_errors;
    LossModel() loss_model;
    Red() red;
    EcnCapable() ecn_capable;
    EcnMark() ecn_mark;
    SojournRamp() sojourn_ramp;

    apply {
        bool fresh = std.instance_type != INSTANCE_TYPE_RECIRC;
        // The hold loop's fast path: a held packet with nothing due goes
        // straight round again. Most passes end here.
        if (!fresh && meta.link.now_us < meta.link.wake_us) {
            std.egress_spec = HOLD_PORT_BASE + (((bit<9>) meta.link.seq & HOLD_PORT_MASK) << 2);
            return;
        }
        if (fresh) {
            bool known;
            port_map.apply(std.ingress_port, hdr, meta.link, known);
            if (!known) {
                mark_to_drop(std);
                return;
            }
        }
        bit<32> dir = (bit<32>) meta.link.dir;
        if (fresh && !hdr.ethernet.isValid()) {
            drop_malformed.count(dir);
            mark_to_drop(std);
            return;
        }
        link_params.apply(meta.link);

        // "Now": arrival for a new packet, the last egress pass for a held one
        // (a recirculated packet keeps a stale ingress timestamp).
        time_us_t now = meta.link.now_us;
        if (fresh) {
            now = std.ingress_global_timestamp;
            link_in.count(dir);

            bit<1> bad;
            bit<1> new_bad;
            bit<16> rand_move;
            bit<16> rand_loss;
            bool lost;
            loss_bad.read(bad, dir);
            random(rand_move, 0, 0xffff);
            random(rand_loss, 0, 0xffff);
            loss_model.apply(rand_move, rand_loss, bad, meta.link, new_bad, lost);
            loss_bad.write(dir, new_bad);
            if (lost) {
                drop_loss_model.count(dir);
                mark_to_drop(std);
                return;
            }

            bit<32> l3_len = l3_length(std.packet_length);
            bit<32> waiting;
            bit<32> waiting_bytes;
            time_us_t empty_since;
            queue_pkts.read(waiting, dir);
            queue_bytes.read(waiting_bytes, dir);
            last_start.read(empty_since, dir);

            red_state_t aqm;
            bit<16> rand_aqm;
            bit<2> verdict;
            bool use_ecn;
            red_avg.read(aqm.avg, dir);
            red_count.read(aqm.count, dir);
            red_target.read(aqm.target, dir);
            random(rand_aqm, 0, 0xffff);
            red.apply(waiting, waiting_bytes, now - empty_since, rand_aqm, meta.link, aqm,
                      verdict, use_ecn);
            red_avg.write(dir, aqm.avg);
            red_count.write(dir, aqm.count);
            red_target.write(dir, aqm.target);
            bool capable;
            bool ect1;
            ecn_capable.apply(hdr, capable, ect1);
            if (verdict == AQM_SIGNAL && use_ecn && capable) {
                ecn_mark.apply(hdr);
                ecn_marks.count(dir);
            } else if (verdict != AQM_PASS) {
                drop_aqm.count(dir);
                if (capable) {
                    drop_aqm_ect.count(dir);
                }
                mark_to_drop(std);
                return;
            }

            time_q_t free;
            time_q_t new_free;
            link_free.read(free, dir);
            link_clock.apply(now, l3_len, free, waiting, waiting_bytes, meta.link, new_free);
            if (meta.link.admitted == 0) {
                drop_queue.count(dir);
                mark_to_drop(std);
                return;
            }
            link_free.write(dir, new_free);
            last_start.write(dir, meta.link.start_us);
            bit<16> rand_ramp;
            bool ramp_mark;
            random(rand_ramp, 0, 0xffff);
            sojourn_ramp.apply(meta.link.start_us - now, rand_ramp, meta.link, ramp_mark);
            if (ramp_mark && ect1) {
                ecn_mark.apply(hdr);
                ramp_marks.count(dir);
            }
            if (meta.link.queued == 1) {
                queue_pkts.write(dir, waiting + 1);
                queue_bytes.write(dir, waiting_bytes + l3_len);
                queue_enter.count(dir);
            }
            seq_t seq;
            next_seq.read(seq, dir);
            meta.link.seq = seq;
            next_seq.write(dir, seq + 1);
        }

        bool left;
        router_queue_leave.apply(now, meta.link, left);
        if (left) {
            bit<32> waiting;
            bit<32> waiting_bytes;
            queue_pkts.read(waiting, dir);
            queue_pkts.write(dir, waiting - 1);
            queue_bytes.read(waiting_bytes, dir);
            queue_bytes.write(dir, waiting_bytes - l3_length(std.packet_length));
            queue_leave.count(dir);
        }

        time_us_t busy_until;
        retx_busy_until.read(busy_until, dir);
        if (meta.link.link_done == 0 && now >= meta.link.attempt_us) {
            bit<16> rand;
            bit<2> outcome;
            random(rand, 0, 0xffff);
            link_errors.apply(rand, meta.link, outcome);
            if (outcome == DRAW_RETRANSMIT) {
                retransmissions.count(dir);
                if (meta.link.retx == 1) {
                    arq_delayed.count(dir);
                }
                if (meta.link.due_us > busy_until) {
                    retx_busy_until.write(dir, meta.link.due_us);
                }
            }
        }

        seq_t next;
        seq_t new_next;
        bool skipped;
        bool blocked;
        next_release.read(next, dir);
        release.apply(now, next, meta.link, new_next, skipped, blocked);
        next_release.write(dir, new_next);
        if (skipped) {
            release_skips.count(dir);
        }
        if (blocked && meta.link.hol == 0 && meta.link.due_us < busy_until) {
            held_behind.count(dir);
            meta.link.hol = 1;
        }

        if (meta.link.released == 1 && meta.link.lost == 1) {
            drop_link_error.count(dir);
            mark_to_drop(std);
        } else if (meta.link.released == 0) {
            std.egress_spec = HOLD_PORT_BASE + (((bit<9>) meta.link.seq & HOLD_PORT_MASK) << 2);
            // Sleep until the next event: serialization starts, an error draw,
            // the due instant. A packet waiting for its turn looks every pass.
            time_us_t wake = meta.link.due_us;
            if (meta.link.link_done == 0 && meta.link.attempt_us < wake) {
                wake = meta.link.attempt_us;
            }
            if (meta.link.queued == 1 && meta.link.start_us < wake) {
                wake = meta.link.start_us;
            }
            meta.link.wake_us = blocked ? 0 : wake;
        } else if (meta.link.out_port != 0) {
            std.egress_spec = meta.link.out_port;
        } else {
            std.mcast_grp = meta.link.flood_grp;
        }
    }
}

control LinkemuEgress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t std) {
    counter(NUM_DIRECTIONS, CounterType.packets_and_bytes) link_out;

    apply {
        if (meta.link.released == 1) {
            link_out.count((bit<32>) meta.link.dir);
        } else {
            meta.link.now_us = std.egress_global_timestamp;
            recirculate_preserving_field_list(FL_HOLD);
        }
    }
}

control LinkemuDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv6);
    }
}

V1Switch(LinkemuParser(), NoChecksum(), LinkemuIngress(), LinkemuEgress(),
         NoChecksum(), LinkemuDeparser()) main;
