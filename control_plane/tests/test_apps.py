"""The traffic programs, run for real as subprocesses over the loopback interface."""

import json
import socket
import socketserver
import statistics
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from linkemu.experiments import apps

APPS = [sys.executable, "-m", "linkemu.experiments.apps"]
LOOPBACK = "127.0.0.1"


def free_port(kind=socket.SOCK_STREAM):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def run_app(*args, timeout=10):
    return subprocess.run(APPS + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout)


def wait_until(ready, process, failure="server did not start"):
    deadline = time.monotonic() + 5
    while not ready():
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, failure
        time.sleep(0.02)


def tcp_listening(port):
    def ready():
        try:
            socket.create_connection((LOOPBACK, port), timeout=1).close()
            return True
        except ConnectionRefusedError:
            return False
    return ready


def udp_bound(port):
    def ready():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.bind((LOOPBACK, port))
                return False
            except OSError:
                return True
    return ready


def udp_read(port, process):
    """Whether `process` has read everything sent to its loopback UDP `port`:
    the socket's receive queue (/proc/net/udp) is empty and the process is
    asleep again, in its next recv rather than between a recv and its record."""
    def ready():
        for line in Path("/proc/net/udp").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[1] == f"0100007F:{port:04X}":
                queued = int(fields[4].split(":")[1], 16)
                state = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                return queued == 0 and state == "S"
        return False
    return ready


@contextmanager
def server(*args, ready):
    """A server subprocess, stopped by SIGTERM; it must then exit 0 having said nothing."""
    process = subprocess.Popen(APPS + [str(a) for a in args], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        wait_until(ready, process)
        yield process
    finally:
        process.terminate()
        try:
            _, stderr = process.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise
    assert (process.returncode, stderr) == (0, "")


@pytest.fixture
def http_port():
    port = free_port()
    with server("http-server", "--bind", LOOPBACK, "--port", port, ready=tcp_listening(port)):
        yield port


def fetch_page(port, tmp_path, page, http, *extra):
    out = tmp_path / "page.json"
    result = run_app("http-client", "--server", LOOPBACK, "--port", port, "--page", page,
                     "--http", http, "--out", out, *extra)
    assert result.returncode == 0, result.stderr
    return json.loads(out.read_text())


def test_page_objects():
    assert apps.page_objects("s+8m") == (6288, [8384] * 8)
    with pytest.raises(ValueError, match=r"'xl'.*s\+2s, s\+2m"):
        apps.page_objects("xl")


def test_http10_page_uses_one_connection_per_object(http_port, tmp_path):
    page = fetch_page(http_port, tmp_path, "s+2m", "1.0")
    assert (page["page"], page["http"]) == ("s+2m", "1.0")
    connections = page["connections"]
    assert [c["objects"] for c in connections] == [[6288], [8384], [8384]]
    assert len({c["local_port"] for c in connections}) == 3
    assert page["start_unix"] == connections[0]["connect_unix"]
    assert page["end_unix"] == max(c["done_unix"] for c in connections)
    assert all(c["connect_unix"] <= c["done_unix"] for c in connections)


def most_open(connections):
    """The most connections open at once by the client's own records: each
    one's interval holds its socket's life, and a connection starts only
    after the one whose slot it takes has recorded its end."""
    return max(sum(o["connect_unix"] <= c["connect_unix"] < o["done_unix"] for o in connections)
               for c in connections)


class HeldPage(socketserver.ThreadingTCPServer):
    """HTTP/1.0 that sends each response's head at once and holds its body
    until `parallel` requests, or all the unanswered ones, wait; then it
    answers the oldest and waits for the client to close that connection
    before it answers another. A wait longer than 5 s closes the connection
    without the body (`stuck`), so that a wrong client fails, not hangs."""

    daemon_threads = True

    def __init__(self, objects, parallel):
        super().__init__((LOOPBACK, 0), HeldHandler)
        self.unanswered = objects
        self.parallel = parallel
        self.held = []           # handlers, oldest first
        self.answering = False
        self.answers = []        # the sizes held when each body went out
        self.most_held = 0
        self.stuck = None
        self.changed = threading.Condition()


class HeldHandler(socketserver.BaseRequestHandler):
    def my_turn(self):
        page = self.server
        return (page.held[0] is self and not page.answering
                and len(page.held) >= min(page.parallel, page.unanswered))

    def handle(self):
        page = self.server
        self.size = int(read_heads(self.request, 1).split(b" ")[1][1:])
        head, body = apps.response_head("HTTP/1.0", self.size, close=True)
        # Held before its head goes out: the head is the first data that lets
        # the client open the next connection, whose request is then held
        # after this one.
        with page.changed:
            page.held.append(self)
            page.most_held = max(page.most_held, len(page.held))
            page.changed.notify_all()
        self.request.sendall(head)
        with page.changed:
            if not page.changed.wait_for(self.my_turn, timeout=5):
                page.stuck = [handler.size for handler in page.held]
                return
            page.answers.append([handler.size for handler in page.held])
            page.held.pop(0)
            page.answering = True
        self.request.sendall(b"x" * body)
        apps.close_gracefully(self.request)
        with page.changed:
            page.answering = False
            page.unanswered -= 1
            page.changed.notify_all()


@pytest.mark.parametrize("parallel", [1, 2, 4])
def test_http10_inline_connections_start_at_the_main_objects_first_data(tmp_path, parallel):
    """The main object's body is held until `parallel` connections are open:
    the in-line ones must start while it arrives, and no more than that."""
    with HeldPage(1 + 8, parallel) as held:
        threading.Thread(target=held.serve_forever, args=(0.05,), daemon=True).start()
        try:
            result = run_app("http-client", "--server", LOOPBACK, "--port",
                             held.server_address[1], "--page", "m+8m", "--http", "1.0",
                             "--parallel", parallel, "--out", tmp_path / "page.json",
                             "--timeout", 10, timeout=20)
        finally:
            held.shutdown()
    assert (held.stuck, result.returncode) == (None, 0), result.stderr
    assert held.answers[0] == [12576] + [8384] * (parallel - 1)
    assert held.most_held == parallel
    main, *inline = json.loads((tmp_path / "page.json").read_text())["connections"]
    assert main["objects"] == [12576] and [c["objects"] for c in inline] == [[8384]] * 8
    assert [c["connect_unix"] < main["done_unix"] for c in inline] == \
        [True] * (parallel - 1) + [False] * (9 - parallel)
    assert most_open([main, *inline]) == parallel


def test_http10_page_fails_with_an_object_and_starts_no_more(monkeypatch):
    started = []

    def fetch(server, port, size, deadline, first_data=None):
        started.append(size)
        if first_data:
            first_data()
        if size == 2:
            raise apps.AppError("object /2 failed")
        return apps.connection_record(1, [size], time.time())

    monkeypatch.setattr(apps, "fetch_closing", fetch)
    with pytest.raises(apps.AppError, match="/2 failed"):
        apps.fetch_page_closing(LOOPBACK, 80, 100, [1, 2, 3, 4], 1, "first-data",
                                time.monotonic() + 5)
    assert started == [100, 1, 2]


class SlowHandler(socketserver.BaseRequestHandler):
    """Answers one HTTP/1.0 request after 0.1 s, so that connections overlap."""

    def handle(self):
        size = int(read_heads(self.request, 1).split(b" ")[1][1:])
        time.sleep(0.1)
        head, body = apps.response_head("HTTP/1.0", size, close=True)
        self.request.sendall(head + b"x" * body)


@pytest.mark.parametrize("parallel", [None, 2])
def test_http10_main_complete_starts_inline_objects_after_main(tmp_path, parallel):
    with socketserver.ThreadingTCPServer((LOOPBACK, 0), SlowHandler) as slow:
        threading.Thread(target=slow.serve_forever, args=(0.05,), daemon=True).start()
        try:
            page = fetch_page(slow.server_address[1], tmp_path, "l+8m", "1.0",
                              "--inline", "main-complete",
                              *(["--parallel", parallel] if parallel else []))
        finally:
            slow.shutdown()
    main, *inline = page["connections"]
    assert main["objects"] == [71788] and [c["objects"] for c in inline] == [[8384]] * 8
    assert all(c["connect_unix"] >= main["done_unix"] for c in inline)
    assert most_open(inline) == (parallel or 4)


def test_http11_page_on_one_persistent_connection(http_port, tmp_path):
    page = fetch_page(http_port, tmp_path, "m+8m", "1.1")
    [connection] = page["connections"]
    assert connection["objects"] == [12576] + [8384] * 8
    assert (page["start_unix"], page["end_unix"]) == (connection["connect_unix"],
                                                      connection["done_unix"])


def read_heads(conn, count):
    """The bytes received up to the end of the `count`-th request head."""
    received = b""
    while received.count(b"\r\n\r\n") < count:
        data = conn.recv(4096)
        assert data, "client closed early"
        received += data
    return received


@pytest.mark.parametrize("http", ["1.0", "1.1"])
def test_requests_are_350_bytes_on_the_wire(tmp_path, http):
    """A stand-in server answers the main request of s+2s (HTTP/1.1) and then
    hangs up: the client must send 350-byte requests and report the failure."""
    with socket.socket() as listener:
        listener.bind((LOOPBACK, 0))
        listener.listen()
        listener.settimeout(5)
        port = listener.getsockname()[1]
        client = subprocess.Popen(
            APPS + ["http-client", "--server", LOOPBACK, "--port", str(port), "--page", "s+2s",
                    "--http", http, "--out", str(tmp_path / "page.json")],
            stderr=subprocess.PIPE, text=True)
        try:
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(5)
                main_request = read_heads(conn, 1)
                if http == "1.1":
                    head, body = apps.response_head("HTTP/1.1", 6288, close=False)
                    conn.sendall(head + b"x" * body)
                    pipelined = read_heads(conn, 2)
            _, stderr = client.communicate(timeout=5)
        finally:
            client.kill()
            client.wait()
    assert len(main_request) == 350
    assert main_request.startswith(f"GET /6288 HTTP/{http}\r\n".encode())
    if http == "1.1":
        assert len(pipelined) == 700
        assert pipelined[:350].startswith(b"GET /2096 HTTP/1.1\r\n")
        assert pipelined[350:].startswith(b"GET /2096 HTTP/1.1\r\n")
    assert client.returncode != 0
    assert ("expected 6288 bytes" if http == "1.0" else "closed the connection") in stderr
    assert not (tmp_path / "page.json").exists()


def exchange(port, request):
    """Sends raw bytes and returns everything the server sends until it closes."""
    with socket.create_connection((LOOPBACK, port), timeout=5) as conn:
        conn.sendall(request)
        received = b""
        while data := conn.recv(65536):
            received += data
    return received


@pytest.mark.parametrize("request_bytes, reason", [
    (b"NONSENSE\r\n\r\n", b"malformed request line"),
    (b"GET /abc HTTP/1.1\r\n\r\n", b"is not /<response size in bytes>"),
    (b"GET /10 HTTP/1.0\r\n\r\n", b"size 10 is smaller than"),
    (b"GET /100 HTTP/1.1\r\nno colon\r\n\r\n", b"malformed header line"),
])
def test_bad_requests_get_400_and_the_server_keeps_serving(http_port, request_bytes, reason):
    response = exchange(http_port, request_bytes)
    assert response.startswith(b"HTTP/1.1 400 Bad Request\r\n") and reason in response
    assert len(exchange(http_port, b"GET /3000 HTTP/1.0\r\n\r\n")) == 3000


def test_http11_pipelined_requests_until_connection_close(http_port):
    response = exchange(http_port, b"GET /500 HTTP/1.1\r\n\r\n"
                                   b"GET /700 HTTP/1.1\r\nConnection: close\r\n\r\n")
    assert len(response) == 1200
    assert response[500:].startswith(b"HTTP/1.1 200 OK\r\nConnection: close\r\n")


def test_client_reports_refused_connection_and_timeout(tmp_path):
    port = free_port()
    result = run_app("http-client", "--server", LOOPBACK, "--port", port, "--page", "s+2s",
                     "--http", "1.0", "--out", tmp_path / "page.json")
    assert result.returncode == 1 and f"{LOOPBACK}:{port} refused" in result.stderr
    with socket.socket() as silent:  # accepts into its backlog, never answers
        silent.bind((LOOPBACK, 0))
        silent.listen()
        result = run_app("bulk-client", "--server", LOOPBACK, "--port",
                         silent.getsockname()[1], "--out", tmp_path / "bulk.json",
                         "--timeout", 0.3)
    assert result.returncode == 1 and "not complete after 0.3 s" in result.stderr


def test_bulk_transfer(tmp_path):
    port = free_port()
    out = tmp_path / "bulk.json"
    with server("bulk-server", "--bind", LOOPBACK, "--port", port, "--bytes", 188640,
                ready=tcp_listening(port)):
        result = run_app("bulk-client", "--server", LOOPBACK, "--port", port, "--out", out)
    assert result.returncode == 0, result.stderr
    transfer = json.loads(out.read_text())
    assert transfer["bytes"] == 188640
    assert isinstance(transfer["local_port"], int)
    assert transfer["connect_unix"] <= transfer["done_unix"]


def test_udp_datagrams_are_numbered_and_paced(tmp_path):
    port = free_port(socket.SOCK_DGRAM)
    sink_out, source_out = tmp_path / "sink.json", tmp_path / "source.json"
    sink = subprocess.Popen(APPS + ["udp-sink", "--bind", LOOPBACK, "--port", str(port),
                                    "--out", str(sink_out), "--idle", "0.5"],
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_until(udp_bound(port), sink)
        result = run_app("udp-source", "--to", LOOPBACK, "--port", port, "--payload", 100,
                         "--interval", 0.01, "--duration", 0.2, "--out", source_out)
        assert result.returncode == 0, result.stderr
        assert sink.wait(timeout=5) == 0
    finally:
        sink.kill()
        sink.communicate()
    assert json.loads(source_out.read_text())["sent"] == 20
    received = json.loads(sink_out.read_text())
    assert (received["received"], received["bytes"]) == (20, 2000)
    seqs, times = zip(*received["packets"])
    assert list(seqs) == list(range(20))
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert 0.005 < statistics.median(gaps) < 0.02
    assert 0.15 < times[-1] - times[0] < 0.4


def test_udp_payload_layout_and_dscp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
        receiver.bind((LOOPBACK, 0))
        receiver.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        receiver.settimeout(5)
        before_ns = time.time_ns()
        result = run_app("udp-source", "--to", LOOPBACK, "--port", receiver.getsockname()[1],
                         "--payload", 12, "--interval", 0.001, "--duration", 0.003,
                         "--dscp", 46)
        assert result.returncode == 0 and result.stdout == "", result.stderr
        for seq in range(3):
            data, ancillary, _, _ = receiver.recvmsg(100, socket.CMSG_SPACE(1))
            assert len(data) == 12
            assert data[:4] == seq.to_bytes(4, "big")
            assert before_ns < int.from_bytes(data[4:], "big") < time.time_ns()
            assert [(level, kind, tos[0]) for level, kind, tos in ancillary] == \
                [(socket.IPPROTO_IP, socket.IP_TOS, 46 << 2)]


def test_udp_sink_writes_its_record_on_sigterm(tmp_path):
    port = free_port(socket.SOCK_DGRAM)
    out = tmp_path / "sink.json"
    with server("udp-sink", "--bind", LOOPBACK, "--port", port, "--out", out,
                ready=udp_bound(port)) as sink:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            sender.sendto(bytes(50), (LOOPBACK, port))
        wait_until(udp_read(port, sink), sink, "the sink did not read the datagram")
    record = json.loads(out.read_text())
    assert (record["received"], record["bytes"], record["packets"][0][0]) == (1, 50, 0)


@pytest.mark.parametrize("args, problem", [
    (["http-client", "--server", LOOPBACK, "--port", "80", "--page", "xl+1", "--http", "1.0",
      "--out", "x.json"], ["--page", "'xl+1'", "s+2s"]),
    (["udp-source", "--to", LOOPBACK, "--port", "9", "--payload", "5", "--interval", "0.01",
      "--duration", "1"], ["--payload", "between 12 and", "got 5"]),
    (["udp-source", "--to", LOOPBACK, "--port", "9", "--payload", "100", "--interval", "0",
      "--duration", "1"], ["--interval"]),
])
def test_bad_arguments_are_named(tmp_path, args, problem):
    result = subprocess.run(APPS + args, capture_output=True, text=True, timeout=10, cwd=tmp_path)
    assert result.returncode != 0
    for words in problem:
        assert words in result.stderr
    assert not (tmp_path / "x.json").exists()
