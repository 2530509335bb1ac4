// A queued packet leaves the router queue once its serialization starts.
#ifndef LINKEMU_ROUTER_QUEUE_P4
#define LINKEMU_ROUTER_QUEUE_P4

#include "../headers.p4"

control RouterQueueLeave(in time_us_t now_us, inout link_meta_t m, out bool left) {
    apply {
        left = m.pkt.flags & PKT_QUEUED != 0 && now_us >= m.pkt.start_us;
        if (left) {
            m.pkt.flags = m.pkt.flags & ~PKT_QUEUED;
        }
    }
}

#endif
