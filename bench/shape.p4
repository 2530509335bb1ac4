// The price of linkemu's shape: the benchmark's hold loop (bench/hold_loop.p4)
// in a program of linkemu's shape that does nothing else with it. BMv2 resets
// every metadata field on every pass, walks every table and condition on a
// packet's path, whatever they do, and marks every header invalid when a
// packet's pass ends. This program has 1 metadata field and 9 headers, as
// linkemu has (p4c's temporaries included), and on a frame's first pass it
// takes 16 conditions and 16 table applications with one assignment each (a
// zero-delay linkemu frame takes 16 conditions, 11 tables and 18
// assignments, and zeroes the 37 fields of the headers it makes valid,
// counted with callgrind); its held passes, like linkemu's fast path, only
// check the time. Its rate and hold error are what that shape alone costs on
// this BMv2 build.

header unused_h {
    bit<8> b;
}

// The steps' working values, made valid on a frame's first pass.
header step_h {
    bit<32> f00;
    bit<32> f01;
    bit<32> f02;
    bit<32> f03;
}

#define EXTRA_HEADERS step_h step; unused_h u0; unused_h u1; unused_h u2; unused_h u3; \
    unused_h u4;

#define EXTRA_METADATA bit<32> f00;

// One statement run as p4c makes it: a condition, then a keyless table whose
// action does one assignment.
#define STEP(n) \
    action step##n() { hdr.step.f00 = hdr.step.f01 + n; } \
    table run##n { actions = { step##n; } const default_action = step##n(); }
#define APPLY(n) if (hdr.step.f03 != n + 1) { run##n.apply(); }
#define STEPS8(t) STEP(t##0) STEP(t##1) STEP(t##2) STEP(t##3) STEP(t##4) \
    STEP(t##5) STEP(t##6) STEP(t##7)
#define APPLIES8(t) APPLY(t##0) APPLY(t##1) APPLY(t##2) APPLY(t##3) APPLY(t##4) \
    APPLY(t##5) APPLY(t##6) APPLY(t##7)
#define FIRST_PASS_DECLS STEPS8(1) STEPS8(2)
#define FIRST_PASS hdr.step.setValid(); APPLIES8(1) APPLIES8(2)

#include "hold_loop.p4"
