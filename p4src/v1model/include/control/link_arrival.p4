#ifndef LINKEMU_LINK_ARRIVAL_P4
#define LINKEMU_LINK_ARRIVAL_P4

#include "../headers.p4"
#include "../../../include/control/link_clock.p4"

// The arrival on every direction, on BMv2: a plain direction's, whole, in
// the action of its entry (LinkClock's arithmetic for a direction without
// optional features), and for the others only the note that they take
// LinkClock's (featured). An admitted frame leaves the link free at
// w.finish, which Admission writes. In BMv2 every assignment, every field
// of a header made valid and every operation of an expression costs
// (docs/bmv2-costs.md): one action with its parameters in place is the
// cheapest form of the clock. Its working values are the pass's (w), fields
// the action sets once and then reads: p4c would carry a value in an
// argument of the control into every expression that reads it, and BMv2
// would evaluate it there anew. An unknown direction is an ideal wire
// without errors.
control LinkArrival(inout pass_h w, inout link_meta_t m) {

    // w.setValid() and m.pkt.setValid() on the valid headers change nothing
    // but keep p4c from carrying the value just set into the expressions
    // that follow (each then reads the field).
    action plain(bit<48> byte_cost_q, bit<32> overhead_bytes, time_us_t delay_us,
                 bit<32> queue_limit, bit<32> queue_bytes_limit, bit<1> link_errors,
                 bit<32> send_buffer, time_us_t buffer_hold_us) {
        time_q_t now_q = ((time_q_t) w.now) << TIME_FRAC_BITS;
        time_q_t bytes = (time_q_t) (w.l3_len + overhead_bytes);
        time_q_t room = bytes > (time_q_t) send_buffer ? 0 :
                        ((time_q_t) send_buffer - bytes) * (time_q_t) byte_cost_q;
        time_q_t ahead = w.free + (((time_q_t) buffer_hold_us) << TIME_FRAC_BITS);
        w.leave = ahead > now_q + room ? ahead - room : now_q;
        w.setValid();
        w.start = w.free > w.leave ? w.free : w.leave;
        w.setValid();
        // (The bytes anew: a local read past a setValid() is a field.)
        w.finish = w.start + (time_q_t) (w.l3_len + overhead_bytes) * (time_q_t) byte_cost_q;
        w.setValid();
        // Rounded up as SetTimes does: it leaves the router queue after its
        // arrival (waits there) exactly when leave_us does.
        m.pkt.leave_us = (time_us_t) ((w.leave + TIME_FRAC_MASK) >> TIME_FRAC_BITS);
        m.pkt.start_us = (time_us_t) ((w.start + TIME_FRAC_MASK) >> TIME_FRAC_BITS);
        m.pkt.attempt_us = (time_us_t) ((w.finish + TIME_FRAC_MASK) >> TIME_FRAC_BITS);
        m.pkt.setValid();
        m.pkt.due_us = m.pkt.attempt_us + delay_us;
        m.pkt.flags = m.pkt.flags | (link_errors == 0 ? PKT_LINK_DONE : 0) |
                      (m.pkt.leave_us == w.now ? PKT_ADMITTED :
                       (w.waiting >= queue_limit ||
                        (queue_bytes_limit != 0 &&
                         w.waiting_bytes + w.l3_len > queue_bytes_limit) ? 0 :
                        PKT_QUEUED | PKT_ADMITTED));
    }

    action featured() {
        w.featured = true;
    }

    table link {
        key = { m.pkt.dir : exact @name("dir"); }
        actions = { plain; featured; }
        const default_action = plain(0, 0, 0, 0, 0, 0, 0, 0);
        size = NUM_DIRECTIONS;
    }

    apply {
        link.apply();
    }
}

#endif
