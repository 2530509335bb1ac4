"""Running simple_switch_grpc: started as a child, stopped by its own PID."""

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SWITCH_BINARY = "simple_switch_grpc"
# P4Runtime packet I/O (clock probes) goes through this port, as linkemu.p4 says.
CPU_PORT = 255
GET_TOOLS = "'make p4-tools', see README.md 'P4 tools'"


def missing_tools(*tools):
    """The tools among `tools` that are not on PATH."""
    return [tool for tool in tools if shutil.which(tool) is None]


def free_tcp_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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

    def __init__(self, ports, grpc_port=9559, device_id=0, log_path=None, cpu=None):
        self.ports = dict(ports)
        cores = sorted(os.sched_getaffinity(0))
        self.cpu = cores[-1] if cpu is None else cpu
        self.grpc_address = f"127.0.0.1:{grpc_port}"
        self.device_id = device_id
        self.log_path = Path(log_path or f"/tmp/linkemu-switch-{grpc_port}.log")
        self.process = None

    def command(self):
        args = [SWITCH_BINARY, "--device-id", str(self.device_id), "--no-p4"]
        for number, name in sorted(self.ports.items()):
            args += ["-i", f"{number}@{name}"]
        return args + ["--", "--grpc-server-addr", self.grpc_address,
                       "--cpu-port", str(CPU_PORT)]

    def start(self, timeout=15.0):
        if self._listening():
            raise RuntimeError(f"{self.grpc_address} is already taken by another server")
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=lambda: os.sched_setaffinity(0, {self.cpu}))
        deadline = time.monotonic() + timeout
        while not self._listening():
            if self.process.poll() is not None:
                raise RuntimeError(f"{SWITCH_BINARY} exited with {self.process.returncode}; "
                                   f"see {self.log_path}:\n{self._log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{SWITCH_BINARY} did not open {self.grpc_address} "
                                   f"within {timeout} s; see {self.log_path}")
            time.sleep(0.05)

    def _listening(self):
        host, port = self.grpc_address.rsplit(":", 1)
        with socket.socket() as s:
            s.settimeout(0.2)
            return s.connect_ex((host, int(port))) == 0

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

    def cpu_seconds(self):
        """User plus system CPU time the switch has used so far."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self, timeout=5.0):
        """Stops exactly the process this object started."""
        if self.process is None or self.process.poll() is not None:
            self.process = None
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None
