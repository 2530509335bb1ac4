// Per-packet delay variation: jitter and random delay spikes.
//
// Jitter has no arithmetic here: the control plane loads the delay's inverse
// CDF as 1024 delays per direction (NetEm's distributions, or the user's
// table), and a packet takes the one a random index picks. A spike adds its
// length with its probability. Both replace the direction's fixed delay for
// this packet only; release order (Release) keeps packets in order unless
// the profile lets jitter reorder them.
#ifndef LINKEMU_DELAY_VARIATION_P4
#define LINKEMU_DELAY_VARIATION_P4

#include "../headers.p4"

control DelayVariation(in bit<10> rand_index, in bit<16> rand_spike, inout link_meta_t m) {

    action set_delay(time_us_t delay_us) {
        m.params.delay_us = delay_us;
    }

    table jitter {
        key = {
            m.pkt.dir  : exact @name("dir");
            rand_index : exact;
        }
        actions = { set_delay; @defaultonly NoAction; }
        const default_action = NoAction;
        size = JITTER_SIZE;
    }

    // A spike: rand_spike in a range the control plane sets, its
    // probability, adds the spike's length. The draw is the table's key, not
    // a comparison in the action, which Tofino's actions cannot make.
    action add_spike(time_us_t length_us) {
        m.params.delay_us = m.params.delay_us + length_us;
    }

    table delay_spikes {
        key = {
            m.pkt.dir  : exact @name("dir");
            rand_spike : range;
        }
        actions = { add_spike; @defaultonly NoAction; }
        const default_action = NoAction;
        size = NUM_DIRECTIONS;
    }

    apply {
        jitter.apply();
        delay_spikes.apply();
    }
}

#endif
