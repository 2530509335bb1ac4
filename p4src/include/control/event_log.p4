// Whether a direction logs a packet's fate (the controller inserts an entry
// to turn it on): every packet, or a sample drawn on `rand` (a busy link's
// log would add to the load it measures). Looked up once per packet, on
// arrival; the packet carries the answer, so with the log off a held
// packet's passes pay nothing. The link state comes in zeroed: PKT_LOG is 0
// unless it logs.
#ifndef LINKEMU_EVENT_LOG_P4
#define LINKEMU_EVENT_LOG_P4

#include "../headers.p4"

control EventLog(in time_us_t arrival_us, in bit<16> rand, inout link_meta_t m) {

    // A packet logs when its draw is in the entry's range, [skip, 0xffff]
    // for a sample of (65536 - skip) / 65536: the draw is the table's key,
    // not a comparison in the action, which Tofino's actions cannot make.
    action log_events() {
        m.pkt.flags = m.pkt.flags | PKT_LOG;
        m.pkt.arrival_us = arrival_us;
    }

    table event_log {
        key = {
            m.pkt.dir : exact @name("dir");
            rand      : range;
        }
        actions = { log_events; @defaultonly NoAction; }
        const default_action = NoAction;
        size = NUM_DIRECTIONS;
    }

    apply {
        event_log.apply();
    }
}

#endif
