// L4S-style marking on queue sojourn time: an ECT(1) packet is marked CE with
// a probability rising from 0 at half the target sojourn to 1 at the target
// (the AQM study's ramp). The virtual clock knows each packet's sojourn when
// it arrives: its serialization start minus its arrival. The control plane
// precomputes the ramp into a range table.
#ifndef LINKEMU_SOJOURN_RAMP_P4
#define LINKEMU_SOJOURN_RAMP_P4

#include "../headers.p4"

// The control's working values (a header, not locals: see headers.p4).
header sojourn_ramp_work_h {
    bit<32> p_mark;   // Q.16
}

control SojournRamp(in time_us_t sojourn_us, in bit<16> rand, in link_meta_t m,
                    out bool mark) {
    sojourn_ramp_work_h w;

    action mark_with(bit<32> p_q16) {
        w.p_mark = p_q16;
    }

    table sojourn_ramp {
        key = {
            m.pkt.dir  : exact;
            sojourn_us : range;
        }
        actions = { mark_with; }
        const default_action = mark_with(0);   // below half the target: a miss
        size = 128;
    }

    apply {
        w.setValid();
        mark = false;
        if (sojourn_ramp.apply().hit) {
            mark = (bit<32>) rand < w.p_mark;
        }
    }
}

#endif
