"""linkemu: configure and observe the emulated link on a running switch."""

import argparse
import importlib
import itertools
import json
import os
import sys
from pathlib import Path

from .drivers.queue_monitor import QueueMonitor
from .drivers.state_driver import RateDriver, StateDriver, default_record_path
from .experiments import shards, slurm
from .experiments.experiment import ExperimentError, load_experiment
from .experiments.tcp_config import bpf_controls
from .model.fields import shown
from .model.link_states import TimelineError, read_timeline, walk, write_timeline
from .model.profile import ProfileError, load_profile
from .switch.codes import CLASS_IDS, DIRECTION_IDS
from .switch.counters import QUEUE_COUNTERS, read_counters
from .switch.entries.link_params import link_error_directions
from .switch.errors import P4RuntimeError
from .switch.p4info import P4Info
from .switch.p4runtime import Switch
from .switch.ports import Port, PortLayout
from .switch.push import entry_problems, install, push_profile
from .testbed import bpf_cc, leftovers
from .testbed.bmv2 import GET_TOOLS, SWITCH_TOOLS, hold_warnings, missing_tools
from .testbed.slots import MAX_SLOTS


P4INFO = "build/linkemu.p4info.txtpb"


def _check_each(paths, load, show):
    """Loads every file, reporting each bad one rather than stopping at the
    first; 1 if any was bad."""
    bad = 0
    for path in paths:
        try:
            show(path, load(path))
        except (ProfileError, ExperimentError) as err:
            print(f"linkemu: {err}", file=sys.stderr)
            bad += 1
    if bad and len(paths) > 1:
        print(f"linkemu: {bad} of {len(paths)} files are invalid", file=sys.stderr)
    return 1 if bad else 0


def _program(p4info_path):
    """The P4Info of the compiled program, or None when there is none yet
    (then only what needs no field widths is checked)."""
    try:
        return P4Info.from_file(p4info_path)
    except FileNotFoundError:
        print(f"linkemu: no {p4info_path} (make build): the table entries are not checked "
              "against the program's field widths and table sizes", file=sys.stderr)
        return None


def _writable(profiles, p4info):
    """Problems of the profiles ({name: Profile}) that push could not write."""
    return [f"profile {name}: {problem}" for name, profile in profiles.items()
            for problem in entry_problems(profile, p4info)]


def _check(args):
    p4info = _program(args.p4info)

    def load(path):
        profile = load_profile(path)
        problems = entry_problems(profile, p4info)
        if problems:
            raise ProfileError(path, problems)
        return profile

    def show(path, profile):
        print(f"{path}: {profile.name}: MTU {profile.mtu}")
        for name, direction in profile.directions().items():
            print(f"  {name:8} {direction.describe()}")
        for warning in hold_warnings(profile):
            print(f"  {warning}")
    return _check_each(args.profiles, load, show)


def _connect(args, primary=True, yields=False):
    """A connection to the switch; an observer (not `primary`) for commands
    that only read, so that they never take the switch from a running driver
    or event log; one that `yields` for those that need the primary's
    packet-ins but must not take them from one."""
    return Switch(args.switch, args.device_id, timeout=args.timeout, primary=primary,
                  yields=yields)


def _warn(profile):
    for warning in hold_warnings(profile):
        print(f"linkemu: {profile.name}: {warning}", file=sys.stderr)


def _install(args):
    profile = load_profile(args.profile)
    _warn(profile)
    layout = PortLayout(tuple(args.fixed), tuple(args.mobile))
    with _connect(args) as switch:
        install(switch, args.p4info, args.bmv2_json, layout, profile)
    print(f"installed {args.bmv2_json} with profile {profile.name} on {args.switch}")


def _push(args):
    profile = load_profile(args.profile)
    _warn(profile)
    with _connect(args) as switch:
        push_profile(switch, profile)
    print(f"pushed profile {profile.name} to {args.switch}")


def _counters(args):
    with _connect(args, primary=False) as switch:
        counters = read_counters(switch)
    if args.json:
        print(json.dumps(counters, indent=2))
        return
    print(f"{'counter':26} {'downlink pkts':>14} {'bytes':>12} {'uplink pkts':>12} {'bytes':>12}")
    split = any(cells.get(f"{d}/priority", (0, 0))[0]
                for cells in counters.values() for d in DIRECTION_IDS)
    for name, cells in counters.items():
        rows = [(name, "")]
        if split and name in QUEUE_COUNTERS:
            rows += [(f"  {cls}", f"/{cls}") for cls in CLASS_IDS]
        for label, suffix in rows:
            down = cells.get(f"downlink{suffix}", (0, 0))
            up = cells.get(f"uplink{suffix}", (0, 0))
            print(f"{label:26} {down[0]:14} {down[1]:12} {up[0]:12} {up[1]:12}")


def _chain(profile, path):
    if profile.states is None:
        raise ValueError(f"{path}: the profile defines no link_states")
    return profile.states


def _segments(args, chain):
    if args.replay:
        return read_timeline(args.replay, chain)
    return walk(chain, seed=args.seed)


def _timeline(args):
    chain = _chain(load_profile(args.profile), args.profile)
    segments = itertools.takewhile(lambda s: s.start_us < args.duration * 1e6,
                                   walk(chain, seed=args.seed))
    count = write_timeline(segments, args.output)
    print(f"wrote {count} segments to {args.output}")


def _states(args):
    profile = load_profile(args.profile)
    chain = _chain(profile, args.profile)
    segments = _segments(args, chain)
    record = args.record or default_record_path(profile.name)
    with _connect(args) as switch:
        drawn = link_error_directions(switch)
        undrawn = [d for d in DIRECTION_IDS if chain.has_errors(d) and d not in drawn]
        if undrawn:
            raise ValueError(f"{args.profile}: its link states err the {' and '.join(undrawn)}, "
                             "where the profile on the switch draws no link errors: push "
                             f"this profile first (linkemu push {args.profile})")
        driver = StateDriver(switch, chain, segments, record_path=record)
        _until_interrupted(driver.run, args.duration)
    print(f"state changes applied: {driver.latency_summary()}; timeline in {record}")


def _rates(args):
    profile = load_profile(args.profile)
    if not any(d.rate_schedule for d in profile.directions().values()):
        raise ValueError(f"{args.profile}: no direction has rate_changes or a rate_trace")
    record = args.record or default_record_path(profile.name, "rates")
    with _connect(args) as switch:
        driver = RateDriver(switch, profile, record_path=record)
        _until_interrupted(driver.run, args.duration)
    print(f"rate changes applied: {driver.latency_summary()}; record in {record}")


def _until_interrupted(run, duration_s):
    """Runs for `duration_s` seconds, or until Ctrl-C when it is None."""
    try:
        run(duration_s=duration_s)
    except KeyboardInterrupt:
        pass


def _clean(args):
    if os.geteuid() != 0:
        raise ValueError("clean needs root, as the runs that left things behind did")
    removed = leftovers.clean()
    for thing in removed:
        print(f"removed {thing}")
    if not removed:
        print(f"nothing left behind by a killed run (records: {leftovers.RECORDS_DIR})")


def _queue(args):
    # The switch answers the monitor's probes on its primary connection only:
    # this one, unless a driver or an event log holds it.
    try:
        with _connect(args, yields=True) as switch:
            _until_interrupted(QueueMonitor(switch, args.output, args.interval).run,
                               args.duration)
    except P4RuntimeError as err:
        raise P4RuntimeError(f"{err}: linkemu queue samples only a switch that no driver or "
                             "event log works; an experiment's run samples its own "
                             "(queue.csv)") from None
    print(f"queue samples in {args.output}")


def _experiment_check(args):
    p4info = _program(args.p4info)

    def load(path):
        experiment = load_experiment(path, short=args.short)
        problems = _writable(experiment.profiles, p4info)
        if problems:
            raise ExperimentError(path, problems)
        return experiment

    def show(path, experiment):
        print(f"{path}: {experiment.name}: {len(experiment.runs())} runs "
              f"({len(experiment.cells())} cells x {experiment.replications} replications)")
        for e in experiment.expectations:
            print(f"  expect {e.describe()}" + (f" ({e.source})" if e.source else ""))
        for control, names in bpf_controls(experiment.tcp).items():
            problem = bpf_cc.missing(control)
            if problem:
                print(f"  tcp config {', '.join(names)}: {control} cannot be registered on "
                      f"this machine: {problem}")
    return _check_each(args.files, load, show)


def _analysis(module):
    """linkemu.experiments.`module`, which needs linkemu's analysis extra."""
    try:
        return importlib.import_module(f".experiments.{module}", __package__)
    except ImportError as err:
        raise OSError(f"{err.name} is missing: experiments need linkemu's analysis extra "
                      "(pip install -e 'control_plane[analysis]', or 'make setup')") from None


def _results_folder(args, experiment):
    return Path(args.out or Path("results") / (experiment.name + ("-short" if args.short else "")))


def _experiment_run(args):
    # Mininet, the runner and the analysis are imported only here: the rest of
    # the CLI works on any machine with a switch, without the analysis extra.
    from mininet.log import setLogLevel

    from .testbed.emunet import BUILD
    runner = _analysis("runner")

    experiment = load_experiment(args.file, short=args.short)
    apps = {f.app for flows in experiment.workloads.values() for f in flows}
    missing = missing_tools(*SWITCH_TOOLS, "ethtool", "tcpdump",
                            *(["iperf3"] if "iperf" in apps else []))
    if missing:
        raise OSError(f"missing {', '.join(missing)}; BMv2 comes from {GET_TOOLS}")
    for built in ("linkemu.json", "linkemu.p4info.txtpb"):
        if not (BUILD / built).exists():
            raise OSError(f"build/{built} is missing: run 'make build'")
    problems = _writable(experiment.profiles, P4Info.from_file(BUILD / "linkemu.p4info.txtpb"))
    if problems:
        raise ExperimentError(args.file, problems)
    if os.geteuid() != 0:
        raise OSError("experiments run in Mininet, which needs root")
    out = _results_folder(args, experiment)
    if args.shard:
        if not args.out:
            out = shards.folder(out, args.shard.index, args.shard.count)
        experiment = shards.share(experiment, args.shard)
    setLogLevel("warning")
    runner.run_batch(experiment, out, Path(args.file).read_text(), args.jobs)
    return _report(experiment, out, "the same command retries them and keeps the finished ones")


def _report(experiment, out, retry):
    """Prints what a results folder holds against the experiment's
    expectations; 1 while runs are missing (`retry` says what to do) or an
    expectation is not met."""
    results = _analysis("results")
    runs = experiment.runs()
    complete, failed = results.count(out, runs)
    shard = f" of shard {experiment.shard}" if experiment.shard else ""
    print(f"{out}: {complete} of {len(runs)} runs{shard} complete, {failed} failed; "
          f"summary in {out / 'summary.md'}")
    verdicts = results.against_study(experiment, results.cell_statistics(experiment, out))
    for verdict in verdicts:
        print(f"expect {verdict.describe()}")
    if complete < len(runs):
        print(f"some runs did not complete; {retry}", file=sys.stderr)
        return 1
    unmet = [v for v in verdicts if v.result != "met"]
    if unmet:
        print(f"{len(unmet)} of {len(verdicts)} expectations not met (missed, or no run has "
              f"the metric); see 'Against the study' in {out / 'summary.md'}", file=sys.stderr)
        return 1
    return 0


def _experiment_merge(args):
    results = _analysis("results")
    experiment = load_experiment(args.file, short=args.short)
    out = _results_folder(args, experiment)
    try:
        merged = results.merge(experiment, Path(args.file).read_text(), args.folders, out)
    except results.ResultsError as err:
        raise ValueError(f"nothing merged:\n{err}") from None
    for run_id, folders in merged.duplicates.items():
        print(f"{run_id}: the same in {', '.join(map(str, folders))}; taken once",
              file=sys.stderr)
    for folder, run_ids in merged.strays.items():
        print(f"{folder}: {len(run_ids)} runs of the file's other form (full or --short) "
              f"left out: {_some(run_ids)}", file=sys.stderr)
    if merged.missing:
        print(f"{len(merged.missing)} runs in no folder: {_some(merged.missing)}",
              file=sys.stderr)
    return _report(experiment, out, "run their shards again (they resume), then merge again")


def _some(names, at_most=5):
    return ", ".join(names[:at_most]) + (f" and {len(names) - at_most} more"
                                         if len(names) > at_most else "")


def _experiment_slurm(args):
    experiment = load_experiment(args.file, short=args.short)
    out = _results_folder(args, experiment).absolute()
    file = Path(args.file).absolute()
    container = None
    if args.image:
        # What the run reads (the profiles: by default beside the experiment
        # file's folder) is found from here, or in a folder given with --bind.
        folders = [Path.cwd(), file.parent, *(Path(b).absolute() for b in args.bind)]
        missing = [str(f) for f in folders if not f.is_dir()]
        if missing:
            raise ValueError(f"--bind {missing[0]}: no such folder")
        container = (args.engine, args.image, folders, args.engine_option)
    elif args.bind or args.engine_option or args.engine != slurm.DEFAULT_ENGINE:
        raise ValueError("--engine, --engine-option and --bind go with --image: without "
                         "one the jobs run this linkemu")
    texts = slurm.scripts(experiment, file, out, args.shards, args.short, args.sbatch,
                          container)
    array, merge = slurm.write(out, texts)
    print(f"wrote {array} ({args.shards} tasks, shard K of {args.shards} each) and {merge}")
    if not args.submit:
        print(f"submit them with:\n  {slurm.submit_commands(array, merge)}")
        return 0
    array_id, merge_id = slurm.submit(array, merge)
    print(f"submitted array job {array_id} and merge job {merge_id} after it; "
          f"results in {out}")
    return 0


MAX_SECONDS = 30 * 24 * 3600   # a month: longer is a slip


def _seconds(text):
    """A duration or interval in seconds, finite and positive."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{shown(text)}: expected seconds, e.g. 30") from None
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{shown(text)}: out of range; allowed more than 0 "
                                         f"up to {MAX_SECONDS} seconds (30 days)")
    return value


def _shard(text):
    try:
        return shards.Shard.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _count(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{shown(text)}: expected a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: at least 1")
    return value


def _engine_option(text):
    if not text.startswith("-"):
        raise argparse.ArgumentTypeError(f"{shown(text)}: expected an option, as "
                                         "--cpu-rt-runtime=100000")
    return text


def _jobs(text):
    value = _count(text)
    if value > MAX_SLOTS:
        raise argparse.ArgumentTypeError(f"{value}: at most {MAX_SLOTS} networks at once")
    return value


def _port(text):
    try:
        return Port.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def build_parser():
    parser = argparse.ArgumentParser(prog="linkemu", description=__doc__)
    parser.add_argument("--switch", default="127.0.0.1:9559",
                        help="P4Runtime address of simple_switch_grpc (default %(default)s)")
    parser.add_argument("--device-id", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="seconds to wait for the switch (default %(default)s)")
    commands = parser.add_subparsers(dest="command", required=True)

    check = commands.add_parser("check", help="validate profiles without a switch")
    check.add_argument("profiles", nargs="+", metavar="PROFILE")
    check.add_argument("--p4info", default=P4INFO,
                       help="the compiled program's P4Info (default %(default)s)")
    check.set_defaults(run=_check)

    install = commands.add_parser(
        "install", help="load the P4 program, the port layout and a profile")
    install.add_argument("profile", metavar="PROFILE")
    install.add_argument("--fixed", type=_port, action="append", required=True,
                         metavar="PORT[@MAC]", help="a port on the fixed (server) side")
    install.add_argument("--mobile", type=_port, action="append", required=True,
                         metavar="PORT[@MAC]", help="a port on the mobile (client) side")
    install.add_argument("--p4info", default=P4INFO)
    install.add_argument("--bmv2-json", default="build/linkemu.json")
    install.set_defaults(run=_install)

    push = commands.add_parser("push", help="change the link of a running switch live")
    push.add_argument("profile", metavar="PROFILE")
    push.set_defaults(run=_push)

    states = commands.add_parser(
        "states", help="walk the profile's link states on the switch in real time")
    states.add_argument("profile", metavar="PROFILE")
    source = states.add_mutually_exclusive_group()
    source.add_argument("--seed", type=int, help="overrides the profile's seed")
    source.add_argument("--replay", metavar="TIMELINE", help="a recorded timeline (CSV)")
    states.add_argument("--record", metavar="CSV",
                        help="where to write the applied timeline with each change's "
                             "latency (default timeline-PROFILE-TIME.csv)")
    states.add_argument("--duration", type=_seconds, help="seconds (default: until Ctrl-C)")
    states.set_defaults(run=_states)

    rates = commands.add_parser(
        "rates", help="step the profile's rate changes or rate trace on the switch in real time")
    rates.add_argument("profile", metavar="PROFILE")
    rates.add_argument("--record", metavar="CSV",
                       help="where to write each change with its latency "
                            "(default rates-PROFILE-TIME.csv)")
    rates.add_argument("--duration", type=_seconds, help="seconds (default: until Ctrl-C)")
    rates.set_defaults(run=_rates)

    timeline = commands.add_parser(
        "timeline", help="draw a state timeline to replay later, without a switch")
    timeline.add_argument("profile", metavar="PROFILE")
    timeline.add_argument("--seed", type=int, help="overrides the profile's seed")
    timeline.add_argument("--duration", type=_seconds, required=True, help="seconds")
    timeline.add_argument("--output", "-o", required=True, metavar="CSV")
    timeline.set_defaults(run=_timeline)

    queue = commands.add_parser(
        "queue", help="sample the router queue over time into a CSV file")
    queue.add_argument("--interval", type=_seconds, default=0.01, help="seconds (default 0.01)")
    queue.add_argument("--duration", type=_seconds, help="seconds (default: until Ctrl-C)")
    queue.add_argument("--output", "-o", required=True, metavar="CSV")
    queue.set_defaults(run=_queue)

    experiment = commands.add_parser(
        "experiment", help="run the studies' workloads in Mininet, with metrics and plots")
    experiment_commands = experiment.add_subparsers(dest="experiment_command", required=True)
    experiment_check = experiment_commands.add_parser(
        "check", help="validate experiment files and count their runs")
    experiment_check.add_argument("files", nargs="+", metavar="FILE")
    experiment_check.add_argument("--short", action="store_true", help="the short form")
    experiment_check.add_argument("--p4info", default=P4INFO,
                                  help="the compiled program's P4Info (default %(default)s)")
    experiment_check.set_defaults(run=_experiment_check)
    experiment_run = experiment_commands.add_parser(
        "run", help="run (or resume) a batch; needs root, Mininet and BMv2")
    experiment_run.add_argument("file", metavar="FILE")
    experiment_run.add_argument("--short", action="store_true",
                                help="the file's short form: fewer replications and cells")
    experiment_run.add_argument("--out", metavar="DIR",
                                help="results folder (default results/NAME[-short]); an "
                                     "existing one is resumed")
    experiment_run.add_argument("--shard", type=_shard, metavar="K/N",
                                help="only shard K of N (K from 1 to N), chosen by run id; "
                                     "its results go to OUT/shards/K-of-N, OUT as above "
                                     "(--out: there instead)")
    experiment_run.add_argument("--jobs", type=_jobs, default=1, metavar="N",
                                help="up to N runs at once, each in a network of its own "
                                     "(its switch on a core of its own; warns when N is "
                                     "over the cores); results as with 1")
    experiment_run.set_defaults(run=_experiment_run)
    experiment_merge = experiment_commands.add_parser(
        "merge", help="join the results folders of a batch's shards into one")
    experiment_merge.add_argument("file", metavar="FILE", help="the batch's experiment file")
    experiment_merge.add_argument("folders", nargs="+", metavar="DIR",
                                  help="the shards' results folders")
    experiment_merge.add_argument("--short", action="store_true",
                                  help="the shards ran the file's short form")
    experiment_merge.add_argument("--out", metavar="DIR",
                                  help="results folder (default results/NAME[-short])")
    experiment_merge.set_defaults(run=_experiment_merge)
    experiment_slurm = experiment_commands.add_parser(
        "slurm", help="write (or submit) a Slurm job array that runs the batch in N shards, "
                      "and a job that merges them; sbatch options after --")
    experiment_slurm.add_argument("file", metavar="FILE")
    experiment_slurm.add_argument("--shards", type=_count, required=True, metavar="N",
                                  help="tasks of the array, one shard each")
    experiment_slurm.add_argument("--short", action="store_true", help="the short form")
    experiment_slurm.add_argument("--out", metavar="DIR",
                                  help="results folder (default results/NAME[-short]); the "
                                       "shards go to DIR/shards, scripts and logs to DIR/slurm")
    experiment_slurm.add_argument("--submit", action="store_true",
                                  help="submit the jobs with sbatch")
    experiment_slurm.add_argument("--image", metavar="IMAGE",
                                  help="run linkemu in this image of the project's Dockerfile "
                                       "(make image), for nodes without the P4 tools")
    experiment_slurm.add_argument("--engine", default=slurm.DEFAULT_ENGINE,
                                  choices=("docker", "podman"),
                                  help="the nodes' container engine (default docker)")
    experiment_slurm.add_argument("--engine-option", action="append", default=[],
                                  type=_engine_option, metavar="OPTION",
                                  help="an option of the engine's run command, as "
                                       "--engine-option=--cpu-rt-runtime=100000")
    experiment_slurm.add_argument("--bind", action="append", default=[], metavar="DIR",
                                  help="a folder the run reads (profiles elsewhere) to bind "
                                       "into the container, besides the current folder and the "
                                       "experiment file's")
    experiment_slurm.set_defaults(run=_experiment_slurm)

    clean = commands.add_parser(
        "clean", help="remove what killed runs left behind (switches, hosts, interfaces, "
                      "Thrift guards), found by the records they wrote")
    clean.set_defaults(run=_clean)

    counters = commands.add_parser("counters", help="print the per-direction counters")
    counters.add_argument("--json", action="store_true", help="machine-readable output")
    counters.set_defaults(run=_counters)
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    # What follows `--` is sbatch's: argparse would not keep it for the end.
    end = argv.index("--") if "--" in argv else len(argv)
    parser = build_parser()
    args = parser.parse_args(argv[:end])
    if args.run is _experiment_slurm:
        args.sbatch = argv[end + 1:]
    elif end < len(argv):
        parser.error("only 'experiment slurm' takes options after --, for sbatch")
    leftovers.exit_on_termination()
    try:
        return args.run(args) or 0
    except (ProfileError, TimelineError, P4RuntimeError, ValueError, OSError) as err:
        print(f"linkemu: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
