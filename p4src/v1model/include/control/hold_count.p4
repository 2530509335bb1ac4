// What the hold carries, both directions, counted from positions, so a
// count never drifts: each direction's packets admitted in link order and
// not yet released (a paced release keeps its turn, so it stays counted),
// and its deferred ones. LinkPass keeps the positions; its admission and the
// sleep lanes' way back into the loop count them.
#ifndef LINKEMU_HOLD_COUNT_P4
#define LINKEMU_HOLD_COUNT_P4

#include "../../../include/headers.p4"
#include "deferred_ring.p4"

// Link order: a direction's next sequence number to hand out, and its next
// packet to release (Release's next_release; the fast path reads it for a
// packet waiting for its turn).
register<seq_t>(NUM_DIRECTIONS) next_seq;
register<seq_t>(NUM_DIRECTIONS) release_next;

// HELD: the packets the hold carries; PART: a field to read into. In an
// action: the reads together make one table (p4c makes a table of each run
// of statements).
#define COUNT_HELD(HELD, PART)                                               \
    next_seq.read(HELD, 0);                                                  \
    release_next.read(PART, 0);                                              \
    HELD = HELD - PART;                                                      \
    next_seq.read(PART, 1);                                                  \
    HELD = HELD + PART;                                                      \
    release_next.read(PART, 1);                                              \
    HELD = HELD - PART;                                                      \
    defer_tail.read(PART, 0);                                                \
    HELD = HELD + PART;                                                      \
    defer_head.read(PART, 0);                                                \
    HELD = HELD - PART;                                                      \
    defer_tail.read(PART, 1);                                                \
    HELD = HELD + PART;                                                      \
    defer_head.read(PART, 1);                                                \
    HELD = HELD - PART;

#endif
