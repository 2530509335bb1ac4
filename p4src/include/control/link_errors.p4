// Frame errors on the link, with link-layer retransmission (ARQ).
//
// A frame is drawn once serialization ends, with the error probability of the
// link state current at that instant (the control plane writes each change of
// the state timeline ahead of it, with its instant on the switch's clock). An
// errored frame is retransmitted: delayed by retx_delay_us and drawn again
// with the state current then. After max_retx failed retransmissions it is
// lost. Without ARQ (max_retx = 0) an error loses the frame at once. A
// direction whose link states never err (FEATURE_LINK_ERRORS off) draws
// nothing: LinkClock marks its frames through the link on arrival.
#ifndef LINKEMU_LINK_ERRORS_P4
#define LINKEMU_LINK_ERRORS_P4

#include "../headers.p4"

control LinkErrors(in bit<16> rand, inout link_meta_t m, out bit<2> outcome) {

    // The current state's error probability, and from change_us on the next
    // state's: the controller writes a change ahead of its instant, so the
    // data plane changes state on time whatever a write's latency. Drawn in
    // the action, with its parameters in place (see headers.p4).
    action set_error(bit<32> threshold, bit<32> next, time_us_t at) {
        outcome = (bit<32>) rand < (m.pkt.attempt_us >= at ? next : threshold) ?
                  DRAW_RETRANSMIT : DRAW_THROUGH;
    }

    table link_state {
        key = { m.pkt.dir : exact; }
        actions = { set_error; }
        const default_action = set_error(0, 0, 0);
        size = 2;
    }

    apply {
        link_state.apply();   // an error is a retransmission until ARQ gives up
        if (outcome == DRAW_THROUGH) {
            m.pkt.flags = m.pkt.flags | PKT_LINK_DONE;
        } else if (m.pkt.retx < m.params.max_retx) {
            m.pkt.retx = m.pkt.retx + 1;
            m.pkt.attempt_us = m.pkt.attempt_us + m.params.retx_delay_us;
            m.pkt.due_us = m.pkt.due_us + m.params.retx_delay_us;
        } else {
            outcome = DRAW_LOST;
            m.pkt.flags = m.pkt.flags | (PKT_LOST | PKT_LINK_DONE);
        }
    }
}

#endif
