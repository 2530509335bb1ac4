// Sleep lanes: a held packet whose next event is far sleeps in a
// rate-limited egress queue instead of going round the hold loop, and comes
// back to the loop LANE_WAKE_EARLY_US before the event. BMv2 fixes a frame's
// send instant when it enqueues it, at max(now, the queue's previous send +
// 1/rate), and its egress worker sleeps until the earliest one
// (include/bm/bm_sim/queueing.h): a sleeping frame costs no pass, and frames
// far from due no longer keep the ingress thread from new arrivals.
//
// A lane is an interface-less port whose queue the controller paces to one
// frame a period and deepens over Thrift (linkemu.switch.lanes), with a clone
// session to it. The lanes' previous sends are kept here (lane_tail), so a
// frame knows when each lane would give it back; it takes the one that gives
// it back latest but by its limit, by an egress-to-egress clone (no deparse,
// parse or ingress; the state rides in the packet's headers), and the
// original is dropped. An idle lane gives a frame back at once and is then a
// period ahead: boarding it again sleeps a whole period; ties go to the
// longer lane, which arms it. Periods double from 0.5 ms to 1 s, with
// LANES_PER_PERIOD lanes each, so a steady stream of held frames finds a lane
// that keeps most of them to one or two hops. Every lane, like every hold
// port, is = 0 mod 4: one egress worker serves them all and alone touches
// lane_tail.
#ifndef LINKEMU_SLEEP_LANES_P4
#define LINKEMU_SLEEP_LANES_P4

#include "../../../include/headers.p4"
#include "../../../include/size.p4"
#include "../define_v1model.p4"
#include "hold_count.p4"

const bit<32>   LANES_PER_PERIOD = 4;
const bit<32>   LANE_PORT_BASE = 256;       // lane J: port 256 + 4 J, below the hold ports
const bit<32>   LANE_SESSION_BASE = 1;      // lane J: clone session J + 1
const time_us_t LANE_WAKE_EARLY_US = 1000;  // back in the loop this long before the event
// A lane's period is a whole number of frames a second (BMv2 sets a rate).
const time_us_t LANE_PERIOD_0 = 500;
const time_us_t LANE_PERIOD_1 = 1000;
const time_us_t LANE_PERIOD_2 = 2000;
const time_us_t LANE_PERIOD_3 = 4000;
const time_us_t LANE_PERIOD_4 = 8000;
const time_us_t LANE_PERIOD_5 = 15625;
const time_us_t LANE_PERIOD_6 = 31250;
const time_us_t LANE_PERIOD_7 = 62500;
const time_us_t LANE_PERIOD_8 = 125000;
const time_us_t LANE_PERIOD_9 = 250000;
const time_us_t LANE_PERIOD_10 = 500000;
const time_us_t LANE_PERIOD_11 = 1000000;
#define NUM_LANE_PERIODS 12
#define NUM_LANES 48                        // NUM_LANE_PERIODS x LANES_PER_PERIOD

// Lane J of period P, if it gives the frame back later than the best so far
// and by its limit (?: in an action: one expression each, no condition).
#define LANE(J, P)                                                           \
    lane_tail.read(hdr.lane.offer, J);                                        \
    hdr.lane.offer = hdr.lane.offer + P < hdr.link.pkt.now_us ?                \
                    hdr.link.pkt.now_us : hdr.lane.offer + P;                 \
    hdr.lane.session = P <= hdr.lane.reach && hdr.lane.offer <= hdr.lane.limit && \
                       hdr.lane.offer >= hdr.lane.best ?                      \
                       J + LANE_SESSION_BASE : hdr.lane.session;             \
    hdr.lane.best = hdr.lane.session == J + LANE_SESSION_BASE ?              \
                    hdr.lane.offer : hdr.lane.best;
#define LANES_OF(K, P) \
    LANE(4 * K, P) LANE(4 * K + 1, P) LANE(4 * K + 2, P) LANE(4 * K + 3, P)

// Packets asleep in the lanes now: SleepLanes keeps it; LinkPass's
// admission reads it to tell the loop's packets from the hold's.
register<bit<32>>(1) lane_asleep;

// A held packet that only waits for the clock, with its next event
// (wake_us) far enough ahead for a lane, sleeps in the lane that gives it
// back latest by LANE_WAKE_EARLY_US before the event; the original is
// dropped. A packet back from a lane goes round the loop again only while
// the loop has room (LOOP_CAPACITY, size.p4), or when it is its
// direction's next to release (the loop may be full of packets waiting for
// it): else it sleeps on in the shortest lane, late rather than dropped by
// BMv2's full recirculation queue. BMv2 clones after the egress pipeline,
// from the headers as they end: lane_h, the pass's working values, stays
// behind.
control SleepLanes(inout headers_t hdr, inout standard_metadata_t std) {
    register<time_us_t>(NUM_LANES) lane_tail;
    counter(NUM_DIRECTIONS, CounterType.packets) lane_sleeps;   // a packet boarded a lane

    action pick() {
        LANES_OF(0, LANE_PERIOD_0)
        LANES_OF(1, LANE_PERIOD_1)
        LANES_OF(2, LANE_PERIOD_2)
        LANES_OF(3, LANE_PERIOD_3)
        LANES_OF(4, LANE_PERIOD_4)
        LANES_OF(5, LANE_PERIOD_5)
        LANES_OF(6, LANE_PERIOD_6)
        LANES_OF(7, LANE_PERIOD_7)
        LANES_OF(8, LANE_PERIOD_8)
        LANES_OF(9, LANE_PERIOD_9)
        LANES_OF(10, LANE_PERIOD_10)
        LANES_OF(11, LANE_PERIOD_11)
    }

    // The loop's packets: those the hold carries, less those asleep (this
    // one among them, until it leaves its lane below); and the direction's
    // next packet to release.
    action count_loop() {
        COUNT_HELD(hdr.lane.in_loop, hdr.lane.asleep)
        lane_asleep.read(hdr.lane.asleep, 0);
        hdr.lane.in_loop = hdr.lane.in_loop - hdr.lane.asleep;
        release_next.read(hdr.lane.next, hdr.link.pkt.dir);
    }

    action sleep_on() {
        lane_tail.read(hdr.lane.best, 0);
        hdr.lane.best = hdr.lane.best + LANE_PERIOD_0 < hdr.link.pkt.now_us ?
                        hdr.link.pkt.now_us : hdr.lane.best + LANE_PERIOD_0;
        hdr.lane.session = LANE_SESSION_BASE;
    }

    // One packet more asleep, or one fewer, or as many.
    action settle_asleep() {
        lane_asleep.read(hdr.lane.asleep, 0);
        hdr.lane.asleep = hdr.lane.asleep + (hdr.lane.session != 0 ? 32w1 : 0) -
                          (bit<32>) hdr.lane.woke;
        lane_asleep.write(0, hdr.lane.asleep);
    }

    apply {
        if (std.instance_type == INSTANCE_TYPE_EGRESS_CLONE ||
            hdr.link.pkt.wake_us > hdr.link.pkt.now_us + (LANE_WAKE_EARLY_US + LANE_PERIOD_0)) {
            hdr.lane.setValid();   // zeroed: no lane, best 0
            if (std.instance_type == INSTANCE_TYPE_EGRESS_CLONE) {
                hdr.lane.woke = 1;
            }
            if (hdr.link.pkt.flags & (PKT_DEFERRED | PKT_TURN) == 0 &&
                hdr.link.pkt.wake_us > hdr.link.pkt.now_us + (LANE_WAKE_EARLY_US + LANE_PERIOD_0)) {
                hdr.lane.limit = hdr.link.pkt.wake_us - LANE_WAKE_EARLY_US;
                hdr.lane.reach = hdr.lane.limit - hdr.link.pkt.now_us;
                pick();
            }
            if (hdr.lane.woke == 1 && hdr.lane.session == 0) {
                count_loop();
                if (hdr.lane.in_loop >= LOOP_CAPACITY && hdr.link.pkt.seq != hdr.lane.next) {
                    sleep_on();
                }
            }
            if (hdr.lane.session != 0) {
                lane_tail.write(hdr.lane.session - LANE_SESSION_BASE, hdr.lane.best);
                lane_sleeps.count(hdr.link.pkt.dir);
                clone_preserving_field_list(CloneType.E2E, hdr.lane.session, FL_HOLD);
                mark_to_drop(std);
            }
            if (hdr.lane.woke != (bit<1>) (hdr.lane.session != 0)) {
                settle_asleep();
            }
            hdr.lane.setInvalid();
        }
    }
}

#endif
