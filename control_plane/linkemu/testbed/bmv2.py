"""Running simple_switch_grpc: started as a child, stopped by its own PID.

The switch serves P4Runtime on 127.0.0.1 and BMv2's Thrift runtime (queue
depths and rates) on a port of its own, which BMv2 binds to every address
with no option to do otherwise: while the switch runs, an nftables table of
its own drops every connection to that port that does not come from the
loopback interface, so only this machine's controller reaches it.
"""

import functools
import mmap
import os
import platform
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..program import constants as p4
from ..switch.thrift_runtime import SwitchQueues
from . import leftovers

SWITCH_BINARY = "simple_switch_grpc"
# Timed departure (tools/bmv2): the switch queues a packet to leave at the
# instant in this field of the program's, as p4c names metadata_t.depart_us.
DEPARTURE_OPTION = "--departure-time-field"
DEPARTURE_FIELD = "scalars.metadata_t.depart_us"
# With it, held packets sleep in the hold ports' queues, 16 of them (and in
# the turn lane's 16): each deep enough for its share of the capacity. A
# packet released ahead of its due instant sleeps in its output port's
# queue, which takes as many as the hold, and room beyond for frames released
# as they fall due, which leave at once and which the hold does not count.
HOLD_QUEUE_DEPTH = 1024
TIMED_HOLD_CAPACITY = 15000
OUTPUT_QUEUE_DEPTH = TIMED_HOLD_CAPACITY + 1024
# Without it every held packet goes round the hold loop, whose release error
# grows with the packets held: a busy link's p99 stayed within 1 ms up to
# about this many (docs/benchmark.md).
LOOP_PRECISE_HELD = 30
HOLD_QUEUES = tuple(p4.HOLD_PORT_BASE + 4 * i + lane
                    for i in range(p4.HOLD_PORT_MASK + 1) for lane in (0, 1))
# The thread that takes frames in from the ports (BMv2's interface manager,
# waiting in select(2)) runs at this real-time priority, above the
# pipeline's threads on the switch's core: a frame is timestamped as it
# arrives, and a port's capture ring (some 1300 frames) does not overflow
# while the pipeline works through a burst (docs/fidelity.md).
CAPTURE_PRIORITY = 1
# select(2) and pselect6(2) by number, per machine (/proc/TID/syscall).
SELECT_SYSCALLS = {"x86_64": {23, 270}, "aarch64": {72}}
# Everything a switch needs: the binary (with Thrift), and nft for its guard.
SWITCH_TOOLS = (SWITCH_BINARY, "nft")
GET_TOOLS = "'make p4-tools', see docs/install.md 'P4 tools'"


def missing_tools(*tools):
    """The tools among `tools` that are not on PATH, or not as linkemu needs
    them (a simple_switch_grpc built without Thrift)."""
    missing = []
    for tool in tools:
        path = shutil.which(tool)
        if path is None:
            missing.append(tool)
        elif tool == SWITCH_BINARY and not _links_thrift(path):
            missing.append(f"{tool} with Thrift ({path} was built without it)")
    return missing


def _links_thrift(binary):
    try:
        libraries = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    except OSError:
        return True   # no ldd to ask: the switch's start says so if it lacks Thrift
    return "libthrift" in libraries


@functools.cache
def has_timed_departure(binary):
    """Whether the simple_switch_grpc at `binary` takes a departure instant
    per packet (its option's name is in the binary), found in the file
    mapped, not read into memory (some 100 MB)."""
    try:
        with open(binary, "rb") as file, mmap.mmap(file.fileno(), 0,
                                                   access=mmap.ACCESS_READ) as image:
            return image.find(DEPARTURE_OPTION.lstrip("-").encode()) >= 0
    except (OSError, ValueError):   # ValueError: an empty file cannot be mapped
        return False


def installed_timed_departure():
    """Whether the simple_switch_grpc on PATH has timed departure."""
    binary = shutil.which(SWITCH_BINARY)
    return binary is not None and has_timed_departure(binary)


def hold_capacity(timed):
    """The hold's capacity of a switch with timed departure or without."""
    return TIMED_HOLD_CAPACITY if timed else p4.HOLD_CAPACITY


def hold_warnings(profile):
    """What a user of `profile` on the installed switch should know about
    its hold: more frames than it takes, or, on a switch whose held packets
    go round, more than it releases precisely."""
    timed = installed_timed_departure()
    warning = profile.hold_warning(hold_capacity(timed))
    warnings = [warning] if warning else []
    held = profile.frames_held_busy()
    if held is not None and held > LOOP_PRECISE_HELD and not timed:
        warnings.append(
            f"busy with full router queues it holds up to {held} frames, and this switch "
            "(no timed departure, tools/bmv2) sends every held frame round its hold loop: "
            f"the benchmark kept a busy link's release error p99 within 1 ms only up to "
            f"about {LOOP_PRECISE_HELD} held (10 Mbit/s with 20 ms, 2 Mbit/s with 160 ms; "
            "docs/benchmark.md)")
    return warnings


def free_tcp_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(host, port):
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


class LoopbackOnly:
    """An nftables table that drops TCP connections to `port` from anywhere
    but the loopback interface, for a server that binds every address."""

    def __init__(self, port):
        self.port = port
        self.table = f"linkemu_thrift_{port}"

    def add(self):
        rules = (f"table inet {self.table} {{\n chain input {{\n"
                 f"  type filter hook input priority 0; policy accept;\n"
                 f'  iif != "lo" tcp dport {self.port} drop\n }}\n}}\n')
        done = subprocess.run(["nft", "-f", "-"], input=rules, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"could not keep Thrift port {self.port} to loopback "
                               f"(nft: {done.stderr.strip()})")
        leftovers.note_nft_table("inet", self.table)

    def remove(self):
        subprocess.run(["nft", "delete", "table", "inet", self.table], capture_output=True)
        leftovers.forget("nft_tables", name=self.table)


class SimpleSwitchGrpc:
    """One simple_switch_grpc process with its gRPC server on 127.0.0.1.

    `ports` maps switch port numbers to interface names. The switch starts with
    no program; a controller pushes it over P4Runtime.

    All its threads are pinned to one core (`cpu`, by default the last one),
    and callers keep their own processes off it (other_cores): the hold loop
    keeps the switch's ingress and egress threads busy whenever packets are
    held, and a core shared with other work delays the switch's transmit
    thread by whole scheduler slices (measured: p99 release error 0.7-1 ms
    pinned, 1.3-7.7 ms unpinned, for a 30-packet burst).
    """

    def __init__(self, ports, grpc_port=9559, device_id=0, log_path=None, cpu=None,
                 thrift_port=None, wrapper=(), start_timeout=15.0):
        self.ports = dict(ports)
        self.wrapper = list(wrapper)   # a tool that runs the switch (valgrind), its argv
        self.start_timeout = start_timeout
        cores = sorted(os.sched_getaffinity(0))
        self.cpu = cores[-1] if cpu is None else cpu
        self.grpc_port = grpc_port
        self.grpc_address = f"127.0.0.1:{grpc_port}"
        self.thrift_port = thrift_port or free_tcp_port()
        self.device_id = device_id
        self.log_path = Path(log_path or f"/tmp/linkemu-switch-{grpc_port}.log")
        self.guard = LoopbackOnly(self.thrift_port)
        self.process = None
        self.timed = installed_timed_departure()
        self.capture_thread = None   # its id, once raised
        self.stopped = threading.Event()

    def command(self):
        args = [*self.wrapper, SWITCH_BINARY, "--device-id", str(self.device_id), "--no-p4",
                "--thrift-port", str(self.thrift_port)]
        for number, name in sorted(self.ports.items()):
            args += ["-i", f"{number}@{name}"]
        args += ["--", "--grpc-server-addr", self.grpc_address, "--cpu-port", str(p4.CPU_PORT)]
        if self.timed:
            args += [DEPARTURE_OPTION, DEPARTURE_FIELD]
        return args

    def start(self):
        for port in (self.grpc_port, self.thrift_port):
            if _listening("127.0.0.1", port):
                raise RuntimeError(f"127.0.0.1:{port} is already taken by another server")
        missing = missing_tools(*SWITCH_TOOLS)
        if missing:
            raise RuntimeError(f"missing {', '.join(missing)}; BMv2 comes from {GET_TOOLS}")
        self.guard.add()   # before the switch listens
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=lambda: os.sched_setaffinity(0, {self.cpu}))
        leftovers.note_process(self.process, SWITCH_BINARY)
        deadline = time.monotonic() + self.start_timeout
        while not (_listening("127.0.0.1", self.grpc_port) and
                   _listening("127.0.0.1", self.thrift_port)):
            if self.process.poll() is not None:
                code = self.process.returncode
                self.stop()
                raise RuntimeError(f"{SWITCH_BINARY} exited with {code}; "
                                   f"see {self.log_path}:\n{self._log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{SWITCH_BINARY} did not open {self.grpc_address} and "
                                   f"Thrift port {self.thrift_port} within "
                                   f"{self.start_timeout} s; "
                                   f"see {self.log_path}")
            time.sleep(0.05)
        # BMv2 starts taking frames in once a program is set.
        self.stopped = threading.Event()
        threading.Thread(target=self._raise_capture_thread, args=(self.process, self.stopped),
                         daemon=True).start()
        if self.timed:
            with self.queues() as queues:
                for port in HOLD_QUEUES:
                    queues.set_depth(port, HOLD_QUEUE_DEPTH)
                for port in self.ports:
                    queues.set_depth(port, OUTPUT_QUEUE_DEPTH)

    @property
    def hold_capacity(self):
        return hold_capacity(self.timed)

    def queues(self):
        """BMv2's egress queues of this switch, over Thrift (a SwitchQueues to close)."""
        return SwitchQueues(self.thrift_port)

    def _log_tail(self, lines=15):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def other_cores(self):
        """The cores left to everything else: run traffic sources and
        captures there, so that nothing competes with the switch's core."""
        return (set(os.sched_getaffinity(0)) - {self.cpu}) or {self.cpu}

    @property
    def pid(self):
        return self.process.pid if self.process else None

    def _raise_capture_thread(self, process, stopped):
        """Gives `process`'s capture thread CAPTURE_PRIORITY (SCHED_FIFO)
        once it is there; warns where the priority is refused."""
        pid = process.pid
        while not stopped.wait(0.05) and process.poll() is None:
            thread = find_capture_thread(pid)
            if thread is None:
                continue
            try:
                os.sched_setscheduler(thread, os.SCHED_FIFO,
                                      os.sched_param(CAPTURE_PRIORITY))
            except OSError as err:
                print(f"warning: {SWITCH_BINARY} {pid}: its capture thread keeps the "
                      f"normal priority ({err}): frames arriving in a burst may wait, or "
                      "be lost, before the pipeline sees them", file=sys.stderr)
            else:
                self.capture_thread = thread
            return

    def cpu_seconds(self):
        """User plus system CPU time the switch has used so far."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_bytes(self):
        """The switch's resident memory."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        return int(next(line.split()[1] for line in status.splitlines()
                        if line.startswith("VmRSS:"))) * 1024

    def stop(self, timeout=5.0):
        """Stops exactly the process this object started, then lifts its guard."""
        self.stopped.set()
        if self.process is not None:
            leftovers.stop_child(self.process, timeout)
            leftovers.forget("processes", pid=self.process.pid)
        self.process = None
        self.guard.remove()


def find_capture_thread(pid):
    """The thread of process `pid` that waits in select(2), if exactly one does."""
    select = SELECT_SYSCALLS.get(platform.machine(), set())
    waiting = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:   # the process ended
        return None
    for task in tasks:
        try:
            call = (task / "syscall").read_text().split()[0]
        except (OSError, IndexError):   # the thread ended
            continue
        if call.isdigit() and int(call) in select:
            waiting.append(int(task.name))
    return waiting[0] if len(waiting) == 1 else None
