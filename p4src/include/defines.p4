// Constants and types shared by the architecture-neutral link model.
#ifndef LINKEMU_DEFINES_P4
#define LINKEMU_DEFINES_P4

typedef bit<48> mac_addr_t;
typedef bit<48> time_us_t;    // switch clock, microseconds
typedef bit<64> time_q_t;     // microseconds in Q.20 fixed point (virtual clock)
typedef bit<32> direction_t;   // as wide as a register index: no casts
typedef bit<32> seq_t;

const direction_t DIR_DOWNLINK = 0;   // fixed -> mobile
const direction_t DIR_UPLINK   = 1;   // mobile -> fixed
const bit<32>     NUM_DIRECTIONS = 2;

// Two traffic classes per direction (0 best effort, 1 priority), each with
// its own router queue: queue index = class x 2 + direction, so that a
// direction's best effort is its direction's index.
const bit<32> NUM_QUEUES = 4;

bit<32> queue_index(in direction_t dir, in bit<1> cls) {
    return ((bit<32>) cls << 1) | dir;
}

// Optional features of a direction (link_params' features bitmap): an
// interpreter such as BMv2 pays for every register access and random draw,
// so what a profile does not use is skipped.
typedef bit<16> features_t;
const features_t FEATURE_LOSS_MODEL   = 1;   // Bernoulli / Gilbert-Elliott loss
const features_t FEATURE_SOJOURN_RAMP = 2;   // ECT(1) marking on queue sojourn
const features_t FEATURE_DEFERRED     = 4;   // best effort starts late: a priority split, a varying rate
const features_t FEATURE_DELAY_VARIATION = 8; // jitter or delay spikes
const features_t FEATURE_PACKET_FAULTS = 16;  // reorder, duplicate, corrupt
const features_t FEATURE_PRIORITY     = 32;  // traffic classes: a priority split
const features_t FEATURE_LINK_ERRORS  = 64;  // a link state with errors: draws, ARQ
const features_t FEATURE_COBALT       = 128; // Cake's AQM on the router queue
const features_t FEATURE_FLOWS        = 256; // flow isolation: flow queues, DRR++

// What became of a packet, in the event log.
const bit<8> EVENT_RELEASED        = 0;   // left the far end of the link
const bit<8> EVENT_DROP_QUEUE      = 1;   // router queue full
const bit<8> EVENT_DROP_AQM        = 2;   // RED
const bit<8> EVENT_DROP_LOSS_MODEL = 3;   // Bernoulli / Gilbert-Elliott
const bit<8> EVENT_DROP_LINK_ERROR = 4;   // link error, after ARQ if any
const bit<8> EVENT_DROP_HOLD       = 5;   // the hold full (its capacity: hold_limit)
const bit<8> EVENT_DROP_CODEL      = 6;   // COBALT's CoDel, leaving the router queue
const bit<8> EVENT_DROP_BLUE       = 7;   // COBALT's BLUE, leaving the router queue
// Flags of an event.
const bit<8> EVENT_MARKED    = 1;   // CE marked (RED, COBALT or the sojourn ramp)
const bit<8> EVENT_HELD      = 2;   // held behind a retransmitted frame
const bit<8> EVENT_AHEAD     = 4;   // sent ahead (reorder)
const bit<8> EVENT_DUPLICATE = 8;   // released twice
const bit<8> EVENT_CORRUPTED = 16;  // one bit flipped

// Fractional bits of the virtual clock. Serialization cost per byte is pushed
// as microseconds x 2^20, so 10 Gbit/s keeps 0.06 % precision without floats.
#define TIME_FRAC_BITS 20
const time_q_t TIME_FRAC_MASK = (1 << TIME_FRAC_BITS) - 1;

// Bytes of Ethernet header not counted as link payload: the emulated link
// carries the L3 packet; per-packet overhead is a profile parameter.
const bit<32> ETH_HEADER_BYTES = 14;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_IPV6 = 0x86dd;
const bit<8>  IP_PROTO_TCP = 6;
const bit<8>  IP_PROTO_UDP = 17;

#endif
