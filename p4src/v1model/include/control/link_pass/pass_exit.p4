// PassExit, a pass's last phase (LinkPass): a flow-queued packet sleeps
// until it could start; an admitted one draws its link errors (ARQ), takes
// its turn in release order, and sleeps in the hold until its next event or
// leaves: to its far end, or dropped, with its event.
#ifndef LINKEMU_PASS_EXIT_P4
#define LINKEMU_PASS_EXIT_P4

#include "../../../../include/control/link_errors.p4"
#include "../../../../include/control/release.p4"
#include "../../headers.p4"
#include "../../define_v1model.p4"
#include "../hold.p4"
#include "../release_pacing.p4"
#include "../release_departure.p4"
#include "../event_report.p4"

control PassExit(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t std)
                (register<time_us_t> retx_busy_until, register<bit<32>> block_from,
                 counter drop_codel, counter drop_blue) {
    @brief("dropped: link error (after ARQ, if any)")
    counter(2 * NUM_DIRECTIONS, CounterType.packets_and_bytes) drop_link_error; // HELD_CELLS
    @brief("ARQ retransmission attempts")
    counter(NUM_DIRECTIONS, CounterType.packets) retransmissions;
    @brief("packets delayed by ARQ")
    counter(NUM_DIRECTIONS, CounterType.packets) arq_delayed;
    @brief("packets held behind a retransmission (in-order release)")
    counter(NUM_DIRECTIONS, CounterType.packets) held_behind;
    @brief("packets released before an earlier one of their direction")
    counter(NUM_DIRECTIONS, CounterType.packets) release_skips;
    @brief("packets released twice (duplicate; link_out counts both)")
    counter(NUM_DIRECTIONS, CounterType.packets) duplicated;

    LinkErrors() link_errors;
    Release() release;
    ReleasePacing() release_pacing;
    ReleaseDeparture() release_departure;
    TurnWait() turn_wait;
    LogClockRead() log_clock_read;

    LOG_EVENT_ACTION

    apply {
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
            if (hdr.link.pkt.flags & (PKT_TIMED | PKT_RELEASED | PKT_AHEAD) ==
                (PKT_TIMED | PKT_RELEASED)) {
                release_departure.apply(hdr, meta);
            }
            release_pacing.apply(hdr, meta, std);   // and the direction's next release

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
