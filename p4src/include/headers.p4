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

// Working values live in headers, not in locals or metadata, which BMv2
// charges on every pass (docs/bmv2-costs.md); a header's fields only when it
// is made valid, which only the code that uses them does. A link-model
// control whose table's action can draw or compute its result keeps no
// working values: it does so in the action, with the action's parameters in
// place (a ?: inside an action stays one expression; in a control's body p4c
// makes it a condition and a temporary). The others (TrafficClass, Red) take
// theirs as a struct in the glue's feature_pass_h, not in a header of their
// own, since every header costs every pass too. pass_h holds the v1model
// glue's for one full pass of a packet, made valid by that pass only: the
// fast path's passes never pay for them; LinkArrival works in it too. Never
// emitted (BMv2 still adds its bytes to egress's packet_length, which
// nothing reads there).
header pass_h {
    time_us_t  now;
    bit<32>    l3_len;
    bit<32>    dir_cell;    // HELD_CELLS (define_v1model.p4)
    time_q_t   free;      // the direction's link free
    time_q_t   leave;     // an arrival's router-queue departure, and its
    time_q_t   start;     // serialization start and end
    time_q_t   finish;
    bit<32>    waiting;   // its router queue, packets and L3 bytes
    bit<32>    waiting_bytes;
    seq_t      seq;
    bool       featured;  // the arrival of a direction with optional features
    bool       refused;   // dropped on its way to the link (loss model, AQM)
    bit<32>    head;      // deferred best effort, where a pass offers the link
    bit<32>    tail;
    bool       settles;
    bit<16>    rand;
    time_us_t  busy_until;
    seq_t      next;      // the direction's next release
    bit<32>    held;      // packets the hold loop carries (LinkPass's count_held)
    bit<32>    held_part;
    // The event log's "now" (log_clock): here, since log_event makes
    // feature_pass_h valid and p4c would copy an argument from it.
    time_us_t  clock;
    bit<32>    out_no;    // a held release's number (OUT_PACE, release_pacing.p4)
    bit<32>    out_seen;
    time_us_t  out_progress_us;
    time_us_t  last_departure;   // timed: its direction's latest (ReleaseDeparture)
    bit<5>     pad;       // BMv2 wants a header of whole bytes
}

// The glue's working values of what a profile may leave out (the FEATURE_*
// bits, RED, the event log), apart from pass_h: made valid only by a pass
// that uses one, so a plain link's full passes do not reset them.
header feature_pass_h {
    time_q_t   cap_free;  // the class's rate cap
    time_q_t   cost;
    time_q_t   share_cost;
    bit<32>    slot;      // a deferred packet's place in its ring (defer_slot)
    time_us_t  arrival;
    bit<32>    bytes;
    bool       settled;
    time_q_t   start;
    time_us_t  leave_us;
    bit<32>    pos_in;    // link bytes given a start so far, and where the
    bit<32>    block_pos; // frames behind an ARQ retransmission begin
    bit<10>    rand_index;
    bit<16>    rand_spike;
    bit<1>     bad;
    bit<1>     new_bad;
    bit<16>    rand_move;
    bit<16>    rand_loss;
    time_us_t  empty_since;
    time_us_t  idle;      // since the queue was last empty: RED's key, a
                          // field, or p4c gives it a temporary
    bit<16>    rand_aqm;
    red_state_t aqm;
    red_work_t red;
    class_key_t class_key;
    bit<2>     verdict;
    bool       use_ecn;
    bool       capable;   // ECN-capable transport
    bool       ect1;
    bool       corrupt;
    bit<16>    rand_reorder;
    bit<16>    rand_duplicate;
    bit<16>    rand_corrupt;
    bit<5>     flip_bit;
    bit<16>    rand_ramp;
    bit<32>    rand_blue;
    cobalt_state_t cobalt;
    cobalt_work_t cobalt_work;
    time_us_t  sojourn;   // the sojourn ramp's key
    bool       ramp_mark;
    event_t    event;
    bool       report;    // this pass ends with event in the event log
    bit<2>     pad;       // whole bytes
}

// The glue's working values of a router queue's ring of leave instants
// (queue_state.p4): made valid by an arrival's and a probe's QueueRead.
header ring_pass_h {
    bit<32>    tail;      // packets the ring took so far
    time_us_t  last;      // the instant the last of them leaves
    bit<32>    base;      // the queue's first slot
    bit<32>    at;        // a slot
    time_us_t  leave;
    bit<32>    left;      // of the ring's last QUEUE_RING, those that left
    bit<32>    bytes;     // L3 bytes the ring took so far, at two slots
    bit<32>    bytes_at;
}

// The glue's working values of flow isolation (flow_queues.p4): made valid
// only by the passes of a direction that isolates flows.
header fq_pass_h {
    bit<32>    flow;        // its flow queue's index
    bit<32>    hashed;
    bit<16>    src_port;
    bit<16>    dst_port;
    bit<32>    ticket;
    bit<32>    slot;
    bit<32>    other;       // a ticket or flow at hand
    bit<32>    other_slot;
    bit<32>    bytes;
    bit<32>    quantum;
    bit<32>    backlog;
    bit<32>    count;
    bit<32>    before;
    bit<32>    next_flow;
    bit<32>    epoch;
    bit<32>    src_host;    // triple-isolate
    bit<32>    dst_host;
    bit<32>    src_load;
    bit<32>    dst_load;
    bit<32>    load;
    bit<32>    share;       // the quantum a refill gives
    bit<32>    deficit;     // two's complement
    time_q_t   now_q;
    time_q_t   start;
    time_us_t  start_us;
    time_us_t  arrival;
    time_us_t  at_us;       // a COBALT event's instant
    time_us_t  cobalt_at;   // COBALT's arrival_us and leave_us
    time_us_t  leave_at;
    bit<8>     state;
    bit<2>     list;
    bit<2>     ecn;         // ECT(1), ECN-capable
    bit<1>     hosts;       // triple-isolate
    bit<1>     bulk;
    bool       overflow;
    bool       from_new;
    bool       refill;
    bool       empty;
    bool       moves;
    bool       to_old;
    bool       waiting;
    bool       leaves;
    bit<2>     pad;         // whole bytes
}

// The switch's clock when a controller's probe entered (P4Runtime packet-in
// metadata): the controller places link-state changes on this clock. With it,
// the router queue that the probe's destination address names (queue_index
// in its last two bits) as it was then: packets and L3 bytes waiting.
@controller_header("packet_in")
header clock_stamp_h {
    time_us_t ingress_us;
    bit<32>   waiting;
    bit<32>   waiting_bytes;
}

struct headers_t {
    clock_stamp_h clock_stamp;
    ethernet_h ethernet;
    ipv4_h     ipv4;
    ipv6_h     ipv6;
    l4_h       l4;
    pass_h     pass;
    feature_pass_h feature;
    fq_pass_h  fq;
    ring_pass_h ring;
    link_meta_t link;
}

// Every metadata field costs every pass (see pass_h): one only, which
// simple_switch reads when it queues the packet (timed departure,
// tools/bmv2): the instant a held packet's hold port sends it round again,
// on the egress clock; 0 sends it at once.
struct metadata_t {
    time_us_t depart_us;
}

#endif
