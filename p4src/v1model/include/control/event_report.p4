// The event log's glue: a logged packet's one event (EventLog decides which
// directions log; log_event records it) goes to the controller in a digest,
// with the instant it happened.
#ifndef LINKEMU_EVENT_REPORT_P4
#define LINKEMU_EVENT_REPORT_P4

#include "../headers.p4"

// The latest egress pass of a logged packet: "now" for a held packet's
// event, fresher than its own last pass.
register<time_us_t>(1) log_clock;

// The packet's one event, when its direction logs: EventDigest reports it
// after the pass. Each control that logs declares the action
// (LOG_EVENT_ACTION): one outside a control would take the headers as an
// argument, which p4c copies in and out, header by header.
#define LOG_EVENT_ACTION \
    action log_event(bit<8> outcome, time_us_t at) { \
        hdr.feature.setValid(); \
        hdr.feature.report = true; \
        hdr.feature.event = {hdr.link.pkt.dir, outcome, hdr.link.pkt.seq, \
                             (bit<16>) hdr.pass.l3_len, hdr.link.pkt.arrival_us, \
                             hdr.link.pkt.start_us, hdr.link.pkt.due_us, at, \
                             hdr.link.pkt.retx, hdr.link.pkt.flags[7:0]}; \
    }

// hdr.pass.clock: the later of the log clock and the pass's own "now".
control LogClockRead(inout headers_t hdr) {
    apply {
        log_clock.read(hdr.pass.clock, 0);
        if (hdr.pass.clock < hdr.pass.now) {
            hdr.pass.clock = hdr.pass.now;
        }
    }
}

control LogClockStamp(inout headers_t hdr, inout standard_metadata_t std) {
    apply {
        if (hdr.link.pkt.flags & PKT_LOG != 0) {
            log_clock.write(0, std.egress_global_timestamp);
        }
    }
}

// One digest call for every event: BMv2 makes a learn list of each call, and
// P4Runtime configures only one list of a digest's name; another keeps
// BMv2's defaults and holds its events back for up to 16 samples or a second.
control EventDigest(inout headers_t hdr) {
    apply {
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

#endif
