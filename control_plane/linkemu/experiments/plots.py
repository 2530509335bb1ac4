"""PNG plots of one run: throughput over time, router queue with the
link-state timeline, and the time-sequence graph of a connection."""

import csv
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from . import flows  # noqa: E402

STATE_COLOURS = ("#ffffff", "#f4c7c3", "#fce8b2", "#d2e3fc", "#ceead6")


def run_plots(work, metrics, detail):
    start = metrics["start_unix"]
    throughput(work / "throughput.png", metrics, detail, start)
    queue(work / "queue.png", work / "queue.csv", work / "timeline.csv", start)
    connection = _most_eventful(detail["connections"])
    if connection is not None:
        time_sequence(work / "time-sequence.png", connection, start)


def _save(figure, path):
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def throughput(path, metrics, detail, start):
    """Received throughput of every flow, in bins of about 1/100 of the run."""
    duration = metrics["end_unix"] - start
    bin_s = max(0.1, round(duration / 100, 1))
    figure, axes = plt.subplots(figsize=(8, 3.5))
    for flow in metrics["flows"]:
        sender = detail["addresses"][flow["server"] if flow["app"] in ("http", "bulk")
                                     else flow["client"]]
        receiver = detail["addresses"][flow["client"] if flow["app"] in ("http", "bulk")
                                       else flow["server"]]
        receiving_host = flow["client"] if flow["app"] in ("http", "bulk") else flow["server"]
        port = flow["port"]
        own = [p for p in detail["packets"][receiving_host] if port in (p.sport, p.dport)]
        series = flows.throughput_series(own, sender, receiver, bin_s=bin_s, start=start)
        if series:
            times, rates = zip(*series)
            axes.step(times, [r / 1e3 for r in rates], where="post",
                      label=f"flow {flow['flow']} ({flow['app']})")
    axes.set_xlabel("time since the run started (s)")
    axes.set_ylabel(f"received (kbit/s, {bin_s:g} s bins)")
    axes.set_xlim(left=0)
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize="small")
    _save(figure, path)


def _read_csv(path):
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def queue(path, queue_csv, timeline_csv, start):
    """Router queue length per direction, over the link states (shaded)."""
    figure, axes = plt.subplots(figsize=(8, 3.5))
    samples = defaultdict(lambda: defaultdict(int))
    for row in _read_csv(queue_csv):
        samples[row["direction"]][float(row["time_unix"]) - start] += int(row["packets"])
    for direction, by_time in samples.items():
        times = sorted(by_time)
        axes.step(times, [by_time[t] for t in times], where="post", label=direction)
    states = _read_csv(timeline_csv)
    names = sorted({row["state"] for row in states})
    shaded = set()
    for row in states:
        begin = float(row["applied_unix"]) - start
        end = begin + float(row["end_s"]) - float(row["start_s"])
        colour = STATE_COLOURS[names.index(row["state"]) % len(STATE_COLOURS)]
        label = None if row["state"] in shaded else f"state {row['state']}"
        shaded.add(row["state"])
        axes.axvspan(max(begin, 0), end, color=colour, alpha=0.6, lw=0, label=label)
    axes.set_xlabel("time since the run started (s)")
    axes.set_ylabel("router queue (packets)")
    axes.set_xlim(left=0, right=max([t for d in samples.values() for t in d] or [1]))
    axes.legend(fontsize="small")
    _save(figure, path)


def _most_eventful(connections_by_flow):
    """The connection with the most retransmissions (the longest on a tie)."""
    connections = [c for cs in connections_by_flow.values() for c in cs]
    if not connections:
        return None
    return max(connections, key=lambda c: (c.down.retransmissions + c.up.retransmissions,
                                           c.down.bytes))


def time_sequence(path, connection, start):
    """Data sent by the server, as its sender saw it: segments, retransmitted
    ones and those lost on the link marked; the ACKs coming back."""
    figure, axes = plt.subplots(figsize=(8, 4.5))
    styles = {"sent": dict(marker="|", color="tab:blue", label="sent"),
              "retransmitted": dict(marker="x", color="tab:orange", label="retransmitted"),
              "lost": dict(marker="X", color="tab:red", label="lost on the link")}
    for kind, style in styles.items():
        events = [e for e in connection.down.segments if e.kind == kind]
        if events:
            axes.scatter([e.ts - start for e in events], [e.seq_offset / 1e3 for e in events],
                         s=18, **style)
    if connection.down.acks:
        times, acks = zip(*connection.down.acks)
        axes.step([t - start for t in times], [a / 1e3 for a in acks], where="post",
                  color="tab:green", lw=0.8, label="acknowledged")
    client, server = connection.client, connection.server
    axes.set_title(f"{server[0]}:{server[1]} → {client[0]}:{client[1]}", fontsize="small")
    axes.set_xlabel("time since the run started (s)")
    axes.set_ylabel("sequence (kB from the first byte)")
    axes.legend(fontsize="small")
    _save(figure, path)
