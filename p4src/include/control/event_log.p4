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

    // skip_q16: the share of packets not logged, of 65536.
    action log_events(bit<16> skip_q16) {
        m.pkt.flags = m.pkt.flags | (rand >= skip_q16 ? PKT_LOG : 0);
        m.pkt.arrival_us = arrival_us;
    }

    table event_log {
        key = { m.pkt.dir : exact @name("dir"); }
        actions = { log_events; @defaultonly NoAction; }
        const default_action = NoAction;
        size = NUM_DIRECTIONS;
    }

    apply {
        event_log.apply();
    }
}

#endif
