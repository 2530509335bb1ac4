// Per-packet loss independent of the link states, as NetEm's: Gilbert-Elliott
// with NetEm's parameters (p: good->bad, r: bad->good, 1-h: loss when bad,
// 1-k: loss when good) and Bernoulli as its one-state case. Like NetEm, the
// state moves first and the loss is drawn with the state the packet found.
// Thresholds are probabilities x 65536; without an entry nothing is lost.
#ifndef LINKEMU_LOSS_MODEL_P4
#define LINKEMU_LOSS_MODEL_P4

#include "../headers.p4"

// The control's working values (a header, not locals: see headers.p4).
header loss_model_work_h {
    bit<32> p_move;
    bit<32> p_loss;
}

control LossModel(in bit<16> rand_move, in bit<16> rand_loss, in bit<1> bad,
                  inout link_meta_t m, out bit<1> new_bad, out bool lost) {
    loss_model_work_h w;

    action set_good(bit<32> to_bad, bit<32> loss) {
        w.p_move = to_bad;
        w.p_loss = loss;
    }

    action set_bad(bit<32> to_good, bit<32> loss) {
        w.p_move = to_good;
        w.p_loss = loss;
    }

    table loss_model {
        key = {
            m.pkt.dir : exact;
            bad       : exact;
        }
        actions = { set_good; set_bad; }
        const default_action = set_good(0, 0);   // no loss model: a miss
        size = 4;
    }

    apply {
        new_bad = bad;
        lost = false;
        w.setValid();
        if (loss_model.apply().hit) {
            if ((bit<32>) rand_move < w.p_move) {
                new_bad = ~bad;
            }
            lost = (bit<32>) rand_loss < w.p_loss;
        }
    }
}

#endif
