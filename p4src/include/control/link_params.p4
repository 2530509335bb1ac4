// The profile of one direction, as written by the control plane.
#ifndef LINKEMU_LINK_PARAMS_P4
#define LINKEMU_LINK_PARAMS_P4

#include "../headers.p4"

control LinkParams(inout link_meta_t m) {

    action set_params(bit<48> byte_cost_q, bit<32> overhead_bytes,
                      time_us_t delay_us, time_us_t stall_us,
                      time_us_t retx_delay_us, bit<8> max_retx,
                      features_t features, bit<1> down) {
        m.params.setValid();
        m.params.byte_cost_q = byte_cost_q;
        m.params.overhead_bytes = overhead_bytes;
        m.params.delay_us = delay_us;
        m.params.stall_us = stall_us;
        m.params.retx_delay_us = retx_delay_us;
        m.params.max_retx = max_retx;
        m.params.features = features;
        m.params.down = down;
    }

    // Without an entry a direction is an ideal wire: no rate limit, no delay.
    action ideal() {
        m.params.setValid();
        m.params.byte_cost_q = 0;
        m.params.overhead_bytes = 0;
        m.params.delay_us = 0;
        m.params.stall_us = 0;
        m.params.retx_delay_us = 0;
        m.params.max_retx = 0;
        m.params.features = 0;
        m.params.down = 0;
    }

    table link_params {
        key = { m.pkt.dir : exact; }
        actions = { set_params; @defaultonly ideal; }
        const default_action = ideal;
        size = 2;
    }

    // The header is made valid in the actions: alone before the table, it
    // would be a table of its own, which BMv2 charges on every full pass.
    apply {
        link_params.apply();
    }
}

#endif
