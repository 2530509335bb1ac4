"""The router's AQM and scheduler as the data plane computes them, for the
reference model (fidelity.model_due): COBALT (cobalt.p4) and flow isolation
(flow_queues.p4), replayed on captured arrivals."""

import zlib
from collections import deque

from ..switch.codes import byte_cost_q
from ..switch.entries.cobalt import (Q32, CobaltParams, decay_end, grid_count, inv_sqrt_q32,
                                     law_sum_q16, share)

ONE = 1 << 20     # the virtual clock's fraction bits (TIME_FRAC_BITS)
FQ_FLOWS = 1024   # flow queues per direction (flow_queues.p4)


class CobaltState:
    """A router queue's COBALT, as cobalt.p4 computes it, with the decay loop
    run step by step on the law's grid. BLUE's drops are random draws, which
    the model leaves out: a frame BLUE drops counts as an unexpected drop."""

    def __init__(self, params):
        self.p = params
        self.count, self.dropping, self.drop_next = 0, False, 0
        self.p_drop, self.blue_timer = 0, 0

    def overflow(self, now_us):
        if now_us - self.blue_timer > self.p.target_us:
            self.p_drop = min(Q32 - 1, self.p_drop + (1 << 24))
            self.blue_timer = now_us
        self.dropping, self.drop_next = True, now_us
        self.count = max(self.count, 1)

    def found_empty(self, now_us):
        if self.p_drop and now_us - self.blue_timer > self.p.target_us:
            self.p_drop = max(0, self.p_drop - (1 << 20))
            self.blue_timer = now_us

    def emptied(self, now_us):
        """A flow queue found empty when the scheduler comes to it: BLUE's
        event, and the end of CoDel's episode with a step of its decay."""
        self.found_empty(now_us)
        self.dropping = False
        if self.count and now_us - self.drop_next >= 0:
            previous = grid_count(self.count) - 1
            self.count -= 1
            self.drop_next += (self.p.interval_us * inv_sqrt_q32(max(previous, 0))) >> 32

    def leaves(self, arrival_us, leave_us, capable):
        """"pass", "mark" or "drop" for a packet leaving the queue at leave_us."""
        interval = self.p.interval_us
        count = grid_count(self.count)
        elapsed = leave_us - self.drop_next
        late = elapsed > 0
        next_due = self.count != 0 and elapsed >= 0
        verdict = "pass"
        if leave_us - arrival_us > self.p.threshold_us:
            if not self.dropping:
                self.dropping = True
                self.drop_next = leave_us + ((interval * inv_sqrt_q32(count)) >> 32)
            self.count = max(self.count, 1)
        else:
            self.dropping = False
        if next_due and self.dropping:
            verdict = "mark" if capable and self.p.ecn else "drop"
            self.count = min(self.count + 1, Q32 - 1)
            self.drop_next += (interval * inv_sqrt_q32(count + 1)) >> 32
            late = leave_us - self.drop_next > 0
        elif next_due:
            left = law_sum_q16(count) - ((elapsed * self.p.per_interval_q32()) >> 16)
            self.count = decay_end(left) if left > 0 else 0
            if self.count:
                self.drop_next += (interval * (law_sum_q16(count) -
                                               law_sum_q16(self.count))) >> 16
                late = leave_us - self.drop_next > 0
        if self.count == 0:
            self.drop_next = leave_us + interval
        elif late and verdict != "drop":
            self.drop_next = leave_us
        return verdict



def ecn_capable(data):
    """Whether an Ethernet frame carries an ECN-capable IP packet."""
    ether_type = int.from_bytes(data[12:14], "big") if len(data) >= 14 else None
    if ether_type == 0x0800 and len(data) >= 34:
        return data[15] & 3 != 0
    if ether_type == 0x86dd and len(data) >= 54:
        return (data[15] >> 4) & 3 != 0
    return False


def _five_tuple(data):
    """(source, destination, protocol, ports) of an Ethernet frame's IP
    packet as the parser reads them (ports zero where it finds none), or
    None for a frame that is not IP."""
    ether_type = int.from_bytes(data[12:14], "big") if len(data) >= 14 else None
    if ether_type == 0x0800 and len(data) >= 34:
        src, dst, protocol, l4 = data[26:30], data[30:34], data[23], 34
        plain_first = data[14] & 0x0f == 5 and int.from_bytes(data[20:22], "big") & 0x1fff == 0
        if not plain_first:
            l4 = None
    elif ether_type == 0x86dd and len(data) >= 54:
        src, dst, protocol, l4 = data[22:38], data[38:54], data[20], 54
    else:
        return None
    ports = bytes(4)
    if l4 is not None and protocol in (6, 17) and len(data) >= l4 + 4:
        ports = data[l4:l4 + 4]
    return bytes(src), bytes(dst), protocol, bytes(ports)


def flow_of(data):
    """The flow queue of an Ethernet frame: crc32 of its 5-tuple mod
    FQ_FLOWS, as the data plane hashes it (flow 0 for a frame not IP)."""
    fields = _five_tuple(data)
    if fields is None:
        return 0
    src, dst, protocol, ports = fields
    return zlib.crc32(src + dst + bytes([protocol]) + ports) % FQ_FLOWS


def hosts_of(data):
    """(sender, receiver) host of an Ethernet frame for triple-isolate: crc32
    of each address mod FQ_FLOWS (0 for a frame not IP)."""
    fields = _five_tuple(data)
    if fields is None:
        return 0, 0
    return zlib.crc32(fields[0]) % FQ_FLOWS, zlib.crc32(fields[1]) % FQ_FLOWS


def _ceil_us(q):
    return -(-q // ONE)


class _FlowQueue:
    def __init__(self, cobalt, hosts):
        self.packets = deque()   # (index, arrival us, octets, ECN-capable)
        self.deficit = 0
        self.listed = None       # "new", "old" or None
        self.cobalt = cobalt
        self.hosts = hosts       # (sender, receiver)
        self.bulk = False        # in its hosts' loads


def flow_queue_dues(arrivals, direction, marked=None):
    """Due instant (s) of each arriving frame through a direction with flow
    isolation, or None where it is dropped: fq_codel's DRR++ over flow
    queues with the direction's quantum, each with its COBALT, the
    link taking the next packet when it frees (flow_queues.p4). The lists
    start afresh when a packet comes to an idle link. With triple-isolate a
    flow's quantum is shared by the bulk flows of its busier host."""
    cost = byte_cost_q(direction.rate_bps)
    quantum = direction.cobalt.quantum(direction.overhead_bytes)
    by_hosts = direction.cobalt.isolation == "triple-isolate"
    params = CobaltParams.of(direction.cobalt, direction.rate_bps, direction.overhead_bytes)
    flows, lists = {}, {"new": deque(), "old": deque()}
    loads = {"src": {}, "dst": {}}   # host -> bulk flows
    dues = [None] * len(arrivals)
    link_free, backlog = 0, 0

    def flow_share(flow):
        if not by_hosts:
            return quantum
        load = max(1, loads["src"].get(flow.hosts[0], 0), loads["dst"].get(flow.hosts[1], 0))
        return share(quantum, load)

    def count_bulk(flow, change):
        flow.bulk = change > 0
        for side, host in zip(("src", "dst"), flow.hosts):
            loads[side][host] = loads[side].get(host, 0) + change

    def step():
        """One scheduling decision once the link is free; False when none waits."""
        nonlocal link_free, backlog
        listed = "new" if lists["new"] else "old"
        if not lists[listed]:
            return False
        flow = flows[lists[listed][0]]
        if flow.deficit <= 0:
            if by_hosts and flow.packets and not flow.bulk:
                count_bulk(flow, +1)
            flow.deficit += flow_share(flow)
            lists["old"].append(lists[listed].popleft())
            flow.listed = "old"
        elif not flow.packets:
            key = lists[listed].popleft()
            if listed == "new" and lists["old"]:
                lists["old"].append(key)
                flow.listed = "old"
            else:
                flow.listed = None
            if flow.bulk:
                count_bulk(flow, -1)
            flow.cobalt.emptied(_ceil_us(link_free))
        else:
            index, arrival_us, octets, capable = flow.packets.popleft()
            backlog -= 1
            start = max(link_free, arrival_us * ONE)
            verdict = flow.cobalt.leaves(arrival_us, _ceil_us(start), capable)
            if verdict == "drop" and flow.packets:
                return True
            link_free = start + octets * cost
            flow.deficit -= octets
            dues[index] = (_ceil_us(link_free) + direction.delay_us) / 1e6
            if verdict == "mark" and marked is not None:
                marked.append(index)
        return True

    def catch_up(now_us):
        while backlog and link_free <= now_us * ONE and step():
            pass

    for index, frame in enumerate(arrivals):
        now_us = round(frame.ts * 1e6)
        catch_up(now_us)
        if not backlog and link_free <= now_us * ONE:   # idle: the lists start afresh
            for listed in lists.values():
                listed.clear()
            for stale in flows.values():
                stale.listed, stale.bulk = None, False
            loads = {"src": {}, "dst": {}}
        key = flow_of(frame.data)
        flow = flows.setdefault(key, _FlowQueue(CobaltState(params), hosts_of(frame.data)))
        if backlog >= direction.queue_packets:
            flow.cobalt.overflow(now_us)
            continue
        octets = max(frame.length - 14, 0) + direction.overhead_bytes
        flow.packets.append((index, now_us, octets, ecn_capable(frame.data)))
        backlog += 1
        if flow.listed is None:
            flow.hosts, flow.bulk = hosts_of(frame.data), False
            flow.listed, flow.deficit = "new", flow_share(flow)
            lists["new"].append(key)
        catch_up(now_us)
    while backlog and step():
        pass
    return dues
