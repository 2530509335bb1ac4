// Release departure: with timed departure (tools/bmv2) a released frame
// leaves its output port's queue at the instant in metadata_t.depart_us, so
// a frame released ahead of its due instant (Release) sleeps there until
// then, at no cost to the switch.
#ifndef LINKEMU_RELEASE_DEPARTURE_P4
#define LINKEMU_RELEASE_DEPARTURE_P4

#include "../headers.p4"

// With timed departure, a released frame leaves its port's queue at its due
// instant, and, where its direction releases in link order (Release's
// wake_us past its due_us), never before one released earlier in its
// direction (which may have waited past its own for its turn, or been lost
// late, holding the frames behind it).
control ReleaseDeparture(inout headers_t hdr, inout metadata_t meta) {
    register<time_us_t>(NUM_DIRECTIONS) last_departure;   // each direction's latest
    @brief("released to wait in the output port's queue until due (timed departure)")
    counter(NUM_DIRECTIONS, CounterType.packets) released_ahead;

    apply {
        meta.depart_us = hdr.link.pkt.due_us;
        if (hdr.link.pkt.wake_us != hdr.link.pkt.due_us) {
            last_departure.read(hdr.pass.last_departure, hdr.link.pkt.dir);
            if (hdr.pass.last_departure > meta.depart_us) {
                meta.depart_us = hdr.pass.last_departure;
            }
            last_departure.write(hdr.link.pkt.dir, meta.depart_us);
        }
        if (hdr.pass.now < meta.depart_us && hdr.link.pkt.flags & PKT_LOST == 0) {
            released_ahead.count(hdr.link.pkt.dir);
        }
    }
}

#endif
