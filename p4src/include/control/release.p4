// When a held packet may leave the far end of the link.
//
// A packet is released once its due instant has passed and every packet
// admitted before it in the same direction has left (FIFO). If a predecessor
// vanished (e.g. the pipeline was replaced while it was held), waiting ends
// stall_us after the due instant and the skip is counted.
#ifndef LINKEMU_RELEASE_P4
#define LINKEMU_RELEASE_P4

#include "../headers.p4"

control Release(in time_us_t now_us, in seq_t next_release, inout link_meta_t m,
                out seq_t new_next_release, out bool stalled) {
    apply {
        // Modular distance to the next packet in line; negative means this
        // packet's turn was skipped already and it must not wait any more.
        int<32> ahead = (int<32>) (m.seq - next_release);
        bool due = now_us >= m.due_us;
        bool gave_up = now_us >= m.due_us + m.params.stall_us;

        bool go = due && (ahead <= 0 || gave_up);
        m.released = go ? 1w1 : 1w0;
        stalled = go && ahead > 0;
        new_next_release = (go && ahead >= 0) ? m.seq + 1 : next_release;
    }
}

#endif
