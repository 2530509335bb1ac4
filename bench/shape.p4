// The price of linkemu's shape: the benchmark's hold loop (bench/hold_loop.p4)
// in a program of linkemu's shape that does nothing else with it. BMv2 resets
// every metadata field on every pass, walks every table and condition on a
// packet's path, whatever they do, and marks every header invalid when a
// packet's pass ends. This program has 1 metadata field and 10 headers, as
// linkemu has (p4c's temporaries included), and on a frame's first pass it
// takes 40 conditions and 40 table applications with two assignments each (a
// zero-delay linkemu frame takes 40 conditions, 29 tables and 38
// assignments, and zeroes the 58 fields of the headers it makes valid,
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

#define UNUSED5(t) unused_h u##t##0; unused_h u##t##1; unused_h u##t##2; unused_h u##t##3; \
    unused_h u##t##4;
#define EXTRA_HEADERS step_h step; UNUSED5(0) unused_h u10;

#define EXTRA_METADATA bit<32> f00;

// One statement run as p4c makes it: a condition, then a keyless table whose
// action does two assignments.
#define STEP(n) \
    action step##n() { hdr.step.f00 = hdr.step.f01 + n; hdr.step.f02 = hdr.step.f00; } \
    table run##n { actions = { step##n; } const default_action = step##n(); }
#define APPLY(n) if (hdr.step.f03 != n + 1) { run##n.apply(); }
#define STEPS10(t) STEP(t##0) STEP(t##1) STEP(t##2) STEP(t##3) STEP(t##4) \
    STEP(t##5) STEP(t##6) STEP(t##7) STEP(t##8) STEP(t##9)
#define APPLIES10(t) APPLY(t##0) APPLY(t##1) APPLY(t##2) APPLY(t##3) APPLY(t##4) \
    APPLY(t##5) APPLY(t##6) APPLY(t##7) APPLY(t##8) APPLY(t##9)
#define FIRST_PASS_DECLS STEPS10(1) STEPS10(2) STEPS10(3) STEPS10(4)
#define FIRST_PASS hdr.step.setValid(); APPLIES10(1) APPLIES10(2) APPLIES10(3) APPLIES10(4)

#include "hold_loop.p4"
