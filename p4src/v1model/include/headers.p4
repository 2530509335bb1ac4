// The v1model glue's headers: the working values of a pass, which live in
// headers on BMv2 (docs/bmv2-costs.md), the controller's packet-in header,
// and the program's header and metadata structs, around the neutral headers
// of p4src/include/headers.p4.
#ifndef LINKEMU_V1MODEL_HEADERS_P4
#define LINKEMU_V1MODEL_HEADERS_P4

#include "../../include/headers.p4"

// The hold's positions in both directions, which count the packets it holds
// (PassEntry's count_held): each read into a field of its own and summed in
// one expression, where a running sum would be an assignment per register.
struct hold_positions_t {
    seq_t   admitted_0;      // link order given so far (next_seq)
    seq_t   admitted_1;
    seq_t   released_0;      // released so far (release_next)
    seq_t   released_1;
    bit<32> deferred_0;      // the deferred rings' tails and heads
    bit<32> deferred_1;
    bit<32> settled_0;
    bit<32> settled_1;
    bit<32> out_released_0;  // timed: released, and reached their port's egress
    bit<32> out_released_1;
    bit<32> out_reached_0;
    bit<32> out_reached_1;
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
    hold_positions_t held;
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
    bit<32>    flow_ref;    // and as the lists link it: index + 1
    bit<32>    value;       // a register's new value, set apart: p4c would
                            // copy an expression into a temporary
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
