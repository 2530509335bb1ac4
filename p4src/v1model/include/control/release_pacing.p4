// Release pacing: BMv2 queues 64 frames for an output port by default and
// drops the rest, and held frames due together (the ones behind a
// retransmitted frame, or a burst held by the delay) would be released
// faster than the port's egress thread, which shares the switch's core,
// sends them. So a held frame is released only while fewer than OUT_PACE of
// its direction's held releases are still ahead of the port's egress; else
// it goes round once more, in the turn lane, which comes back sooner than
// the main loop. (A frame released on arrival is forwarded as BMv2 forwards
// any frame.) Each held release carries its number (pass_h.out_no) to
// egress, which records it in out_reached: a frame BMv2 drops anyway is
// passed over by the next. Should BMv2 drop every release still counted
// ahead, no later one would reach egress to say so: after OUT_STALL_US in
// which the releases made no progress (out_progress_us: the last held
// release, or the last to reach egress, whichever is later) the count is
// taken as lost, and frames are released again. The last release counts
// too: after a quiet spell the port's egress thread may take longer than
// BMv2's queue of 64 lasts to send the first of a burst on.
//
// A switch with timed departure (PKT_TIMED) queues as many frames for a
// port as the hold takes (the launcher sets the depth), and a frame released
// ahead sleeps there until its departure instant (ReleaseDeparture): it is
// not paced, and its number only counts it as held until it reaches egress
// (PassEntry's count_held). A frame that leaves at once is forwarded as any
// frame, uncounted, in the room the launcher leaves beyond the hold's.
//
// ReleasePacing also stores the direction's next release (Release's), unless
// it holds the frame back, which keeps its turn.
#ifndef LINKEMU_RELEASE_PACING_P4
#define LINKEMU_RELEASE_PACING_P4

#include "../headers.p4"
#include "../define_v1model.p4"
#include "hold.p4"

const bit<32>   OUT_PACE = 48;
const time_us_t OUT_STALL_US = 10000;

register<bit<32>>(NUM_DIRECTIONS) out_released;      // held releases so far
register<bit<32>>(NUM_DIRECTIONS) out_reached;       // the latest to reach egress
register<time_us_t>(NUM_DIRECTIONS) out_progress_us;

// A held frame released to a port that finds OUT_PACE of its direction's
// held releases still ahead of the port keeps its turn and goes round once
// more in the turn lane.
control ReleasePacing(inout headers_t hdr, in metadata_t meta, inout standard_metadata_t std) {
    @brief("held packets due that went round once more: BMv2's output queue")
    counter(NUM_DIRECTIONS, CounterType.packets) release_paced;

    apply {
        if (hdr.link.pkt.flags & (PKT_RELEASED | PKT_LOST | PKT_DUPLICATE | PKT_FLOOD |
                                  PKT_TIMED) == (PKT_RELEASED | PKT_TIMED) &&
            meta.depart_us > hdr.pass.now) {
            out_released.read(hdr.pass.out_no, hdr.link.pkt.dir);
            hdr.pass.out_no = hdr.pass.out_no + 1;
            out_released.write(hdr.link.pkt.dir, hdr.pass.out_no);
            release_next.write(hdr.link.pkt.dir, hdr.pass.next);
        } else if (std.instance_type == INSTANCE_TYPE_RECIRC &&
                   hdr.link.pkt.flags & (PKT_RELEASED | PKT_LOST | PKT_DUPLICATE | PKT_FLOOD |
                                         PKT_TIMED) == PKT_RELEASED) {
            out_released.read(hdr.pass.out_no, hdr.link.pkt.dir);
            out_reached.read(hdr.pass.out_seen, hdr.link.pkt.dir);
            out_progress_us.read(hdr.pass.out_progress_us, hdr.link.pkt.dir);
            if (hdr.pass.out_no - hdr.pass.out_seen >= OUT_PACE &&
                hdr.pass.now < hdr.pass.out_progress_us + OUT_STALL_US) {
                release_paced.count(hdr.link.pkt.dir);
                hdr.link.pkt.flags = hdr.link.pkt.flags & ~(PKT_RELEASED | PKT_SKIPPED);
                std.egress_spec = turn_port(hdr.link.pkt.seq);
            } else {
                hdr.pass.out_no = hdr.pass.out_no + 1;
                out_released.write(hdr.link.pkt.dir, hdr.pass.out_no);
                release_next.write(hdr.link.pkt.dir, hdr.pass.next);
                if (hdr.pass.now > hdr.pass.out_progress_us) {
                    out_progress_us.write(hdr.link.pkt.dir, hdr.pass.now);
                }
            }
        } else {
            release_next.write(hdr.link.pkt.dir, hdr.pass.next);
        }
    }
}

// A held release reached its port's egress.
control ReleaseReached(inout headers_t hdr, inout standard_metadata_t std) {
    apply {
        if (hdr.pass.out_no != 0) {
            out_reached.write(hdr.link.pkt.dir, hdr.pass.out_no);
            out_progress_us.write(hdr.link.pkt.dir, std.egress_global_timestamp);
        }
    }
}

#endif
