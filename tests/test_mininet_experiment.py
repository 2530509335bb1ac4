"""A short real experiment, end to end: Mininet hosts, the switch, the
programs, captures, metrics, summary and plots."""

import csv
import json
import math
from pathlib import Path

import pytest
import yaml

from conftest import environment, mininet
from linkemu import cli
from linkemu.experiments.apps import page_objects
from linkemu.experiments.experiment import load_experiment

ROOT = Path(__file__).resolve().parent.parent
pytestmark = environment(mininet("tcpdump"))

# Link errors only: a queue that never fills, no ARQ, errors on the downlink.
LOSSY = {"name": "lossy-1mbit", "mtu": 1500,
         "downlink": {"rate": "1Mbit", "delay": "20ms", "queue": 1000},
         "uplink": {"rate": "1Mbit", "delay": "20ms", "queue": 1000},
         "link_states": {"seed": 1, "start": {"lossy": 1}, "states": {"lossy": {
             "error": {"downlink": 0.05, "uplink": 0},
             "duration": {"distribution": "static", "value": "1000s"},
             "next": {"lossy": 1}}}}}
# S-WWW's optimal GPRS link with room for the client's FIN, ACK and next SYN
# in the uplink queue: the study's queue of 1 drops one of them when they
# meet, and a lost SYN costs a 1 s timeout that the prediction leaves out.
GPRS = {"name": "gprs-q20", "mtu": 576,
        "downlink": {"rate": "64kbit", "delay": "300ms", "queue": 20},
        "uplink": {"rate": "64kbit", "delay": "300ms", "queue": 20}}
# One page, one connection at a time; a window that never limits the
# server, and no TCP options beyond the handshake's, so that the page's
# time follows from the link alone.
EXPERIMENT = {
    "name": "end-to-end", "profile_dir": str(ROOT / "profiles"),
    "profiles": ["gprs.yaml", "lossy.yaml"],
    "tcp": {"open": {"initcwnd": 100, "initrwnd": 100, "timestamps": False,
                     "sack": True, "congestion_control": "reno"}},
    "workloads": {"page": [{"app": "http", "page": "s+2s", "parallel": 1}],
                  "bulk": [{"app": "bulk", "bytes": 300_000}]},
    "matrix": [{"profile": ["gprs-q20"], "workload": ["page"]},
               {"profile": ["lossy-1mbit"], "workload": ["bulk"]}],
    "replications": 1, "run_timeout": "120s"}


def predicted_page_s(rate_bps, delay_s, main, inline, mss=536, header=40):
    """HTTP/1.0, one connection at a time, nothing lost, the whole response
    in one flight: per object SYN, SYN-ACK, ACK then the 350-byte request,
    the response's segments back to back, the server's FIN; the client's
    FIN goes out, then the next object's SYN. The page ends when the
    server's ACK of the last FIN reaches the client."""
    def tx(octets):
        return octets * 8 / rate_bps

    def connection(size):
        segments = math.ceil(size / mss)
        response = tx(size + segments * header)
        return (tx(52) + tx(52) + tx(header) + tx(header + 350) + response + tx(header)
                + 4 * delay_s)

    objects = [main] + inline
    return (sum(connection(size) for size in objects) + len(inline) * tx(header)
            + tx(header) + tx(header) + 2 * delay_s)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    folder = tmp_path_factory.mktemp("experiment")
    (folder / "lossy.yaml").write_text(yaml.safe_dump(LOSSY))
    (folder / "gprs.yaml").write_text(yaml.safe_dump(GPRS))
    file = folder / "end-to-end.yaml"
    file.write_text(yaml.safe_dump(EXPERIMENT))
    out = folder / "results"
    assert cli.main(["experiment", "run", str(file), "--out", str(out)]) == 0
    runs = {path.name: json.loads((path / "metrics.json").read_text())
            for path in (out / "runs").iterdir()}
    return file, out, runs


def test_every_run_completes_with_its_tcp_settings_read_back(finished):
    _, _, runs = finished
    assert set(runs) == {"gprs-q20_open_page_r00", "lossy-1mbit_open_bulk_r00"}
    for metrics in runs.values():
        assert metrics["status"] == "ok", metrics.get("error")
        for host in ("h1", "h2"):
            assert metrics["tcp"][host] == {"initcwnd": "100", "initrwnd": "100",
                                            "timestamps": "0", "sack": "1",
                                            "congestion_control": "reno"}


def test_page_response_time_is_what_rate_delay_and_handshakes_predict(finished):
    _, _, runs = finished
    page = runs["gprs-q20_open_page_r00"]["flows"][0]
    main, inline = page_objects("s+2s")
    predicted = predicted_page_s(64_000, 0.3, main, inline)
    assert page["connections_count"] == 3
    assert abs(page["response_s"] - predicted) <= 0.1 * predicted, \
        f"response {page['response_s']:.3f} s, predicted {predicted:.3f} s"
    assert all(c["down"]["retransmissions"] == 0 for c in page["connections"])


def test_losses_in_the_captures_are_the_link_errors_counted(finished):
    _, _, runs = finished
    bulk = runs["lossy-1mbit_open_bulk_r00"]
    drops, check = bulk["drops"], bulk["capture_check"]
    assert drops["downlink"]["link_error"] > 0
    assert drops["downlink"]["queue"] == drops["downlink"]["aqm"] == 0
    assert check["downlink"] == {"lost_in_captures": drops["downlink"]["link_error"],
                                 "dropped_by_switch": drops["downlink"]["link_error"],
                                 "agree": True}
    assert check["uplink"]["agree"] and check["uplink"]["lost_in_captures"] == 0
    connection = bulk["flows"][0]["connections"][0]
    # The data segments lost are the link's losses but for the few downlink
    # packets without data (SYN-ACK, pure ACKs, FIN) that errors may hit too.
    assert 0 <= drops["downlink"]["link_error"] - connection["down"]["lost"] <= 4
    assert connection["down"]["retransmissions"] >= connection["down"]["lost"]
    assert connection["down"]["bytes"] == 300_000
    assert bulk["flows"][0]["complete"]


def test_results_folder_has_summary_and_plots(finished):
    _, out, _ = finished
    summary = (out / "summary.md").read_text()
    assert "**complete**: 2 of 2 runs done" in summary
    assert "flow0.http.response_s" in summary and "flow0.bulk.throughput_bps" in summary
    assert "drops.downlink.link_error" in (out / "summary.csv").read_text()
    for run in ("gprs-q20_open_page_r00", "lossy-1mbit_open_bulk_r00"):
        folder = out / "runs" / run
        for plot in ("throughput.png", "queue.png", "time-sequence.png"):
            assert (folder / plot).stat().st_size > 1000
        assert not list(folder.glob("*.pcap"))  # keep_captures is off
    assert (out / "runs" / "lossy-1mbit_open_bulk_r00" / "timeline.csv").exists()
    assert not list((out / "runs").glob(".*"))  # no partial run left


def test_the_router_queue_is_sampled_through_the_run(finished):
    # The page's responses come in flights of up to 100 segments, which the
    # downlink's 20-packet queue holds (the rest dropped) while 64 kbit/s
    # drains it, one 576-byte packet per 72 ms.
    _, out, _ = finished
    with (out / "runs" / "gprs-q20_open_page_r00" / "queue.csv").open() as f:
        rows = list(csv.DictReader(f))
    downlink = [(int(r["packets"]), int(r["bytes"])) for r in rows
                if (r["direction"], r["class"]) == ("downlink", "best_effort")]
    assert len(downlink) > 100
    assert max(packets for packets, _ in downlink) >= 10
    assert all(0 <= packets <= 20 and octets <= 576 * packets for packets, octets in downlink)
    assert downlink[-1] == (0, 0)


def test_a_second_run_resumes_without_redoing_finished_runs(finished, capsys):
    file, out, runs = finished
    assert cli.main(["experiment", "run", str(file), "--out", str(out)]) == 0
    assert "all 2 runs are done" in capsys.readouterr().err
    again = json.loads((out / "runs" / "gprs-q20_open_page_r00" / "metrics.json")
                       .read_text())
    assert again == runs["gprs-q20_open_page_r00"]


def test_a_changed_experiment_file_is_not_mixed_into_old_results(finished, capsys):
    file, out, _ = finished
    changed = file.with_name("changed.yaml")
    changed.write_text(file.read_text().replace("replications: 1", "replications: 2"))
    assert load_experiment(changed).replications == 2
    assert cli.main(["experiment", "run", str(changed), "--out", str(out)]) == 1
    assert "different experiment file" in capsys.readouterr().err
