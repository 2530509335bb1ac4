// Frame errors on the link, with link-layer retransmission (ARQ).
//
// A frame is drawn once serialization ends, with the error probability of the
// link state current at that instant (the control plane writes each change of
// the state timeline ahead of it, with its instant on the switch's clock). An
// errored frame is retransmitted: delayed by retx_delay_us and drawn again
// with the state current then. After max_retx failed retransmissions it is
// lost. Without ARQ (max_retx = 0) an error loses the frame at once.
#ifndef LINKEMU_LINK_ERRORS_P4
#define LINKEMU_LINK_ERRORS_P4

#include "../headers.p4"

// The control's working values (a header, not locals: see headers.p4).
header link_errors_work_h {
    bit<32>   threshold;        // P(error) x 65536
    bit<32>   next_threshold;
    time_us_t change_us;
}

control LinkErrors(in bit<16> rand, inout link_meta_t m, out bit<2> outcome) {
    link_errors_work_h w;

    // The current state's error probability, and from change_us on the next
    // state's: the controller writes a change ahead of its instant, so the
    // data plane changes state on time whatever a write's latency.
    action set_error(bit<32> threshold, bit<32> next, time_us_t at) {
        w.threshold = threshold;
        w.next_threshold = next;
        w.change_us = at;
    }

    table link_state {
        key = { m.pkt.dir : exact; }
        actions = { set_error; }
        const default_action = set_error(0, 0, 0);
        size = 2;
    }

    apply {
        w.setValid();
        link_state.apply();
        if (m.pkt.attempt_us >= w.change_us) {
            w.threshold = w.next_threshold;
        }
        if ((bit<32>) rand >= w.threshold) {
            outcome = DRAW_THROUGH;
            m.pkt.link_done = 1;
        } else if (m.pkt.retx < m.params.max_retx) {
            outcome = DRAW_RETRANSMIT;
            m.pkt.retx = m.pkt.retx + 1;
            m.pkt.attempt_us = m.pkt.attempt_us + m.params.retx_delay_us;
            m.pkt.due_us = m.pkt.due_us + m.params.retx_delay_us;
        } else {
            outcome = DRAW_LOST;
            m.pkt.lost = 1;
            m.pkt.link_done = 1;
        }
    }
}

#endif
