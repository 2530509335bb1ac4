// Per-packet loss independent of the link states, as NetEm's: Gilbert-Elliott
// with NetEm's parameters (p: good->bad, r: bad->good, 1-h: loss when bad,
// 1-k: loss when good) and Bernoulli as its one-state case. Like NetEm, the
// state moves first and the loss is drawn with the state the packet found.
// Thresholds are probabilities x 65536; without an entry nothing is lost.
#ifndef LINKEMU_LOSS_MODEL_P4
#define LINKEMU_LOSS_MODEL_P4

#include "../headers.p4"

control LossModel(in bit<16> rand_move, in bit<16> rand_loss, in bit<1> bad,
                  inout link_meta_t m, out bit<1> new_bad, out bool lost) {

    // The state moves, then the loss is drawn, in the action, with its
    // parameters in place (docs/bmv2-costs.md).
    action draw(bit<32> p_move, bit<32> p_loss) {
        new_bad = (bit<32>) rand_move < p_move ? ~bad : bad;
        lost = (bit<32>) rand_loss < p_loss;
    }

    action set_good(bit<32> to_bad, bit<32> loss) {
        draw(to_bad, loss);
    }

    action set_bad(bit<32> to_good, bit<32> loss) {
        draw(to_good, loss);
    }

    table loss_model {
        key = {
            m.pkt.dir : exact @name("dir");
            bad       : exact;
        }
        actions = { set_good; set_bad; }
        const default_action = set_good(0, 0);   // no loss model: a miss
        size = 2 * NUM_DIRECTIONS;   // good and bad
    }

    apply {
        loss_model.apply();
    }
}

#endif
