// L4S-style marking on queue sojourn time: an ECT(1) packet is marked CE with
// a probability rising from 0 at half the target sojourn to 1 at the target
// (the AQM study's ramp). The virtual clock knows each packet's sojourn when
// it arrives: its serialization start minus its arrival. The control plane
// precomputes the ramp into a range table.
#ifndef LINKEMU_SOJOURN_RAMP_P4
#define LINKEMU_SOJOURN_RAMP_P4

#include "../headers.p4"

control SojournRamp(in time_us_t sojourn_us, in bit<16> rand, in link_meta_t m,
                    out bool mark) {

    // Drawn in the action, with its parameters in place (docs/bmv2-costs.md).
    action mark_with(bit<32> p_q16) {
        mark = (bit<32>) rand < p_q16;
    }

    table sojourn_ramp {
        key = {
            m.pkt.dir  : exact @name("dir");
            sojourn_us : range;
        }
        actions = { mark_with; }
        const default_action = mark_with(0);   // below half the target: a miss
        size = SOJOURN_RAMP_SIZE;
    }

    apply {
        sojourn_ramp.apply();
    }
}

#endif
