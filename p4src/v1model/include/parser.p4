// linkemu's parser and deparser. FrameParser is the frame's part, which the
// benchmark's programs of linkemu's shape include as well.
#ifndef LINKEMU_PARSER_P4
#define LINKEMU_PARSER_P4

#include "headers.p4"
#include "define_v1model.p4"

parser FrameParser(packet_in pkt, out ethernet_h ethernet, out ipv4_h ipv4,
                   out ipv6_h ipv6, out l4_h l4) {
    state start {
        pkt.extract(ethernet);
        transition select(ethernet.ether_type) {
            ETHERTYPE_IPV4 : parse_ipv4;
            ETHERTYPE_IPV6 : parse_ipv6;
            default        : accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(ipv4);
        // Ports only where they follow a plain header in the first fragment.
        transition select(ipv4.ihl, ipv4.frag_offset, ipv4.protocol) {
            (5, 0, IP_PROTO_TCP) : parse_l4;
            (5, 0, IP_PROTO_UDP) : parse_l4;
            default              : accept;
        }
    }
    state parse_ipv6 {
        pkt.extract(ipv6);
        transition select(ipv6.next_hdr) {
            IP_PROTO_TCP : parse_l4;
            IP_PROTO_UDP : parse_l4;
            default      : accept;
        }
    }
    state parse_l4 {
        pkt.extract(l4);
        transition accept;
    }
}

parser LinkemuParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t std) {
    FrameParser() frame_parser;

    state start {
        // A held packet was parsed on its first pass; later passes only read
        // its state, which keeps each pass of the hold loop cheap.
        transition select(std.instance_type) {
            INSTANCE_TYPE_RECIRC : parse_held;
            default              : parse_frame;
        }
    }
    state parse_held {
        pkt.extract(hdr.link.pkt);
        transition select(hdr.link.pkt.flags[22:22]) {   // PKT_FQ
            1       : parse_frame;
            default : accept;
        }
    }
    state parse_frame {
        frame_parser.apply(pkt, hdr.ethernet, hdr.ipv4, hdr.ipv6, hdr.l4);
        transition accept;
    }
}

control LinkemuDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.clock_stamp);
        pkt.emit(hdr.link.pkt);   // held: its state rides ahead of the frame
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv6);
        pkt.emit(hdr.l4);
    }
}

#endif
