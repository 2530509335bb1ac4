"""Runs an experiment's batch in Mininet: one network serves a profile's runs
in a row, and up to N networks run side by side, each in a network slot of
its own (linkemu.testbed.slots) and, beyond one, each in a process of its own.

Each run: wait until the switch holds nothing, push the profile afresh,
set and read back every host's TCP configuration, capture every host's switch port, sample the
router queues, walk the replication's link-state timeline, start the
servers, start each client at its offset, wait for the clients, let the
link drain, stop everything it started (by PID), then compute the metrics.
A run's folder is written under a temporary name and renamed when
complete, so an interrupted batch resumes without redoing finished runs.
"""

import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from multiprocessing.connection import wait
from pathlib import Path

from ..model.link_states import walk
from ..switch.counters import read_counters, wait_until_idle
from ..switch.p4runtime import Switch
from ..switch.push import push_profile
from ..testbed import bpf_cc, leftovers
from ..testbed.capture import Capture
from ..testbed.emunet import SwitchDied, emulated_link, link_drivers, linkemu_switch
from ..testbed.slots import NetworkSlot, shared_cores_warning
from . import plots, results, run_metrics, tcp_config

FIRST_PORT = 5001
# A TCP socket in these states has not yet seen its connection's end.
CLOSING_STATES = ("state syn-sent state syn-recv state established state fin-wait-1 "
                  "state closing state last-ack")
IDLE_TIMEOUT_S = 60.0
APPS = [sys.executable, "-m", "linkemu.experiments.apps"]


class RunError(RuntimeError):
    """A run that could not complete; the batch goes on with the next one."""


class Progress:
    """A progress bar over the runs with the time left, on stderr."""

    def __init__(self, total, done):
        self.total, self.done, self.failed = total, done, 0
        self.started = time.monotonic()
        self.timed = 0

    def update(self, run_id, ok):
        self.done += 1
        self.timed += 1
        self.failed += not ok
        elapsed = time.monotonic() - self.started
        left = elapsed / self.timed * (self.total - self.done)
        width = 30
        filled = round(width * self.done / self.total)
        print(f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} runs"
              f"{f', {self.failed} failed' if self.failed else ''}, "
              f"{_clock(elapsed)} elapsed, ~{_clock(left)} left  ({run_id})",
              file=sys.stderr, flush=True)


def _clock(seconds):
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def run_batch(experiment, out_dir, source_text, jobs=1):
    """Runs what is not yet done, up to `jobs` runs at once, each in a
    network of its own; returns (completed, failed) run counts."""
    out_dir = Path(out_dir)
    results.prepare(out_dir, source_text)
    runs = experiment.runs()
    pending = [r for r in runs if not results.is_complete(out_dir, r)]
    batch = Batch(experiment, out_dir, pending, Progress(len(runs), len(runs) - len(pending)))
    if not pending:
        print(f"{out_dir}: all {len(runs)} runs are done", file=sys.stderr)
    jobs = max(1, min(jobs, len(pending)))
    warning = shared_cores_warning(jobs)
    if warning:
        print(f"linkemu: warning: {warning}", file=sys.stderr, flush=True)
    # linkemu's own congestion controls that pending runs name, registered
    # while the batch runs (by this process: the slots' processes share it).
    users = tcp_config.bpf_controls({name: experiment.tcp[name] for name in
                                     {r.tcp for r in pending}})
    controls = {control: f"tcp config {', '.join(names)}"
                for control, names in users.items()}
    with bpf_cc.registered(controls):
        if jobs == 1:
            run_slot(NetworkSlot(), experiment, out_dir, batch)
        else:
            _run_side_by_side(experiment, out_dir, batch, jobs)
    results.write_summary(experiment, out_dir)
    return results.count(out_dir, runs)


class Batch:
    """The runs left, handed out to the network slots as they ask: a slot
    gets the first run left of its network's profile, so that one network
    serves them all, else the first run left. The summary (always in run
    order) is written whenever a network comes down."""

    def __init__(self, experiment, out_dir, pending, progress):
        self.experiment = experiment
        self.out_dir = out_dir
        self.left = list(pending)
        self.progress = progress

    def next(self, profile):
        """The next run for a slot whose network has `profile` (None: no
        network); None when none is left."""
        run = next((r for r in self.left if r.profile == profile),
                   self.left[0] if self.left else None)
        if run is not None:
            self.left.remove(run)
        return run

    def done(self, run, ok):
        self.progress.update(run.run_id, ok)

    def network_down(self):
        results.write_summary(self.experiment, self.out_dir)

    def stop(self):
        """Hands out no more runs."""
        self.left.clear()


def run_slot(slot, experiment, out_dir, batch):
    """Runs the runs `batch` hands out on networks in network slot `slot`,
    one network for the runs of a profile in a row. A switch that dies
    fails its run; the slot goes on with a new one."""
    run = batch.next(None)
    while run is not None:
        profile = run.profile
        once = None
        try:
            with emulated_link(experiment.profiles[profile], experiment.fixed,
                               experiment.mobile, slot.grpc_port, drive=False, slot=slot,
                               thrift_port=slot.thrift_port) as net:
                net.staticArp()  # no ARP exchange over the slow link inside a run
                # Reads only: each run's drivers stay primary, and get its digests.
                with Switch(f"127.0.0.1:{slot.grpc_port}", primary=False) as switch:
                    while run is not None and run.profile == profile:
                        once = RunOnce(experiment, run, net, switch, slot.grpc_port, out_dir)
                        batch.done(run, once.execute())
                        once = None
                        run = batch.next(profile)
        except SwitchDied as err:
            if once is None:
                raise   # between runs, where nothing can have failed: never
            once.fail(str(err))
            batch.done(once.run, False)
            print(f"{once.run.run_id}: {err}; the batch goes on with a new switch",
                  file=sys.stderr, flush=True)
            run = batch.next(profile)
        batch.network_down()


@dataclass
class _SlotProcess:
    slot: NetworkSlot
    process: multiprocessing.Process
    run: object = None     # the run it was handed last, until it says it is done
    error: str = None      # why it failed, as it said


def _run_side_by_side(experiment, out_dir, batch, jobs):
    """Runs `batch` in `jobs` network slots, each in a process of its own
    forked from this one, which keeps the batch and hands out the runs. A
    slot's process that dies in a run (killed) fails that run; what it made
    is cleaned and a new process takes the slot. A slot that fails stops
    the batch once the other slots' runs are done."""
    fork = multiprocessing.get_context("fork")
    slots = {}   # our end of a slot's pipe: _SlotProcess

    def start(slot):
        ours, theirs = fork.Pipe()
        process = fork.Process(target=_slot_process, name=f"network slot {slot.number}",
                               args=(slot, experiment, out_dir, theirs))
        process.start()
        theirs.close()
        slots[ours] = _SlotProcess(slot, process)

    ended = []
    try:
        for number in range(jobs):
            slot = NetworkSlot(number, jobs)
            print(f"network slot {number}: switch {slot.switch_name} on core "
                  f"{slot.switch_core()}, P4Runtime 127.0.0.1:{slot.grpc_port}, Thrift "
                  f"{slot.thrift_port}", file=sys.stderr, flush=True)
            start(slot)
        while slots:
            for connection in wait(list(slots)):
                held = slots[connection]
                try:
                    message = connection.recv()
                except (EOFError, OSError):   # it ended
                    del slots[connection]
                    connection.close()
                    held.process.join()
                    ended.append(held)
                    if held.process.exitcode != 0 and held.error is None:
                        _killed(held, out_dir, batch, start)
                    continue
                if message[0] == "next":
                    held.run = batch.next(message[1])
                    try:
                        connection.send(held.run)
                    except OSError:
                        pass   # it died asking: its end is read next, and fails the run
                elif message[0] == "done":
                    batch.done(held.run, message[1])
                    held.run = None
                elif message[0] == "down":
                    batch.network_down()
                else:   # "failed"
                    held.error = message[1]
                    batch.stop()
    finally:
        for held in slots.values():   # this process is being stopped: so are they
            held.process.terminate()
        for held in slots.values():
            held.process.join()
    errors = [held.error for held in ended if held.error]
    if errors:
        raise RuntimeError("; ".join(errors))


def _killed(held, out_dir, batch, start):
    """After a slot's process died without a word: cleans what it made; the
    run it was in fails, and a new process takes the slot."""
    why = f"{held.process.name}'s process (pid {held.process.pid}) " + (
        f"was killed by signal {-held.process.exitcode}" if held.process.exitcode < 0
        else f"exited with code {held.process.exitcode}")
    leftovers.clean_before_building(prefix=f"{held.process.name}: ")
    if held.run is None:
        print(f"linkemu: {why}, between runs", file=sys.stderr, flush=True)
        return
    fail_run(out_dir, held.run, why)
    batch.done(held.run, False)
    print(f"{held.run.run_id}: {why}; the batch goes on with a new process",
          file=sys.stderr, flush=True)
    if batch.left:
        start(held.slot)


def _slot_process(slot, experiment, out_dir, connection):
    """A network slot's process: runs what the batch's process hands it."""
    leftovers.forked()
    leftovers.exit_on_termination()
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the batch's process's to act on
    try:
        run_slot(slot, experiment, out_dir, _BatchOverPipe(connection))
    except Exception as err:
        traceback.print_exc()
        connection.send(("failed", f"network slot {slot.number}: {type(err).__name__}: {err}"))
        sys.exit(1)


class _BatchOverPipe:
    """The batch as a slot's process sees it, over a pipe to the batch's
    process. When that process is gone no run is left."""

    def __init__(self, connection):
        self.connection = connection
        self.parent = os.getppid()

    def next(self, profile):
        try:
            self.connection.send(("next", profile))
            while not self.connection.poll(1.0):
                if os.getppid() != self.parent:
                    return None
            return self.connection.recv()
        except (EOFError, OSError):
            return None

    def done(self, run, ok):
        self._tell("done", ok)

    def network_down(self):
        self._tell("down")

    def _tell(self, *message):
        try:
            self.connection.send(message)
        except OSError:
            pass   # the batch's process is gone; the run is in its folder all the same


def fail_run(out_dir, run, error):
    """Records `run` failed with `error`, its measurement cut short."""
    work = results.partial_dir(out_dir, run)
    work.mkdir(parents=True, exist_ok=True)
    results.commit_run(out_dir, run, work, {"run": asdict(run), "status": "failed",
                                            "error": error})


class RunOnce:
    """One run on a started network."""

    def __init__(self, experiment, run, net, switch, grpc_port, out_dir):
        self.experiment = experiment
        self.run = run
        self.net = net
        self.switch = switch
        self.grpc_port = grpc_port
        self.profile = experiment.profiles[run.profile]
        self.flows = experiment.workloads[run.workload]
        self.work = results.partial_dir(out_dir, run)
        self.out_dir = out_dir
        self.processes = []

    def execute(self):
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir(parents=True)
        try:
            info = self._measure()
            status = {"status": "ok"}
        except (RunError, tcp_config.TcpConfigError, OSError, subprocess.SubprocessError) as err:
            info, status = None, {"status": "failed", "error": str(err)}
        finally:
            self._stop_processes()
        metrics = {"run": asdict(self.run), **status}
        if info is not None:
            try:
                computed, detail = run_metrics.compute(self.experiment, self.run, self.work,
                                                       info)
                metrics.update(computed)
                status = self._event_check(metrics) or status
                if self.run.replication == 0:
                    plots.run_plots(self.work, metrics, detail)
            except Exception as err:  # one run's analysis must not end the batch
                metrics.update(status="failed", error=f"metrics: {err!r}")
                status = {"status": "failed"}
                traceback.print_exc()
            if not self.experiment.keep_captures:
                for pcap in self.work.glob("*.pcap"):
                    pcap.unlink()
        results.commit_run(self.out_dir, self.run, self.work, metrics)
        return status["status"] == "ok"

    def fail(self, error):
        """Records the run failed with `error`, its measurement cut short."""
        fail_run(self.out_dir, self.run, error)

    def _event_check(self, metrics):
        """A failed status when the experiment rejects runs whose event log
        shows a release later than its threshold."""
        check = self.experiment.event_log
        timing = metrics.get("event_log", {}).get("timing")
        if check is None or not check.reject or timing is None or timing["passed"]:
            return None
        error = (f"event log: {timing['overshoots']} of {timing['released']} packets "
                 f"released more than {check.threshold_us / 1e3:g} ms late (worst "
                 f"{timing['error_max_us'] / 1e3:.1f} ms, p99 "
                 f"{timing['error_p99_us'] / 1e3:.1f} ms), {timing['early']} early: "
                 f"the switch did not keep up")
        metrics.update(status="failed", error=error)
        return {"status": "failed", "error": error}

    # -- the steps of a run

    def _measure(self):
        self._wait_idle()
        # The profile afresh: its AQM starts as a new qdisc, so a run does
        # not depend on the runs before it on this network.
        with Switch(f"127.0.0.1:{self.grpc_port}") as controller:
            push_profile(controller, self.profile)
        tcp = self._configure_tcp()
        hosts = {h.name: h for h in self.net.hosts}
        ports = linkemu_switch(self.net).ports_by_number()
        captures = [Capture(ports[int(name[1:])], "inout", self.work / f"{name}.pcap")
                    for name in hosts]
        before = read_counters(self.switch)
        for capture in captures:
            capture.start(settle=0)
        time.sleep(0.5)  # tcpdump attaches its filter after it starts
        segments = None
        if self.profile.states is not None:
            segments = walk(self.profile.states, seed=self.experiment.seed + self.run.replication)
        try:
            check = self.experiment.event_log
            events = self.work / "events.csv" if check else None
            with link_drivers(self.profile, self.grpc_port, segments, self.work / "timeline.csv",
                              self.work / "rates.csv", events,
                              check.sample if check else 1.0,
                              self.work / "queue.csv") as drivers:
                for index, flow in enumerate(self.flows):
                    self._start_server(index, flow, hosts)
                start_unix = time.time()
                deadline = time.monotonic() + self.experiment.run_timeout_s
                self._run_clients(hosts, deadline)
                self._drain(deadline)
                for driver in drivers:
                    if driver.error is not None:
                        raise RunError(f"{type(driver).__name__} failed: {driver.error}")
            end_unix = time.time()
        finally:
            self._stop_processes()
            for capture in captures:
                capture.stop()
        after = read_counters(self.switch)
        return {"start_unix": start_unix, "end_unix": end_unix, "tcp": tcp,
                "counters": _difference(after, before),
                "addresses": {name: host.IP() for name, host in hosts.items()},
                "ports": [FIRST_PORT + i for i in range(len(self.flows))]}

    def _wait_idle(self):
        """Until no frame is held in the switch (the last run's are gone)."""
        _, inside = wait_until_idle(self.switch, IDLE_TIMEOUT_S)
        if inside:
            found = ", ".join(f"{d} {n}" for d, n in inside.items())
            raise RunError(f"frames that neither left the link nor were dropped by it "
                           f"after {IDLE_TIMEOUT_S:.0f} s ({found}): lost inside BMv2, "
                           "whose queues hold 64 frames a port, or still held")

    def _configure_tcp(self):
        held = {}
        for host in self.net.hosts:
            config = self.experiment.tcp[self.run.tcp][host.name]
            interface = host.defaultIntf().name
            mtu = config.mtu
            if mtu is not None and mtu > self.profile.mtu:
                raise tcp_config.TcpConfigError(
                    f"{host.name}: mtu {mtu} is over the profile's MTU {self.profile.mtu}")
            tcp_config.apply(config, interface, host.IP(), host.cmd)
            try:
                tcp_config.verify(config, interface, host.cmd)
            except tcp_config.TcpConfigError as err:
                raise tcp_config.TcpConfigError(f"{host.name}: {err}") from None
            held[host.name] = tcp_config.read_back(config, interface, host.cmd)
        return held

    def _spawn(self, host, args, output=None):
        stdout = open(output, "w") if output else subprocess.DEVNULL
        try:
            process = host.popen(args, stdout=stdout, stderr=subprocess.PIPE, text=True)
        finally:
            if output:
                stdout.close()
        self.processes.append(process)
        return process

    def _start_server(self, index, flow, hosts):
        host = hosts[flow.server]
        port = FIRST_PORT + index
        address = host.IP()
        if flow.app == "http":
            args = APPS + ["http-server", "--bind", address, "--port", str(port)]
        elif flow.app == "bulk":
            args = APPS + ["bulk-server", "--bind", address, "--port", str(port),
                           "--bytes", str(flow.bytes)]
        elif flow.app == "udp":
            args = APPS + ["udp-sink", "--bind", address, "--port", str(port),
                           "--out", str(self.work / f"flow{index}-sink.json")]
        else:
            args = ["iperf3", "-s", "-1", "-B", address, "-p", str(port)]
        process = self._spawn(host, args)
        protocol = "u" if flow.app == "udp" else "t"
        deadline = time.monotonic() + 10
        while not host.cmd(f"ss -{protocol}lnH sport = :{port}").strip():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RunError(f"{flow.app} server on {host.name}:{port} did not start: "
                               f"{_stderr(process)}")
            time.sleep(0.05)

    def _client_args(self, index, flow, server_address):
        port = str(FIRST_PORT + index)
        out = str(self.work / f"flow{index}.json")
        if flow.app == "http":
            return APPS + ["http-client", "--server", server_address, "--port", port,
                           "--page", flow.page, "--http", flow.http,
                           "--parallel", str(flow.parallel), "--inline", flow.inline,
                           "--out", out, "--timeout", str(self.experiment.run_timeout_s)], None
        if flow.app == "bulk":
            return APPS + ["bulk-client", "--server", server_address, "--port", port,
                           "--out", out, "--timeout", str(self.experiment.run_timeout_s)], None
        if flow.app == "udp":
            return APPS + ["udp-source", "--to", server_address, "--port", port,
                           "--payload", str(flow.payload), "--interval", str(flow.interval_s),
                           "--duration", str(flow.duration_s), "--dscp", str(flow.dscp),
                           "--out", out], None
        args = ["iperf3", "-c", server_address, "-p", port, "-J",
                "-t", f"{flow.duration_s:g}", "-P", str(flow.parallel)]
        if flow.window is not None:
            args += ["-w", str(flow.window)]
        if flow.payload is not None:
            args += ["-l", str(flow.payload)]
        if flow.udp_rate_bps is not None:
            args += ["-u", "-b", f"{flow.udp_rate_bps:.0f}"]
        return args, out

    def _run_clients(self, hosts, deadline):
        """Starts each client at its offset and waits for all of them."""
        origin = time.monotonic()
        clients = []
        for index, flow in sorted(enumerate(self.flows), key=lambda item: item[1].start_s):
            time.sleep(max(0.0, origin + flow.start_s - time.monotonic()))
            args, stdout = self._client_args(index, flow, hosts[flow.server].IP())
            clients.append((flow, self._spawn(hosts[flow.client], args, stdout)))
        for flow, process in clients:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise RunError(f"{flow.app} client on {flow.client} still running after "
                               f"run_timeout {self.experiment.run_timeout_s:g} s") from None
            if process.returncode != 0:
                raise RunError(f"{flow.app} client on {flow.client} failed "
                               f"(exit {process.returncode}): {_stderr(process)}")

    def _drain(self, deadline):
        """Lets every connection finish closing (a FIN may wait behind ARQ or
        be dropped and resent), then the last frames through the link."""
        while any(host.cmd(f"ss -tanH {CLOSING_STATES}").strip() for host in self.net.hosts):
            if time.monotonic() > deadline:
                raise RunError("connections still open after run_timeout "
                               f"{self.experiment.run_timeout_s:g} s")
            time.sleep(0.1)
        time.sleep(2 * max(self.profile.downlink.delay_us, self.profile.uplink.delay_us) / 1e6
                   + 0.2)
        self._wait_idle()

    def _stop_processes(self):
        for process in self.processes:
            leftovers.stop_child(process)
        self.processes = []


def _stderr(process):
    if process.poll() is None or process.stderr is None:
        return ""
    return process.stderr.read().strip()[-500:]


def _difference(after, before):
    return {name: {cell: [a[0] - before[name].get(cell, (0, 0))[0],
                          a[1] - before[name].get(cell, (0, 0))[1]]
                   for cell, a in cells.items()}
            for name, cells in after.items()}

