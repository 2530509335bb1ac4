// The profile of a direction with optional features, as written by the
// control plane: read by such a direction's arrival, and by the passes of a
// packet its direction defers (best_effort.p4). A plain direction's arrival
// takes its parameters in place (LinkArrival, link_clock.p4).
#ifndef LINKEMU_LINK_PARAMS_P4
#define LINKEMU_LINK_PARAMS_P4

#include "../headers.p4"

control LinkParams(inout link_meta_t m) {

    action set_params(bit<48> byte_cost_q, bit<32> overhead_bytes, time_us_t delay_us,
                      features_t features, bit<1> down, bit<32> send_buffer,
                      time_us_t buffer_hold_us) {
        m.params.setValid();
        m.params.byte_cost_q = byte_cost_q;
        m.params.overhead_bytes = overhead_bytes;
        m.params.delay_us = delay_us;
        m.params.features = features;
        m.params.down = down;
        m.params.send_buffer = send_buffer;
        m.params.buffer_hold_us = buffer_hold_us;
    }

    // Without an entry a direction is an ideal wire: no rate limit, no delay
    // (setValid zeroes the header).
    action ideal() {
        m.params.setValid();
    }

    table link_params {
        key = { m.pkt.dir : exact @name("dir"); }
        actions = { set_params; @defaultonly ideal; }
        const default_action = ideal;
        size = NUM_DIRECTIONS;
    }

    // The header is made valid in the actions: alone before the table, it
    // would be a table of its own, which BMv2 charges on every full pass.
    apply {
        link_params.apply();
    }
}

#endif
