#ifndef LINKEMU_HEADERS_P4
#define LINKEMU_HEADERS_P4

#include "defines.p4"

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

struct headers_t {
    ethernet_h ethernet;
}

// Link parameters of one direction, loaded from the link_params table.
struct link_params_t {
    bit<48>   byte_cost_q;     // serialization time per byte, us << TIME_FRAC_BITS
    bit<32>   overhead_bytes;  // per-packet link overhead added to the L3 length
    time_us_t delay_us;        // propagation delay after serialization
    bit<32>   queue_limit;     // router queue, packets waiting for the link
    time_us_t stall_us;        // give up waiting for a lost predecessor after this
}

// What the link model decided about a packet; the per-packet fields ride with
// the packet through every recirculation (field list 1).
struct link_meta_t {
    @field_list(1) direction_t dir;
    @field_list(1) seq_t       seq;         // admission order within the direction
    @field_list(1) time_us_t   start_us;    // serialization starts (leaves the queue)
    @field_list(1) time_us_t   due_us;      // release instant at the far end
    @field_list(1) time_us_t   now_us;      // clock read at the last egress pass
    @field_list(1) bit<1>      queued;      // still counted in the router queue
    @field_list(1) bit<9>      out_port;    // unicast destination, 0 = flood
    @field_list(1) bit<16>     flood_grp;   // multicast group of the far side
    bit<1>        admitted;
    bit<1>        released;
    link_params_t params;
}

struct metadata_t {
    link_meta_t link;
}

#endif
