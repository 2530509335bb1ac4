"""The metrics of one run, from its captures, client logs and the switch's
counters.

Captures are taken on the switch's port of each host: a host's capture shows
what it sent before the link and what it received after it, all on one
clock. The TCP client of every flow is the flow's `client` host.
"""

import csv
import json
from collections import defaultdict
from dataclasses import asdict

from ..drivers import event_log
from ..switch.codes import DIRECTION_IDS
from . import flows
from .experiment import flow_label

# Counter -> cause, as reported per direction.
DROP_CAUSES = {"drop_queue": "queue", "drop_aqm": "aqm", "drop_aqm_ect": "aqm_ect",
               "ecn_marks": "ecn_marks", "ramp_marks": "ramp_marks",
               "drop_codel": "codel", "drop_blue": "blue", "cobalt_marks": "cobalt_marks",
               "drop_link_error": "link_error", "drop_loss_model": "loss_model",
               "drop_hold": "hold_full",
               "retransmissions": "arq_retransmissions"}
# What the switch drops between a frame's arrival and its delivery.
LOST_ON_THE_WAY = ("drop_queue", "drop_aqm", "drop_codel", "drop_blue", "drop_link_error",
                   "drop_loss_model", "drop_hold")
TCP_TOTALS = ("retransmissions", "spurious_retransmissions", "spurious_timeouts",
              "dup_acks", "lost", "ce_marks")


def compute(experiment, run, work, info):
    """(metrics for metrics.json, detail for the plots)."""
    addresses = info["addresses"]
    packets = {host: flows.read_packets(work / f"{host}.pcap") for host in addresses}
    flow_metrics, scalars, connections_by_flow = [], {}, {}
    for index, flow in enumerate(experiment.workloads[run.workload]):
        port = info["ports"][index]
        label = flow_label(index, flow)
        result = {"flow": index, "app": flow.app, "server": flow.server,
                  "client": flow.client, "port": port, "start_s": flow.start_s}
        if flow.app == "udp":
            result.update(_udp(packets, addresses, flow, port, scalars, label))
        else:
            connections = [c for c in flows.tcp_connections(packets[flow.client],
                                                            packets[flow.server])
                           if c.server == (addresses[flow.server], port)]
            connections_by_flow[index] = connections
            result["connections"] = [_connection(c) for c in connections]
            if flow.app == "http":
                result.update(_page(connections, scalars, label))
            elif flow.app == "bulk":
                result.update(_bulk(connections, scalars, label))
            else:
                result.update(_iperf(work / f"flow{index}.json", flow, scalars, label))
        flow_metrics.append(result)
    _fairness(experiment.workloads[run.workload], flow_metrics, scalars)
    _tcp_totals(connections_by_flow, scalars)
    drops = _drops(info["counters"], scalars)
    check = _capture_check(experiment, packets, addresses, info["counters"])
    metrics = {"start_unix": info["start_unix"], "end_unix": info["end_unix"],
               "tcp": info["tcp"], "flows": flow_metrics, "drops": drops,
               "capture_check": check,
               "link_states": _states(work / "timeline.csv",
                                      info["end_unix"] - info["start_unix"]),
               "counters": info["counters"], "scalars": scalars}
    if experiment.event_log is not None:
        metrics["event_log"] = _event_log(work / "events.csv", experiment.event_log, scalars)
    detail = {"packets": packets, "addresses": addresses, "ports": info["ports"],
              "connections": connections_by_flow}
    return metrics, detail


def _event_log(path, check, scalars):
    """Outcomes per cause and the release-time check of the run's event log."""
    events = event_log.read_events(path)
    timing = event_log.check_timing(events, check.threshold_us, check.within)
    if timing.released:
        scalars["release_error_p99_ms"] = timing.p99_us / 1e3
        scalars["release_error_max_ms"] = timing.max_us / 1e3
    return {"events": len(events), "sample": check.sample,
            "outcomes": event_log.outcomes(events),
            "timing": timing.as_dict()}


def _connection(c):
    """A connection's metrics without its per-segment events."""
    def data(stats):
        return {k: v for k, v in asdict(stats).items() if k not in ("segments", "acks")}
    return {"client": list(c.client), "server": list(c.server), "syn_unix": c.syn_unix,
            "server_fin_unix": c.server_fin_unix, "fin_ack_unix": c.fin_ack_unix,
            "elapsed_s": c.elapsed_s, "throughput_bps": c.throughput_bps,
            "down": data(c.down), "up": data(c.up)}


def _page(connections, scalars, label):
    """Response time of the page: first SYN to the ACK of the client's last
    FIN, at the client (S-WWW); also to the last server FIN (S-MIX2). Its
    in-line connections ranked by throughput, fastest first."""
    result = {"connections_count": len(connections)}
    complete = bool(connections) and all(c.complete for c in connections)
    first_syn = min((c.syn_unix for c in connections), default=None)
    if complete:
        result["response_s"] = max(c.fin_ack_unix for c in connections) - first_syn
        scalars[f"{label}.response_s"] = result["response_s"]
    if connections and all(c.server_fin_unix for c in connections):
        result["response_server_fin_s"] = max(c.server_fin_unix for c in connections) - first_syn
        scalars[f"{label}.response_server_fin_s"] = result["response_server_fin_s"]
    scalars[f"{label}.connections"] = len(connections)
    inline = sorted(connections, key=lambda c: c.syn_unix)[1:]
    ranked = sorted((c.throughput_bps for c in inline if c.complete), reverse=True)
    for rank, throughput in enumerate(ranked, 1):
        scalars[f"{label}.rank{rank}_throughput_bps"] = throughput
    return result


def _bulk(connections, scalars, label):
    """Elapsed time, throughput, and the connection's segments lost on the
    link (both directions)."""
    if len(connections) != 1 or not connections[0].complete:
        return {"complete": False}
    c = connections[0]
    scalars[f"{label}.elapsed_s"] = c.elapsed_s
    scalars[f"{label}.throughput_bps"] = c.throughput_bps
    scalars[f"{label}.lost"] = c.down.lost + c.up.lost
    return {"complete": True, "elapsed_s": c.elapsed_s, "throughput_bps": c.throughput_bps}


def _iperf(report_path, flow, scalars, label):
    """iperf3's own report: goodput, retransmissions and the RTT it samples
    from the sender's socket (tcp_info)."""
    end = json.loads(report_path.read_text())["end"]
    if flow.udp_rate_bps is None:
        streams = [s["receiver"]["bits_per_second"] for s in end["streams"]]
        result = {"throughput_bps": end["sum_received"]["bits_per_second"],
                  "retransmits": end["sum_sent"].get("retransmits"),
                  "mean_rtt_ms": (sum(s["sender"]["mean_rtt"] for s in end["streams"])
                                  / len(end["streams"]) / 1e3),
                  "stream_throughputs_bps": streams}
    else:  # UDP
        streams = [s["udp"]["bits_per_second"] for s in end["streams"]]
        result = {"throughput_bps": end["sum"]["bits_per_second"],
                  "lost_percent": end["sum"]["lost_percent"],
                  "jitter_ms": end["sum"]["jitter_ms"], "stream_throughputs_bps": streams}
    for key in ("throughput_bps", "retransmits", "mean_rtt_ms", "lost_percent", "jitter_ms"):
        if result.get(key) is not None:
            scalars[f"{label}.{key}"] = result[key]
    if len(streams) > 1:
        result["jain"] = scalars[f"{label}.jain"] = flows.jain_index(streams)
    return result


def _udp(packets, addresses, flow, port, scalars, label):
    """The stream as its receiver got it: throughput over the receive
    interval, inter-arrival spacing of consecutive packets."""
    found = [f for f in flows.udp_flows(packets[flow.client], packets[flow.server])
             if f.dst == addresses[flow.server] and f.dport == port]
    if not found:
        return {"sent": 0}
    f = found[0]
    spacing = f.spacing_summary()
    result = {"sent": f.sent, "received": f.received, "lost": f.lost,
              "received_bytes": f.received_bytes, "throughput_bps": f.throughput_bps,
              "spacing_s": spacing}
    scalars[f"{label}.lost"] = f.lost
    if f.throughput_bps is not None:
        scalars[f"{label}.throughput_bps"] = f.throughput_bps
    for key, value in spacing.items():
        scalars[f"{label}.spacing_{key}_s"] = value
    return result


def _fairness(workload, flow_metrics, scalars):
    """Jain's index over the TCP flows of one kind (bulk or iperf) that start
    together, two or more; for bulk flows also the first and the last to
    complete (the studies report mixtures by their fastest and slowest
    transfer) and the gap between them."""
    groups = defaultdict(list)
    for flow, result in zip(workload, flow_metrics):
        tcp = flow.app == "bulk" or (flow.app == "iperf" and flow.udp_rate_bps is None)
        if tcp and result.get("throughput_bps") is not None:
            groups[flow.app, flow.start_s].append(result)
    for (app, start), results in groups.items():
        if len(results) < 2:
            continue
        label = f"fairness.{app}_start_{start:g}s"
        scalars[f"{label}.jain"] = flows.jain_index([r["throughput_bps"] for r in results])
        if app == "bulk":
            elapsed = [r["elapsed_s"] for r in results]
            scalars[f"{label}.fastest_elapsed_s"] = min(elapsed)
            scalars[f"{label}.slowest_elapsed_s"] = max(elapsed)
            scalars[f"{label}.completion_gap_s"] = max(elapsed) - min(elapsed)


def _tcp_totals(connections_by_flow, scalars):
    for name in TCP_TOTALS:
        scalars[f"tcp.{name}"] = sum(getattr(c.down, name) + getattr(c.up, name)
                                     for connections in connections_by_flow.values()
                                     for c in connections)


def _drops(counters, scalars):
    drops = {}
    for direction in DIRECTION_IDS:
        drops[direction] = {cause: counters[name][direction][0]
                            for name, cause in DROP_CAUSES.items()}
        for cause, value in drops[direction].items():
            scalars[f"drops.{direction}.{cause}"] = value
    return drops


def _capture_check(experiment, packets, addresses, counters):
    """Packets the captures show entering the link and never leaving it,
    against what the switch counted as dropped, per direction. They agree
    unless something other than TCP/UDP over IPv4 was dropped."""
    fixed = [h for h in experiment.hosts if experiment.side(h) == "fixed"]
    mobile = [h for h in experiment.hosts if experiment.side(h) == "mobile"]
    check = {}
    for direction, senders, receivers in (("downlink", fixed, mobile),
                                          ("uplink", mobile, fixed)):
        lost = sum(flows.link_losses(packets[s], packets[r], addresses[s], addresses[r])
                   for s in senders for r in receivers)
        counted = sum(counters[name][direction][0] for name in LOST_ON_THE_WAY)
        check[direction] = {"lost_in_captures": lost, "dropped_by_switch": counted,
                            "agree": lost == counted}
    return check


def _states(timeline_path, duration_s):
    """The link-state timeline applied during the run (its first
    `duration_s`), and how late the changes were applied."""
    if not timeline_path.exists():
        return None
    with open(timeline_path, newline="") as f:
        rows = list(csv.DictReader(f))
    time_in_state = defaultdict(float)
    for row in rows:
        time_in_state[row["state"]] += max(0.0, min(float(row["end_s"]), duration_s)
                                           - float(row["start_s"]))
    latencies = [float(r["latency_ms"]) for r in rows]
    return {"changes": len(rows), "time_in_state_s": dict(time_in_state),
            "max_latency_ms": max(latencies, default=None)}
