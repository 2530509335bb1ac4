// Table and ring sizes, in one place. Tables keyed by direction or by router
// queue hold one entry each (NUM_DIRECTIONS, NUM_QUEUES: defines.p4); the
// controller checks its entries against the sizes in P4Info.
#ifndef LINKEMU_SIZE_P4
#define LINKEMU_SIZE_P4

#define PORT_MAP_SIZE 64          // switch ports with a side
#define FORWARD_SIZE 1024         // far-side hosts (MACs) and flood entries
#define SOJOURN_RAMP_SIZE 128     // sojourn ramp steps, all directions
#define JITTER_SIZE 2048          // per direction, a delay for each 10-bit draw
#define RED_CURVE_SIZE 2048       // RED's p_b steps, all queues
#define RED_DECAY_SIZE 2048       // RED's idle decay steps, all queues
#define TRAFFIC_CLASS_SIZE 256    // priority classification rules
#define COBALT_LAW_SIZE 512       // COBALT's counts: 128 exact, 8 steps per power of two
#define FQ_SHARE_SIZE 2048        // triple-isolate: a quantum's share per host load, directions

// Deferred best-effort packets a direction holds; the profile keeps the
// best-effort queue limit at or below it, so a slot is never overwritten
// while its packet waits.
const bit<32> DEFER_RING = 1024;

// Each router queue's ring of leave instants (queue_state.p4): more slots
// than the hold takes packets with timed departure (the controller's
// TIMED_HOLD_CAPACITY), so a slot is never taken while its packet waits.
#define QUEUE_RING_BITS 14
const bit<32> QUEUE_RING = 1 << QUEUE_RING_BITS;
const bit<32> QUEUE_RING_MASK = QUEUE_RING - 1;

// Packets the hold loop carries at once, all directions: BMv2's
// recirculation queue holds 1024 and drops the rest silently.
const bit<32> HOLD_CAPACITY = 960;

#endif
