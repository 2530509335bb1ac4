// Frame errors on the link, with link-layer retransmission (ARQ).
//
// A frame is drawn once serialization ends, with the error probability of the
// link state current at that instant (written by the control plane as the
// state timeline advances). An errored frame is retransmitted: delayed by
// retx_delay_us and drawn again with the state current then. After max_retx
// failed retransmissions it is lost. Without ARQ (max_retx = 0) an error
// loses the frame at once.
#ifndef LINKEMU_LINK_ERRORS_P4
#define LINKEMU_LINK_ERRORS_P4

#include "../headers.p4"

control LinkErrors(in bit<16> rand, inout link_meta_t m, out bit<2> outcome) {
    bit<32> error_threshold = 0;   // P(error) x 65536

    action set_error(bit<32> threshold) {
        error_threshold = threshold;
    }

    table link_state {
        key = { m.dir : exact; }
        actions = { set_error; @defaultonly NoAction; }
        const default_action = NoAction;
        size = 2;
    }

    apply {
        link_state.apply();
        if ((bit<32>) rand >= error_threshold) {
            outcome = DRAW_THROUGH;
            m.link_done = 1;
        } else if (m.retx < m.params.max_retx) {
            outcome = DRAW_RETRANSMIT;
            m.retx = m.retx + 1;
            m.attempt_us = m.attempt_us + m.params.retx_delay_us;
            m.due_us = m.due_us + m.params.retx_delay_us;
        } else {
            outcome = DRAW_LOST;
            m.lost = 1;
            m.link_done = 1;
        }
    }
}

#endif
