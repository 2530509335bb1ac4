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
    bit<32> p_move = 0;
    bit<32> p_loss = 0;

    action set_good(bit<32> to_bad, bit<32> loss) {
        p_move = to_bad;
        p_loss = loss;
    }

    action set_bad(bit<32> to_good, bit<32> loss) {
        p_move = to_good;
        p_loss = loss;
    }

    table loss_model {
        key = {
            m.dir : exact;
            bad   : exact;
        }
        actions = { set_good; set_bad; @defaultonly NoAction; }
        const default_action = NoAction;
        size = 4;
    }

    apply {
        new_bad = bad;
        lost = false;
        if (loss_model.apply().hit) {
            if ((bit<32>) rand_move < p_move) {
                new_bad = ~bad;
            }
            lost = (bit<32>) rand_loss < p_loss;
        }
    }
}

#endif
