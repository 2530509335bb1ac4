// linkemu on BMv2 simple_switch (v1model): the pipeline's wiring. The link
// model lives in the architecture-neutral controls of p4src/include/control;
// the v1model glue, each part with its own registers and counters, in
// include/control: the hold loop (hold.p4), one pass through the link model
// (link_pass.p4), the router queues' state (queue_state.p4), deferred best
// effort (deferred_ring.p4), release pacing (release_pacing.p4), the
// departure instant of a released frame (release_departure.p4) and the
// event log's report (event_report.p4). Sizes are in p4src/include/size.p4.
#include <core.p4>
#include <v1model.p4>

#include "include/parser.p4"
#include "include/control/hold.p4"
#include "include/control/link_pass.p4"
#include "include/control/release_pacing.p4"
#include "include/control/event_report.p4"

// No checksum to verify or update: frames keep theirs (EcnMark updates
// IPv4's incrementally).
control NoChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control LinkemuIngress(inout headers_t hdr, inout metadata_t meta,
                       inout standard_metadata_t std) {
    HoldWait() hold_wait;
    LinkPass() link_pass;
    EventDigest() event_digest;

    apply {
        // The hold loop's fast path (hold.p4): a held packet with nothing
        // due goes straight round again, on one condition; most passes end
        // here. A held packet's state is valid from its parser on, an
        // arriving packet's only once LinkPass makes it valid: one test,
        // cheaper than the instance type's. Every other pass is a full one
        // unless it still waits (every pass starts with egress_spec 0, a
        // port never attached).
        if (hdr.link.pkt.isValid() &&
            hdr.link.pkt.now_us < hdr.link.pkt.wake_us &&
            hdr.link.pkt.flags & (PKT_DEFERRED | PKT_TURN) == 0) {
            std.egress_spec = hold_port(hdr.link.pkt.seq);
            meta.depart_us = hdr.link.pkt.wake_us;
        } else {
            hold_wait.apply(hdr, meta, std);
            if (std.egress_spec == 0) {
                link_pass.apply(hdr, meta, std);
                event_digest.apply(hdr);
            }
        }
    }
}

control LinkemuEgress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t std) {
    @brief("packets delivered at the far end (a flooded one once)")
    counter(2 * NUM_DIRECTIONS, CounterType.packets_and_bytes) link_out;   // HELD_CELLS
    LogClockStamp() log_clock_stamp;
    ReleaseReached() release_reached;
    HoldRecirculate() hold_recirculate;

    apply {
        log_clock_stamp.apply(hdr, std);
        if (hdr.link.pkt.flags & PKT_RELEASED != 0) {
            // A flooded frame leaves the link once: its first copy counts
            // (the control plane numbers a group's replicas from 1).
            if (!hdr.clock_stamp.isValid() &&
                (hdr.link.pkt.flags & PKT_FLOOD == 0 || std.egress_rid == 1)) {
                link_out.count(hdr.pass.dir_cell);
                release_reached.apply(hdr, std);
            }
            hdr.link.pkt.setInvalid();
        } else {
            hold_recirculate.apply(hdr, std);
        }
    }
}

V1Switch(LinkemuParser(), NoChecksum(), LinkemuIngress(), LinkemuEgress(),
         NoChecksum(), LinkemuDeparser()) main;
