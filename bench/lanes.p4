// Sleep lanes alone: BMv2 holding each benchmark frame for the time written
// in it (bench/traffic.py) in rate-limited egress queues instead of a
// recirculation loop, and nothing else: the floor of that mechanism on this
// BMv2 build and machine, beside bench/hold.p4's loop.
//
// A lane is an interface-less port whose egress queue sends at most one
// frame every period (bench/benchmark.py sets the rates over Thrift from the
// LANE lines below): BMv2 fixes a frame's send instant when it is enqueued,
// at max(now, the lane's previous send + period), and its egress worker
// sleeps until the earliest (include/bm/bm_sim/queueing.h). The lanes'
// previous sends are kept here (lane_tail), so on every pass a frame knows
// when each lane would give it back; it takes the one that gives it back
// latest but at most SLACK_US after its due instant, by an egress-to-egress
// clone (no deparse, no parse, no ingress: a fresh clock, and the original
// is dropped). A lane whose previous send is a period past gives a frame
// back at once and is then a period ahead: boarding it again sleeps a whole
// period; ties go to the longer lane, which arms it. Back at or after its due
// instant, a frame is cloned to the output port. Every lane is = 0 mod 4: one
// egress worker serves them all and alone touches lane_tail.
//
// With LINK_ORDER defined (bench/lanes_in_order.p4) frames leave in the order
// they came, as a link's do: one back at or after its due instant but ahead
// of its turn goes round the spin port until the frames before it have left.
// That is the least a hold asleep in BMv2 needs to keep link order: a lane
// gives a frame back at the instant fixed when it boarded, and nothing can
// wake one frame when its turn comes.
#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_BENCH = 0x88b5;
const bit<9>  OUT_PORT = 2;
const bit<9>  SPIN_PORT = 448;        // no rate: back at once. Lane J: port 452 + 4 J
const bit<32> SPIN_SESSION = 15;      // clone sessions: lane J's is J + 1
const bit<32> OUT_SESSION = 16;
const bit<48> SLACK_US = 100;

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header bench_h {
    bit<32> seq;
    bit<32> hold_us;
}

// The due instant and a pass's working fields: a clone keeps headers, and
// BMv2 resets metadata on every pass.
header hold_h {
    bit<48> due_us;
    bit<48> now_us;
    bit<48> limit_us;   // due + slack: the latest a lane may give the frame back
    bit<48> reach_us;   // limit - now: the longest period worth a look
    bit<48> best_us;
    bit<48> exit_us;
    bit<32> session;
#ifdef LINK_ORDER
    bit<32> order;      // arrival order
    bit<32> next;
#endif
}

struct headers_t {
    hold_h     hold;
    ethernet_h ethernet;
    bench_h    bench;
}

struct metadata_t { }

parser LanesParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_BENCH : parse_bench;
            default         : accept;
        }
    }
    state parse_bench {
        pkt.extract(hdr.bench);
        transition accept;
    }
}

control NoChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control LanesIngress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t std) {
#ifdef LINK_ORDER
    register<bit<32>>(1) arrived;
#endif
    apply {
        if (hdr.bench.isValid()) {
            hdr.hold.setValid();
#ifdef LINK_ORDER
            arrived.read(hdr.hold.order, 0);
            arrived.write(0, hdr.hold.order + 1);
#endif
            hdr.hold.due_us = std.ingress_global_timestamp + (bit<48>) hdr.bench.hold_us;
            std.egress_spec = SPIN_PORT;
        } else {
            mark_to_drop(std);
        }
    }
}

// Lane J, period P us, if the frame has that long to go.
#define LANE(J, P)                                                   \
    if (hdr.hold.reach_us >= P) {                                    \
        lane_tail.read(hdr.hold.exit_us, J);                         \
        hdr.hold.exit_us = hdr.hold.exit_us + P;                     \
        if (hdr.hold.exit_us < hdr.hold.now_us) {                    \
            hdr.hold.exit_us = hdr.hold.now_us;                      \
        }                                                            \
        if (hdr.hold.exit_us <= hdr.hold.limit_us &&                 \
            hdr.hold.exit_us >= hdr.hold.best_us) {                  \
            hdr.hold.best_us = hdr.hold.exit_us;                     \
            hdr.hold.session = J + 1;                                \
        }                                                            \
    }

control LanesEgress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t std) {
    register<bit<48>>(14) lane_tail;
#ifdef LINK_ORDER
    register<bit<32>>(1) release_next;
#endif

    apply {
        if (std.egress_port == OUT_PORT) {
            hdr.hold.setInvalid();
        } else {
            hdr.hold.now_us = std.egress_global_timestamp;
            if (hdr.hold.now_us >= hdr.hold.due_us) {
#ifdef LINK_ORDER
                release_next.read(hdr.hold.next, 0);
                if (hdr.hold.order == hdr.hold.next) {
                    release_next.write(0, hdr.hold.next + 1);
                    clone_preserving_field_list(CloneType.E2E, OUT_SESSION, 0);
                } else {
                    clone_preserving_field_list(CloneType.E2E, SPIN_SESSION, 0);
                }
#else
                clone_preserving_field_list(CloneType.E2E, OUT_SESSION, 0);
#endif
            } else {
                hdr.hold.limit_us = hdr.hold.due_us + SLACK_US;
                hdr.hold.reach_us = hdr.hold.limit_us - hdr.hold.now_us;
                hdr.hold.best_us = 0;
                hdr.hold.session = SPIN_SESSION;
                LANE(0, 25)
                LANE(1, 50)
                LANE(2, 100)
                LANE(3, 200)
                LANE(4, 400)
                LANE(5, 800)
                LANE(6, 1600)
                LANE(7, 3125)
                LANE(8, 6250)
                LANE(9, 12500)
                LANE(10, 25000)
                LANE(11, 50000)
                LANE(12, 100000)
                LANE(13, 200000)
                if (hdr.hold.session != SPIN_SESSION) {
                    lane_tail.write(hdr.hold.session - 1, hdr.hold.best_us);
                }
                clone_preserving_field_list(CloneType.E2E, hdr.hold.session, 0);
            }
            mark_to_drop(std);
        }
    }
}

control LanesDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.bench);
    }
}

V1Switch(LanesParser(), NoChecksum(), LanesIngress(), LanesEgress(), NoChecksum(),
         LanesDeparser()) main;
