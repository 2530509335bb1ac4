#ifndef LINKEMU_HEADERS_P4
#define LINKEMU_HEADERS_P4

#include "defines.p4"
#include "size.p4"

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    bit<32> src_addr;
    bit<32> dst_addr;
}

header ipv6_h {
    bit<4>   version;
    bit<6>   dscp;
    bit<2>   ecn;
    bit<20>  flow_label;
    bit<16>  payload_len;
    bit<8>   next_hdr;
    bit<8>   hop_limit;
    bit<128> src_addr;
    bit<128> dst_addr;
}

// The first eight bytes of TCP and UDP: the ports, to classify by, and the
// next word (TCP's sequence number, UDP's length and checksum), where
// PacketFaults flips a bit. One header: BMv2 marks every header invalid at
// the end of every pass of every packet, held ones included.
header l4_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> word;
}

// The parameters of a direction with optional features (link_params), and
// of its packet's router queue (queue_params): made valid by such a
// direction's arrival and by the passes of its deferred packets. A plain
// direction's arrival takes its parameters in place (LinkArrival), and release
// order and ARQ have tables of their own.
header link_params_h {
    bit<48>   byte_cost_q;     // serialization time per byte, us << TIME_FRAC_BITS
    bit<32>   overhead_bytes;  // per-packet link overhead added to the L3 length
    time_us_t delay_us;        // propagation delay after serialization
    features_t features;       // FEATURE_* in use
    bit<1>    down;            // an outage: nothing starts serialization
    bit<32>   send_buffer;     // link send buffer, bytes (0: none, see link_clock.p4)
    time_us_t buffer_hold_us;  // how long a sent frame keeps its place there
    // The packet's class's router queue, on its arrival.
    bit<32>   queue_limit;       // packets waiting for the link
    bit<32>   queue_bytes_limit; // bytes waiting (0: no byte limit)
    bit<48>   share_cost_q;      // the class's own rate cap, like byte_cost_q (0: none)
    bit<1>    deferred;          // best effort behind a priority class: start decided late
    bit<1>    aqm;               // RED is configured for this queue
    bit<5>    pad;               // BMv2 wants a header of whole bytes
}

// What the AQM decided about an arriving packet.
const bit<2> AQM_PASS = 0;
const bit<2> AQM_SIGNAL = 1;     // mark CE if ECN-capable, else drop
const bit<2> AQM_DROP = 2;       // above max_th (2 x max_th if gentle): drop
const bit<2> AQM_DROP_BLUE = 3;  // COBALT: BLUE's drop, not CoDel's

// What the link model decided about a packet. It rides with the packet
// through the hold loop inside the packet itself: the deparser emits it
// ahead of the frame while the packet is held, and the parser extracts it on
// every recirculated pass: cheaper on BMv2 than a field list
// (docs/bmv2-costs.md). The glue hands an arriving packet's state to the link
// model zeroed (on BMv2, setValid zeroes a header): the controls set only
// what differs from 0.
header link_state_h {
    direction_t dir;
    seq_t       seq;         // admission order within the direction
    time_us_t   start_us;    // serialization starts
    time_us_t   leave_us;    // leaves the router queue for the link send buffer
    time_us_t   due_us;      // release instant at the far end
    time_us_t   now_us;      // clock read at the last egress pass
    bit<24>     flags;       // PKT_*: one field, not fourteen (below)
    bit<16>     dest;        // far-side port, or with PKT_FLOOD multicast group;
                             // 0: none (as wide as makes whole bytes: no pad
                             // field to reset)
    time_us_t   attempt_us;  // next error draw: serialization end, + ARQ
    bit<8>      retx;        // retransmissions so far
    time_us_t   wake_us;     // nothing changes for it before this
    bit<32>     queue;       // its class's router queue (queue_index)
    bit<32>     ticket;      // its place in its queue: among the deferred
                             // packets, in its flow queue, or in its
                             // router queue's ring (queue_state.p4)
    time_us_t   arrival_us;  // for the event log
    bit<32>     pos;         // link bytes given a start before it (BestEffortStart)
    bit<32>     peek;        // the fast path's register read (a local is a
                             // metadata field, reset on every pass)
}

// A packet's flags (link_state_h.flags), in one field: BMv2 zeroes a field
// of a header made valid and extracts one on every pass of the hold loop,
// each for hundreds of instructions. The low byte is what its event reports
// (EVENT_*), the rest its state.
const bit<24> PKT_MARKED    = (bit<24>) EVENT_MARKED;
const bit<24> PKT_HELD      = (bit<24>) EVENT_HELD;       // held behind a retransmission
const bit<24> PKT_AHEAD     = (bit<24>) EVENT_AHEAD;      // sent ahead: no place in link order
const bit<24> PKT_DUPLICATE = (bit<24>) EVENT_DUPLICATE;  // released with a duplicate
const bit<24> PKT_CORRUPTED = (bit<24>) EVENT_CORRUPTED;
const bit<24> PKT_QUEUED    = 0x000100;   // still counted in the router queue
const bit<24> PKT_LINK_DONE = 0x000200;   // no more error draws: through, or lost
const bit<24> PKT_LOST      = 0x000400;   // failed every attempt; dropped in its turn
const bit<24> PKT_TURN      = 0x000800;   // due, waits for its turn in release order
const bit<24> PKT_DEFERRED  = 0x001000;   // waits for the scheduler to give it a start
const bit<24> PKT_LOG       = 0x002000;   // its direction logs events (EventLog)
const bit<24> PKT_ADMITTED  = 0x004000;   // the router queue took it (on arrival)
const bit<24> PKT_RELEASED  = 0x008000;   // leaves the switch at the end of this pass
const bit<24> PKT_OFFERS    = 0x010000;   // its direction defers best effort: its
                                          // passes offer the link (BestEffortStart)
const bit<24> PKT_FLOOD     = 0x020000;   // dest is a multicast group
const bit<24> PKT_SKIPPED   = 0x040000;   // released before earlier packets left
const bit<24> PKT_TIMED     = 0x080000;   // its switch has timed departure: it leaves
                                          // once settled, asleep at its port until due
const bit<24> PKT_AQM_LATE  = 0x100000;   // COBALT drops it when it leaves the router
                                          // queue, unless nothing waits behind it
const bit<24> PKT_BLUE      = 0x200000;   // with PKT_AQM_LATE: BLUE's drop
const bit<24> PKT_FQ        = 0x400000;   // waits in a flow queue for the link (its
                                          // frame is parsed on every pass: it may be
                                          // marked when it learns its start)

// The link model's view of a packet: its own state and its link's
// parameters.
struct link_meta_t {
    link_state_h  pkt;
    link_params_h params;
}

// One packet's fate, as the event log reports it to the controller.
struct event_t {
    direction_t dir;
    bit<8>      outcome;      // EVENT_RELEASED or EVENT_DROP_*
    seq_t       seq;          // link order (0 for a drop on arrival)
    bit<16>     length;       // L3 bytes
    time_us_t   arrival_us;
    time_us_t   start_us;     // serialization starts (0 for a drop on arrival)
    time_us_t   due_us;       // requested release (0 for a drop on arrival)
    time_us_t   event_us;     // actual release, or the drop
    bit<8>      retx;         // ARQ retransmissions
    bit<8>      flags;        // EVENT_MARKED | EVENT_HELD | ...
}

// The event as the digest sends it: event_t's members end to end, in their
// order, in one field: p4c copies a digest's members into metadata
// temporaries, and each costs every pass (docs/bmv2-costs.md).
struct event_digest_t {
    bit<296> event;
}

// A class's RED state between arrivals (the architecture glue keeps it in
// registers).
struct red_state_t {
    bit<64> avg;      // Q.16, packets or bytes
    bit<32> count;    // arrivals since the last signal, within the curve
    bit<32> target;   // R x 65536
    bit<32> generation;   // the push it belongs to
}

// A router queue's COBALT state between packets (the architecture glue
// keeps it in registers).
struct cobalt_state_t {
    bit<32>   count;       // CoDel's signals in this episode, decaying after it
    bit<1>    dropping;    // the sojourn is above target
    time_us_t drop_next;   // CoDel's next signal; with count 0 its activity timeout
    bit<32>   p_drop;      // BLUE's drop probability, x 2^32
    time_us_t blue_timer;  // BLUE's last change
    bit<32>   generation;  // the push it belongs to
}

// COBALT's parameters and law for one packet (Cobalt).
struct cobalt_work_t {
    time_us_t target_us;       // BLUE's hold-off
    time_us_t threshold_us;    // a sojourn above it is above target
    bit<64>   interval_us;
    bit<64>   per_interval_q32; // 2^32 / interval_us
    bit<1>    ecn;             // mark ECN-capable packets instead of dropping
    bit<32>   generation;      // the push the parameters came with
    bit<64>   prev_inv_sqrt_q32; // 1/sqrt(count - 1)
    bit<64>   inv_sqrt_q32;    // 1/sqrt(count), Cake's rec_inv_sqrt
    bit<64>   next_inv_sqrt_q32; // 1/sqrt(count + 1)
    bit<64>   law_sum_q16;     // the sum of 1/sqrt(j) for j < count
    bit<64>   decay_q16;       // the elapsed time since drop_next, in intervals
    time_us_t elapsed_us;
    bool      next_due;
    bool      late;            // "schedule" > 0: drop_next has passed
}

// The classification's key (TrafficClass).
struct class_key_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<8>  protocol;
    bit<6>  dscp;
    bit<1>  is_ip;
}

// RED's parameters for one arrival (Red).
struct red_work_t {
    bit<64> weight;       // w x 2^24
    bit<64> factor;       // decay, Q.16
    bit<32> p_b;          // Q.16
    bit<32> generation;   // the push the parameters came with
    bit<1>  bytes_mode;
}

#endif
