"""Traffic programs that experiments start on the emulated hosts.

Each subcommand is one program, run as
`python -m linkemu.experiments.apps SUBCOMMAND ...`:
HTTP page downloads as in the studies of web browsing over slow wireless links,
bulk TCP transfers and periodic UDP datagrams. Clients write what they measured
to a JSON file; servers run until SIGTERM and then exit 0.
"""

import argparse
import json
import math
import os
import re
import signal
import socket
import struct
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

# Page mix -> (main object bytes, number of in-line objects, in-line object bytes).
PAGE_MIXES = {
    "s+2s": (6288, 2, 2096),
    "s+2m": (6288, 2, 8384),
    "s+8m": (6288, 8, 8384),
    "m+2m": (12576, 2, 8384),
    "m+8m": (12576, 8, 8384),
    "l+8m": (71788, 8, 8384),
}
REQUEST_BYTES = 350  # every HTTP request, as in the studies
# HTTP/1.0: when the in-line connections may start. The studies' client
# started them as the main object began to arrive; "main-complete" is for
# pages whose references come late.
INLINE_STARTS = ("first-data", "main-complete")

RECV_BYTES = 65536
LISTEN_BACKLOG = 128
MAX_REQUEST_HEAD = 8192
FILLER = b"x" * 65536
UDP_HEADER = struct.Struct(">IQ")  # sequence number, send time in ns
MAX_UDP_PAYLOAD = 65507


def page_objects(mix):
    """(main object size, [in-line object sizes]) of a page mix."""
    if mix not in PAGE_MIXES:
        raise ValueError(f"unknown page mix {mix!r}; valid mixes: {', '.join(PAGE_MIXES)}")
    main_size, count, inline_size = PAGE_MIXES[mix]
    return main_size, [inline_size] * count


class AppError(Exception):
    """A run that failed in a way the caller must hear about: exit status 1."""


class Terminated(Exception):
    """Raised in the main thread on SIGTERM, so that a server unwinds and exits 0."""


def _raise_terminated(signum, frame):
    raise Terminated


def stop_on_sigterm():
    signal.signal(signal.SIGTERM, _raise_terminated)


def write_json_atomic(path, data):
    """Writes beside the target and renames, so readers never see a partial file."""
    partial = f"{path}.part"
    with open(partial, "w") as f:
        json.dump(data, f)
        f.write("\n")
    os.replace(partial, path)


def time_left(deadline):
    """Seconds until a time.monotonic() deadline; TimeoutError once it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("timed out")
    return left


def recv(sock, deadline):
    sock.settimeout(time_left(deadline))
    return sock.recv(RECV_BYTES)


def send(sock, data, deadline):
    sock.settimeout(time_left(deadline))
    sock.sendall(data)


def send_padded(conn, prefix, total):
    """Sends `prefix` padded with b"x" to `total` bytes. The head goes out in the
    same write as the body so that it does not take a small segment of its own."""
    data = prefix + FILLER[:total - len(prefix)]
    remaining = total
    while remaining:
        conn.sendall(data)
        remaining -= len(data)
        data = FILLER[:remaining]


def close_gracefully(conn):
    """Sends our FIN, then waits for the peer's: closing with unread data would
    make the kernel send a RST, which can destroy data the peer has not read yet."""
    conn.shutdown(socket.SHUT_WR)
    while conn.recv(RECV_BYTES):
        pass


def listen(bind, port):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((bind, port))
    listener.listen(LISTEN_BACKLOG)
    return listener


def serve_forever(listener, handle, *args):
    """Handles each accepted connection in its own thread until SIGTERM."""
    with listener:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=handle, args=(conn, *args), daemon=True).start()


def connect(server, port, deadline):
    """(socket, unix time at which connect() started)."""
    connect_unix = time.time()
    try:
        sock = socket.create_connection((server, port), timeout=time_left(deadline))
    except ConnectionRefusedError:
        raise AppError(f"connection to {server}:{port} refused") from None
    return sock, connect_unix


# HTTP server

class BadRequest(Exception):
    """A request the server answers with 400 before it closes the connection."""


def read_request_head(conn, buffer):
    """(head, rest of buffer) of the next request; head is None if the client
    closed first. Pipelined requests stay in the returned buffer."""
    while (end := buffer.find(b"\r\n\r\n")) < 0:
        if len(buffer) > MAX_REQUEST_HEAD:
            raise BadRequest(f"request head longer than {MAX_REQUEST_HEAD} bytes")
        data = conn.recv(RECV_BYTES)
        if not data:
            return None, buffer
        buffer += data
    return buffer[:end], buffer[end + 4:]


def parse_request(head):
    """(version, size, close after the response) of `GET /<size> HTTP/1.x`."""
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = request_line.split(" ")
    if len(parts) != 3:
        raise BadRequest(f"malformed request line {request_line[:80]!r}")
    method, target, version = parts
    if method != "GET":
        raise BadRequest(f"method {method[:20]!r} is not supported, only GET")
    if version not in ("HTTP/1.0", "HTTP/1.1"):
        raise BadRequest(f"version {version[:20]!r} is not supported, only HTTP/1.0 and HTTP/1.1")
    if not re.fullmatch(r"/[0-9]{1,12}", target):
        raise BadRequest(f"path {target[:40]!r} is not /<response size in bytes>")
    connection = ""
    for line in header_lines:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise BadRequest(f"malformed header line {line[:80]!r}")
        if name.lower() == "connection":
            connection = value.lower()
    wants_close = "close" in (token.strip() for token in connection.split(","))
    return version, int(target[1:]), version == "HTTP/1.0" or wants_close


def response_head(version, size, close):
    """(head, body bytes) of a 200 response that is `size` bytes in all.
    Content-Length is padded with spaces (optional whitespace in HTTP) to the
    width of `size`, so that the head's length does not depend on the body's."""
    connection = "Connection: close\r\n" if close else ""
    fixed = f"{version} 200 OK\r\n{connection}Content-Length: "
    width = len(str(size))
    body = size - (len(fixed) + width + 4)
    if body < 0:
        raise BadRequest(f"size {size} is smaller than the {size - body}-byte response head")
    return f"{fixed}{body:<{width}}\r\n\r\n".encode(), body


def bad_request(reason):
    body = f"400 Bad Request: {reason}\n".encode()
    return (b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body)


def answer_requests(conn):
    """Answers requests in order until the client closes, asks to close, or errs."""
    buffer = b""
    try:
        while True:
            head, buffer = read_request_head(conn, buffer)
            if head is None:
                return
            version, size, close = parse_request(head)
            response, _ = response_head(version, size, close)
            send_padded(conn, response, size)
            if close:
                return
    except BadRequest as error:
        conn.sendall(bad_request(error))


def serve_http_connection(conn):
    with conn:
        try:
            answer_requests(conn)
            close_gracefully(conn)
        except OSError:
            pass  # the client reset the connection or vanished: nobody to answer


def run_http_server(args):
    stop_on_sigterm()
    serve_forever(listen(args.bind, args.port), serve_http_connection)


# HTTP client

def build_request(size, http, host):
    """A GET for /<size>, padded to exactly REQUEST_BYTES with an X-Pad header."""
    start = f"GET /{size} HTTP/{http}\r\nHost: {host}\r\nX-Pad: "
    pad = REQUEST_BYTES - len(start) - len("\r\n\r\n")
    if pad < 0:
        raise AppError(f"a request for /{size} to {host} does not fit in {REQUEST_BYTES} bytes")
    return f"{start}{'x' * pad}\r\n\r\n".encode()


def check_object(size, status_line, nbytes):
    if nbytes != size or status_line.split(" ")[1:2] != ["200"]:
        raise AppError(f"object /{size}: expected {size} bytes with status 200, "
                       f"got {nbytes} bytes with {status_line[:80]!r}")


def connection_record(local_port, sizes, connect_unix):
    return {"local_port": local_port, "objects": sizes,
            "connect_unix": connect_unix, "done_unix": time.time()}


def fetch_closing(server, port, size, deadline, first_data=None):
    """HTTP/1.0: one object on its own connection, ended by the server's FIN.
    Calls `first_data()` when the response's first bytes arrive."""
    sock, connect_unix = connect(server, port, deadline)
    with sock:
        local_port = sock.getsockname()[1]
        send(sock, build_request(size, "1.0", f"{server}:{port}"), deadline)
        response = bytearray()
        while data := recv(sock, deadline):
            if first_data and not response:
                first_data()
            response += data
    check_object(size, response.split(b"\r\n", 1)[0].decode("latin-1"), len(response))
    return connection_record(local_port, [size], connect_unix)


def wait_for_slot(running, parallel):
    """The futures of `running` still running, once fewer than `parallel` are.
    Raises the error of any that failed, so that the page starts no more."""
    done = {future for future in running if future.done()}
    running = running - done
    while len(running) >= parallel:
        finished, running = wait(running, return_when=FIRST_COMPLETED)
        done |= finished
    for future in done:
        future.result()
    return running


def fetch_page_closing(server, port, main_size, inline_sizes, parallel, inline, deadline):
    """One connection per object, at most `parallel` open at once, the main
    object's included; a new one as soon as one closes. The in-line ones
    start at the main object's first data (`inline` "first-data") or once
    it is complete ("main-complete")."""
    may_start = threading.Event()
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        main = pool.submit(fetch_closing, server, port, main_size, deadline,
                           may_start.set if inline == "first-data" else None)
        main.add_done_callback(lambda _: may_start.set())  # complete, or failed before any data
        may_start.wait()
        futures, running = [main], {main}
        for size in inline_sizes:
            running = wait_for_slot(running, parallel)
            futures.append(pool.submit(fetch_closing, server, port, size, deadline))
            running.add(futures[-1])
        return [future.result() for future in futures]


def read_response(sock, buffer, deadline):
    """(status line, bytes in the response, rest of buffer) of the next response
    on a persistent connection, whose end Content-Length tells."""
    while (end := buffer.find(b"\r\n\r\n")) < 0:
        data = recv(sock, deadline)
        if not data:
            raise AppError("the server closed the connection before a complete response head")
        buffer += data
    status_line, *header_lines = buffer[:end].decode("latin-1").split("\r\n")
    lengths = [value for name, _, value in (line.partition(":") for line in header_lines)
               if name.strip().lower() == "content-length"]
    if len(lengths) != 1 or not lengths[0].strip().isdigit():
        raise AppError(f"response without a valid Content-Length: {status_line[:80]!r}")
    total = end + 4 + int(lengths[0])
    while len(buffer) < total:
        data = recv(sock, deadline)
        if not data:
            raise AppError(f"the server closed the connection after {len(buffer)} "
                           f"of {total} response bytes")
        buffer += data
    return status_line, total, buffer[total:]


def fetch_page_persistent(server, port, main_size, inline_sizes, deadline):
    """HTTP/1.1: the main object, then all in-line requests pipelined in one
    send, all on one connection that the client closes at the end."""
    host = f"{server}:{port}"
    sock, connect_unix = connect(server, port, deadline)
    with sock:
        local_port = sock.getsockname()[1]
        send(sock, build_request(main_size, "1.1", host), deadline)
        status_line, nbytes, buffer = read_response(sock, bytearray(), deadline)
        check_object(main_size, status_line, nbytes)
        send(sock, b"".join(build_request(size, "1.1", host) for size in inline_sizes), deadline)
        for size in inline_sizes:
            status_line, nbytes, buffer = read_response(sock, buffer, deadline)
            check_object(size, status_line, nbytes)
        sock.shutdown(socket.SHUT_WR)
        if buffer or recv(sock, deadline):
            raise AppError("the server sent bytes after the last response")
    return [connection_record(local_port, [main_size, *inline_sizes], connect_unix)]


def run_http_client(args):
    deadline = time.monotonic() + args.timeout
    main_size, inline_sizes = page_objects(args.page)
    try:
        if args.http == "1.0":
            connections = fetch_page_closing(args.server, args.port, main_size, inline_sizes,
                                             args.parallel, args.inline, deadline)
        else:
            connections = fetch_page_persistent(args.server, args.port, main_size,
                                                inline_sizes, deadline)
    except TimeoutError:
        raise AppError(f"page {args.page} not complete after {args.timeout:g} s") from None
    write_json_atomic(args.out, {
        "page": args.page, "http": args.http,
        "start_unix": connections[0]["connect_unix"],
        "end_unix": max(c["done_unix"] for c in connections),
        "connections": connections,
    })


# Bulk transfer

def serve_bulk_connection(conn, nbytes):
    with conn:
        try:
            send_padded(conn, b"", nbytes)
            close_gracefully(conn)
        except OSError:
            pass  # the client reset the connection or vanished


def run_bulk_server(args):
    stop_on_sigterm()
    serve_forever(listen(args.bind, args.port), serve_bulk_connection, args.bytes)


def run_bulk_client(args):
    deadline = time.monotonic() + args.timeout
    try:
        sock, connect_unix = connect(args.server, args.port, deadline)
        with sock:
            local_port = sock.getsockname()[1]
            nbytes = 0
            while data := recv(sock, deadline):
                nbytes += len(data)
    except TimeoutError:
        raise AppError(f"transfer not complete after {args.timeout:g} s") from None
    write_json_atomic(args.out, {"bytes": nbytes, "local_port": local_port,
                                 "connect_unix": connect_unix, "done_unix": time.time()})


# UDP

def run_udp_source(args):
    """Sends at start + k * interval: a late datagram does not delay the next ones."""
    count = math.ceil(round(args.duration / args.interval, 9))
    payload = bytearray(args.payload)
    first_ns = last_ns = None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, args.dscp << 2)
        start = time.monotonic()
        for seq in range(count):
            pause = start + seq * args.interval - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            last_ns = time.time_ns()
            first_ns = first_ns or last_ns
            UDP_HEADER.pack_into(payload, 0, seq, last_ns)
            sock.sendto(payload, (args.to, args.port))
    if args.out:
        write_json_atomic(args.out, {
            "sent": count,
            "first_unix": first_ns and first_ns / 1e9,
            "last_unix": last_ns and last_ns / 1e9,
        })


def run_udp_sink(args):
    stop_on_sigterm()
    packets, nbytes = [], 0
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.bind((args.bind, args.port))
            while True:
                data = sock.recv(RECV_BYTES)
                recv_unix = time.time()
                seq = struct.unpack_from(">I", data)[0] if len(data) >= 4 else None
                packets.append([seq, recv_unix])
                nbytes += len(data)
                if args.idle:
                    sock.settimeout(args.idle)
    except (Terminated, TimeoutError):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not cut the write
    write_json_atomic(args.out, {"received": len(packets), "bytes": nbytes, "packets": packets})


# Command line

def number(convert, low, high=None, note=""):
    """An argparse type: a number of kind `convert` in [low, high]."""
    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value < low or (high is not None and value > high):
            bounds = f"at least {low}" if high is None else f"between {low} and {high}"
            raise argparse.ArgumentTypeError(f"must be {bounds}{note}, got {text}")
        return value
    return parse


PORT = number(int, 1, 65535)
SECONDS = number(float, 0)
POSITIVE_SECONDS = number(float, 1e-6)


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m linkemu.experiments.apps",
                                     description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name, run, text):
        sub = commands.add_parser(name, help=text, description=text)
        sub.set_defaults(run=run)
        return sub

    sub = command("http-server", run_http_server,
                  "Serve GET /<size> with responses of exactly <size> bytes until SIGTERM.")
    sub.add_argument("--bind", required=True)
    sub.add_argument("--port", type=PORT, required=True)

    sub = command("http-client", run_http_client, "Fetch one web page and time its connections.")
    sub.add_argument("--server", required=True)
    sub.add_argument("--port", type=PORT, required=True)
    sub.add_argument("--page", choices=PAGE_MIXES, required=True)
    sub.add_argument("--http", choices=("1.0", "1.1"), required=True)
    sub.add_argument("--parallel", type=number(int, 1), default=4,
                     help="HTTP/1.0: most connections open at once, the main one's "
                          "included (default 4)")
    sub.add_argument("--inline", choices=INLINE_STARTS, default="first-data",
                     help="HTTP/1.0: start the in-line connections at the main object's "
                          "first data (default) or once it is complete")
    sub.add_argument("--out", required=True, help="JSON file")
    sub.add_argument("--timeout", type=POSITIVE_SECONDS, default=600.0,
                     help="seconds for the whole page (default 600)")

    sub = command("bulk-server", run_bulk_server,
                  "Send N bytes on every connection, then close, until SIGTERM.")
    sub.add_argument("--bind", required=True)
    sub.add_argument("--port", type=PORT, required=True)
    sub.add_argument("--bytes", type=number(int, 0), required=True)

    sub = command("bulk-client", run_bulk_client, "Read one bulk transfer to its end.")
    sub.add_argument("--server", required=True)
    sub.add_argument("--port", type=PORT, required=True)
    sub.add_argument("--out", required=True, help="JSON file")
    sub.add_argument("--timeout", type=POSITIVE_SECONDS, default=600.0)

    sub = command("udp-source", run_udp_source, "Send numbered, timestamped datagrams periodically.")
    sub.add_argument("--to", required=True)
    sub.add_argument("--port", type=PORT, required=True)
    sub.add_argument("--payload", type=number(int, UDP_HEADER.size, MAX_UDP_PAYLOAD,
                                              " bytes (4-byte sequence number and 8-byte send time)"),
                     required=True, help="bytes per datagram, at least 12")
    sub.add_argument("--interval", type=POSITIVE_SECONDS, required=True, help="seconds")
    sub.add_argument("--duration", type=SECONDS, required=True, help="seconds")
    sub.add_argument("--dscp", type=number(int, 0, 63), default=0,
                     help="DiffServ code point, sent as IP_TOS = DSCP << 2 (default 0)")
    sub.add_argument("--out", help="JSON summary file")

    sub = command("udp-sink", run_udp_sink, "Record the datagrams received until SIGTERM or idle.")
    sub.add_argument("--bind", required=True)
    sub.add_argument("--port", type=PORT, required=True)
    sub.add_argument("--out", required=True, help="JSON file, written at exit")
    sub.add_argument("--idle", type=SECONDS, default=0.0,
                     help="stop this many seconds after the last datagram (default 0: never)")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        args.run(args)
    except Terminated:
        pass
    except (AppError, OSError) as error:
        print(f"linkemu.experiments.apps {args.command}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
