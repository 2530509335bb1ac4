// Frame errors on the link, with link-layer retransmission (ARQ).
//
// A frame is drawn once serialization ends, with the error probability of the
// link state current at that instant (the control plane writes each change of
// the state timeline ahead of it, with its instant on the switch's clock). An
// errored frame is retransmitted: delayed by retx_delay_us and drawn again
// with the state current then. After max_retx failed retransmissions it is
// lost. Without ARQ (max_retx = 0) an error loses the frame at once. A
// direction whose link states never err (FEATURE_LINK_ERRORS off) draws
// nothing: its arrival marks its frames through the link (link_clock.p4).
#ifndef LINKEMU_LINK_ERRORS_P4
#define LINKEMU_LINK_ERRORS_P4

#include "../headers.p4"

// A frame through the link leaves with PKT_LINK_DONE; one that is lost with
// PKT_LOST too; one that is retransmitted with neither, and its attempt and
// due instants one retransmission delay later.
control LinkErrors(in bit<16> rand, inout link_meta_t m) {

    // The current state's error probability, and from change_us on the next
    // state's: the controller writes a change ahead of its instant, so the
    // data plane changes state on time whatever a write's latency. Drawn in
    // the action, with its parameters in place (docs/bmv2-costs.md).
    action set_error(bit<32> threshold, bit<32> next, time_us_t at) {
        m.pkt.flags = m.pkt.flags |
                      ((bit<32>) rand < (m.pkt.attempt_us >= at ? next : threshold) ?
                       0 : PKT_LINK_DONE);
    }

    table link_state {
        key = { m.pkt.dir : exact @name("dir"); }
        actions = { set_error; }
        const default_action = set_error(0, 0, 0);
        size = NUM_DIRECTIONS;
    }

    // An errored frame: retransmitted while ARQ has attempts left, else lost.
    // Decided in the action, with its parameters in place.
    action retransmit(bit<8> max_retx, time_us_t retx_delay_us) {
        bool again = m.pkt.retx < max_retx;
        m.pkt.attempt_us = again ? m.pkt.attempt_us + retx_delay_us : m.pkt.attempt_us;
        m.pkt.due_us = again ? m.pkt.due_us + retx_delay_us : m.pkt.due_us;
        m.pkt.flags = again ? m.pkt.flags : m.pkt.flags | (PKT_LOST | PKT_LINK_DONE);
        m.pkt.retx = again ? m.pkt.retx + 1 : m.pkt.retx;   // last: again reads it
    }

    // Without an entry there is no ARQ: an errored frame is lost at once.
    table arq {
        key = { m.pkt.dir : exact @name("dir"); }
        actions = { retransmit; }
        const default_action = retransmit(0, 0);
        size = NUM_DIRECTIONS;
    }

    apply {
        link_state.apply();
        if (m.pkt.flags & PKT_LINK_DONE == 0) {
            arq.apply();
        }
    }
}

#endif
