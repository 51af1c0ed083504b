"""`mrclab run experiments/<name>.toml|<name> [--transport mrc|roce|tcp|all] [--results-dir results/] [--short]`.

--short runs the scenario's [short] version (emulation/config/scenario.py: fewer, smaller iterations and
the fault schedule scaled down), into results/<name>-short-<stamp>/.

For each transport: build the fabric (routing per transport: mrc -> the scenario's routing,
roce -> ecmp (optionally reconverging), tcp -> ecmp with dynamic reconvergence), start one
worker per host in its namespace, capture host ports (headers only), apply the fault schedule
through the controller's HTTP API at the right moments, show progress, and write

    results/<name>-<stamp>/
        scenario.toml                 copy of the scenario
        summary.json                  comparison of the transports run (+ printed table),
                                      exit_code, problems
        <transport>/
            summary.json              transport, verified, partial, problems, iteration_times_ms,
                                      fault_times_ns, recovery_ms, faults, faults_ok,
                                      faults_failed, faults_not_reached, ... (analysis.runmodel)
            worker.json               the worker config
            worker-h<n>.jsonl         worker event logs (iteration, goodput, ...)
            worker-h<n>.stderr        worker stderr
            faults-applied.jsonl      what the runner asked for and the controller's answers,
                                      and a "reached": false record per entry never sent
            faults.jsonl              the controller's fault log (copied from fabric/)
            stop-iteration.json       with iterations_after_faults: the timed iterations every
                                      rank runs, named once the last fault was applied
            fabric/                   controller log, spec, fault log (Fabric's run_dir)
            pcaps/h<n>-p<plane>.pcap  MRC headers only (-s CAPTURE_SNAPLEN)
            iterations.csv, goodput.csv
            cpu.csv                   the cores' busy share, cores per role and the
                                      hypervisor's steal, every 0.5 s
                                      (emulation/run/cpu_meter.py); summary.json "cpu" holds the
                                      same over the collective
                                      summary.json "sched_profile": run-queue wait and CPU per
                                      process class over the collective (analysis/
                                      sched_profile.py; --wide prints it), "scheduling": the
                                      [fabric] scheduling in force
            ovs_stalls.json           ovs-vswitchd's long poll intervals during the timed
                                      iterations; summary.json "fidelity" (analysis/fidelity.py,
                                      docs/fidelity.md) says whether the run measured the fabric

Fault times: at_s counts from the start of the timed iterations (the first worker's
warmup_done); at_iteration = N fires as soon as any rank has finished timed iteration N-1;
after_s = X fires X seconds after the previous entry (file order) was applied; with
[collective] iterations_after_faults = n every rank stops n iterations after the one in
progress when the last entry was applied (model/traffic_end.py).
Ctrl-C or a crash tears the fabric down (Fabric's context manager) and the summary is still
written from the logs, with "partial": true.

Exit code: 0 every transport verified and every scheduled fault took effect; 1 a transport did
not verify (incomplete, failed, wrong data); 2 bad scenario; 3 verified, but a scheduled fault
never took effect (sent after the traffic ended, refused by the controller, or never sent because
the traffic ended first or the fault scheduler died); 4 (only with --require-fidelity) all of the
above held, but a transport's fidelity verdict is not "ok" (analysis/fidelity.py); 130 interrupted.

This module orchestrates (fabric, workers, captures, teardown) and holds the CLI; the pieces it
drives live beside it: emulation/run/run_progress.py (log tail, progress bar), run_faults.py (fault
schedule), worker_wait.py (waiting for and releasing the workers), run_summary.py (summaries,
verdict, exit codes), run_output.py (CSV, table).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from emulation.cluster import options as cluster_options
from emulation.cluster.run_servers import RunServers
from emulation.network import path_monitor
from emulation.run import metrics_server, run_record
from emulation.config import scenario as scenario_mod
from emulation.calibration import time_scale as time_scale_mod
from analysis import fidelity_words, metric_names, sched_profile
from emulation.network.ovs_service import DB_PID_FILE, SWITCHD_PID_FILE
from emulation.run.cpu_meter import OVS_PID_FILES, CpuMeter, pids_from_files
from emulation.run.sched_meter import SchedMeter
from model import propagation
from emulation.run.run_faults import (FaultScheduler, RunProgress, unreached_reason,
                                      unreached_records)
from emulation.run.run_output import comparison_table
from emulation.run.run_progress import LogTail
from emulation.run.worker_wait import wait_timeout_s, wait_workers
from emulation.run.run_summary import (
    EXIT_BAD_SCENARIO,
    EXIT_FAULT_NOT_EFFECTIVE,
    EXIT_FIDELITY,
    EXIT_INTERRUPTED,
    EXIT_NOT_VERIFIED,
    EXIT_OK,
    summarize,
    top_summary,
)
from emulation.config.scenario import Scenario, ScenarioError
from traffic.core import codec
from traffic.workload.worker_config import MRCSettings, TcpSettings, WorkerConfig
from model import timescale
from model.argtypes import add_deprecated, add_renamed
from model.results import results_dir
from model.events import TRANSPORTS

# The exit codes are part of `mrclab run`'s interface, so they are importable from here.
__all__ = ["CAPTURE_SNAPLEN", "EXIT_BAD_SCENARIO", "EXIT_FAULT_NOT_EFFECTIVE", "EXIT_FIDELITY",
           "EXIT_INTERRUPTED",
           "EXIT_NOT_VERIFIED", "EXIT_OK", "add_arguments", "main", "run_transport",
           "worker_config"]

REPO_ROOT = Path(__file__).resolve().parents[2]


def mrc_header_snaplen() -> int:
    """Bytes tcpdump must keep so every MRC frame's headers survive whole (tcpdump's -s counts
    from the Ethernet header): the deepest stack the codec writes, an SRv6 (IPv6-in-IPv6) frame
    with BTH plus either a data packet's METH+TSETH+RETH+ImmDt or a whole control body with its
    ICRC (control packets have no payload, so they are kept entirely)."""
    outer = codec.ETH_LEN + 2 * codec.IP6_LEN + codec.UDP_LEN + codec.BTH_LEN
    data = codec.METH_LEN + codec.TSETH_LEN + codec.RETH_LEN + codec.IMM_LEN
    control = max(codec.SACK_LEN, codec.NACK_LEN, codec.PROBE_LEN) + codec.ICRC_LEN
    return outer + max(data, control)


CAPTURE_SNAPLEN = mrc_header_snaplen()


# ---------------------------------------------------------------- worker config


# How long the TCP workers may take to set up their connections, in emulated seconds.
TCP_CONNECT_TIMEOUT_S = 30.0


def worker_config(scn: Scenario, transport: str, log_dir: Path) -> WorkerConfig:
    """The configuration every worker of `transport` reads (traffic/workload/worker_config.py), from the
    scenario the machine runs (emulation/time_scale.wall_scenario)."""
    topo = scn.topology
    routing, _ = scn.routing_for(transport)
    coll = scn.collective
    # Unless the scenario bounds it, a worker answers its peers after its last iteration until
    # the runner has seen every rank done (worker_wait.wait_workers), at most one wait's length.
    mrc_settings = {"linger_s": wait_timeout_s(scn, transport), **(scn.mrc or {})}
    return WorkerConfig(
        scenario=scn.name,
        transport=transport,
        world_size=len(topo.hosts),
        hosts=[h.name for h in topo.hosts],
        collective=coll.kind,
        message_bytes=coll.message_bytes,
        iterations=coll.iterations,
        warmup=coll.warmup,
        qps_per_peer=coll.qps_per_peer,
        timeout_s=wait_timeout_s(scn, transport),
        incast_target=topo.host(coll.incast_target).index if coll.incast_target else 0,
        victim=[topo.host(v).index for v in coll.victim] if coll.victim else None,
        victim_only=coll.victim_only,
        log_dir=str(log_dir),
        goodput_interval_ms=scn.goodput_interval_ms,
        fabric=scn.spec.to_dict(),
        routing=routing,
        trimming=scn.trimming,
        tcp=TcpSettings(endpoints=[[[topo.nic_addr(h.index, p), scn.tcp_port]
                                    for p in range(scn.spec.planes)] for h in topo.hosts],
                        connect_timeout_s=timescale.wall_time(TCP_CONNECT_TIMEOUT_S,
                                                              float(scn.time_scale))),
        mrc=MRCSettings.from_dict(mrc_settings),
        time_scale=float(scn.time_scale),
    )


# ---------------------------------------------------------------- one transport


def run_transport(scn: Scenario, transport: str, tdir: Path) -> dict:
    """Run one transport of `scn` (as declared) into `tdir`, over the servers of its [cluster]
    (emulation/cluster/options.py; none: this machine). The fabric, workers, fault schedule and
    control plane get the wall world (emulation/calibration/time_scale.py); the summary is the
    emulated world's (analysis reads the run's files back through analysis/timescale.py)."""
    from emulation.network.fabric import Fabric  # deferred: Mininet, only once a run starts (not --validate-only)

    declared, scn = scn, time_scale_mod.wall_scenario(scn)
    k = float(scn.time_scale)

    _prepare_run_dir(tdir)
    routing, convergence = scn.routing_for(transport)
    config = worker_config(scn, transport, tdir)
    control = path_monitor.RunControlPlane(scn, transport, config, tdir)   # sets control_dir
    config.write(tdir / "worker.json")
    hosts = config.hosts
    tail = LogTail([tdir / f"worker-{h}.jsonl" for h in hosts])
    state = {"partial": True, "error": None, "exit_codes": {}, "applied": [], "scheduler_error": None}
    fabric_kw = {"trimming": scn.trimming_for(transport),
                 "switch_buffer_bytes": (None if scn.switch_buffer_kb is None
                                         else scn.switch_buffer_kb * 1024)}
    scheduler = meter = sched = metrics = servers = None
    sched_record = {"scheduling": scn.scheduling}
    procs: list[subprocess.Popen] = []
    stderr_files = []
    try:
        with Fabric(scn.spec, routing=routing, dynamic_convergence_s=convergence,
                    run_dir=tdir / "fabric", time_scale=k, control_class=scn.control_class,
                    scheduling=scn.scheduling,
                    placement=cluster_options.placement_for(scn),
                    **fabric_kw) as fab:
            servers = RunServers(fab, tdir, control.dir and str(control.dir))
            servers.prepare(tdir / "worker.json")
            captures = []
            meter, sched = _meters(fab, procs, captures)
            meter.start()
            if scn.capture:
                _start_captures(scn, fab, servers, captures)
            _start_workers(fab, hosts, servers, procs, stderr_files)
            scheduler = FaultScheduler(scn, tail, fab.api_port, tdir / "faults-applied.jsonl",
                                       publish=servers.publish if servers.clustered else None)
            scheduler.start()
            # the monitor stops before the last iteration: finishing peers stop answering probes
            control.start(fab.api_port,
                          lambda: tail.max_done() < scheduler.planned_iterations() - 1)
            metrics = metrics_server.start(scn, transport, tdir, fab.api_port)
            wait_workers(scn, transport, procs, tail, scheduler, state, fab.send_signal)
            meter.stop()
            sched_record = fab.scheduling.record()
            scheduler.stop()
            for cap in captures:
                cap.stop()
            state["partial"] = False
    except KeyboardInterrupt:
        state["error"] = "interrupted (Ctrl-C)"
        raise
    except Exception as exc:  # noqa: BLE001 - the summary records it; the fabric is down
        state["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        if metrics is not None:
            metrics.stop()
        if servers is not None:     # what the other servers hold, fetched back (or recorded)
            servers.collect()
        state["monitor_error"] = control.stop()
        _stop_scheduler(scheduler, state)
        _record_unreached(scn, scheduler, state, tail, tdir)
        for p, host in zip(procs, hosts):
            state["exit_codes"].setdefault(host, p.poll())
        for f in stderr_files:
            f.close()
        _copy_fabric_files(tdir)
        summary = summarize(declared, transport, tdir, state)
        if meter is not None:
            _add_cpu(summary, meter, k, tdir)
            _add_sched(summary, sched, k, sched_record)
        _add_cluster(summary, servers, k)
        summary.update(metric_names.of_summary(summary))   # every metric under its one name
        (tdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _stop_scheduler(scheduler, state: dict) -> None:
    """The fault scheduler stopped, what it applied and its error into the run's state."""
    if scheduler is not None:
        scheduler.stop()
        state["applied"] = scheduler.applied
        state["scheduler_error"] = scheduler.error


def _add_cluster(summary: dict, servers: RunServers | None, k: float) -> None:
    """A run over servers: its record (each server's clock and CPU over the timed iterations,
    wall times) and what failed on a server, among the problems."""
    if servers is None or not servers.clustered:
        return
    summary["cluster"] = servers.record(*(timescale.wall_ns(t, k) for t in (
        summary.get("timed_start_ns"), summary.get("traffic_end_ns"))))
    summary["problems"] = list(summary.get("problems") or []) + [
        f"cluster: {error}" for error in servers.errors]


def _prepare_run_dir(tdir: Path) -> None:
    tdir.mkdir(parents=True, exist_ok=True)
    (tdir / "pcaps").mkdir(exist_ok=True)
    # tcpdump stamps packets with the wall clock; logs use CLOCK_MONOTONIC. Two readings taken
    # back to back let analysis put pcap times on the monotonic axis (analysis.pcap.ClockOffset).
    (tdir / "clock.json").write_text(json.dumps(
        {"monotonic_ns": time.monotonic_ns(), "realtime_ns": time.time_ns()}))


def _meters(fab, procs: list, captures: list) -> tuple[CpuMeter, SchedMeter]:
    """The run's CPU meter by role and its scheduler meter by class, sampled together; `procs`
    and `captures` are read at each sample, so processes started after the meters are counted.
    Each sample also nices the workers' new threads but the packet loop, when the fabric's
    scheduling does (emulation/network/cgroups.py)."""
    workers = lambda: [p.pid for p in procs]           # noqa: E731
    captured = lambda: [c.proc.pid for c in captures]   # noqa: E731
    # none once the fabric is torn down (Ctrl-C): the meters' last sample comes later
    controller = lambda: [fab.controller_proc.pid] if fab.controller_proc else []  # noqa: E731
    runner = lambda: [os.getpid()]                      # noqa: E731
    # a worker's main thread runs the endpoint's packet loop (and the reductions between its
    # turns); its other threads the input prefetch and the goodput sampler
    sched = SchedMeter({"endpoint_loops": workers,
                        "ovs_vswitchd": lambda: pids_from_files([SWITCHD_PID_FILE]),
                        "ovsdb_server": lambda: pids_from_files([DB_PID_FILE]),
                        "captures": captured, "controller": controller, "runner": runner},
                       thread_classes={"endpoint_loops": "worker_threads"})
    cpu = CpuMeter({"workers": workers, "switches": lambda: pids_from_files(OVS_PID_FILES),
                    "captures": captured, "controller": controller, "runner": runner},
                   also=[sched.sample, lambda: fab.scheduling.demote_threads(workers())])
    return cpu, sched


def _start_captures(scn: Scenario, fab, servers: RunServers, captures: list) -> None:
    """One capture per host port, appended to `captures` as each starts; each writes where
    its host's server keeps the run's files (fetched back at the end)."""
    for h in scn.topology.hosts:
        for p in range(scn.spec.planes):
            path = servers.dir_of(h.name) / "pcaps" / f"{h.name}-p{p}.pcap"
            captures.append(fab.capture(h.index, p, path, snaplen=CAPTURE_SNAPLEN))


def _start_workers(fab, hosts, servers: RunServers, procs: list, stderr_files: list) -> None:
    """One worker process per rank, appended to `procs` (its stderr file here to
    `stderr_files`); the event log of a worker on another server followed here."""
    for rank, host in enumerate(hosts):
        err = open(servers.tdir / f"worker-{host}.stderr", "w")
        stderr_files.append(err)
        procs.append(fab.popen_in_host(
            rank, [sys.executable, "-m", "traffic.workload.worker", "--config",
                   str(servers.dir_of(host) / "worker.json"), "--rank", str(rank)],
            role="endpoints", cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=err, stderr=err))
        servers.follow(host)


def _record_unreached(scn: Scenario, scheduler, state: dict, tail, tdir: Path) -> None:
    """faults-applied.jsonl records for the schedule entries never sent, with the reason."""
    stopped_ns = time.monotonic_ns()
    tail.poll()
    progress = RunProgress(tail.timed_start_ns, stopped_ns,
                           dict(scheduler.applied_at) if scheduler is not None else {},
                           tail.max_done(), float(scn.time_scale))
    missing = unreached_records(scn, scheduler.sent if scheduler is not None else set(),
                                lambda index: unreached_reason(state, state["scheduler_error"],
                                                               progress, scn, index))
    if missing:
        with open(tdir / "faults-applied.jsonl", "a") as out:
            out.writelines(json.dumps(r) + "\n" for r in missing)


def _copy_fabric_files(tdir: Path) -> None:
    """The fabric's fault log and its teardown's counter snapshots, next to the run's files."""
    fabric_log = tdir / "fabric" / "faults.jsonl"
    if fabric_log.exists():
        shutil.copy(fabric_log, tdir / "faults.jsonl")
    for snapshot in ("trim_counters.json", "queue_counters.json"):   # Fabric's teardown
        if (tdir / "fabric" / snapshot).exists():
            shutil.copy(tdir / "fabric" / snapshot, tdir / snapshot)


def _add_cpu(summary: dict, meter: CpuMeter, k: float, tdir: Path) -> None:
    """The CPU meter's figures over the timed iterations (wall times: x k) into the summary,
    beside the fidelity verdict, and cpu.csv."""
    meter.stop()
    summary["cpu"] = meter.usage(*(timescale.wall_ns(t, k) for t in (
        summary.get("timed_start_ns"), summary.get("traffic_end_ns"))))
    try:
        meter.write_csv(tdir / "cpu.csv")
    except OSError as err:          # the summary matters more than the CSV
        meter.error = meter.error or f"cpu.csv: {err}"
    from analysis.fidelity import add_cpu_evidence  # deferred: numpy, only to summarise
    add_cpu_evidence(summary.get("fidelity"), summary["cpu"], tdir,
                     summary.get("timed_start_ns"), summary.get("traffic_end_ns"))
    summary["cpu_meter_error"] = meter.error


def _add_sched(summary: dict, sched: SchedMeter, k: float, record: dict) -> None:
    """The scheduling in force and the scheduler meter's lateness profile over the timed
    iterations (analysis/sched_profile.py) into the summary (after _add_cpu: its last sample)."""
    summary["scheduling"] = record
    summary["sched_profile"] = sched.profile(*(timescale.wall_ns(t, k) for t in (
        summary.get("timed_start_ns"), summary.get("traffic_end_ns"))))
    summary["sched_meter_error"] = sched.error


# ---------------------------------------------------------------- CLI


def exit_codes_text() -> str:
    """The exit codes of `mrclab run`, for its --help (from the EXIT_* constants)."""
    rows = ((EXIT_OK, "every transport verified its data and every scheduled fault took effect"),
            (EXIT_NOT_VERIFIED, "a transport did not verify (iterations missing, a worker "
                                "failed, a result mismatched)"),
            (EXIT_BAD_SCENARIO, "the scenario or the command line is invalid (nothing started)"),
            (EXIT_FAULT_NOT_EFFECTIVE, "the data verified, but a scheduled fault did not take "
                                       "effect (refused, or due after the traffic ended)"),
            (EXIT_FIDELITY, "with --require-fidelity: all of the above held, but a transport's "
                            "fidelity verdict is not ok"),
            (EXIT_INTERRUPTED, "interrupted (Ctrl-C); the summary is partial"))
    return "exit codes:\n" + "\n".join(f"  {code:<4} {text}" for code, text in rows)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `mrclab run`, declared on the CLI's subparser (or a standalone parser)."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = exit_codes_text()
    parser.add_argument("scenario", help="a scenario file, or the NAME of experiments/NAME.toml")
    parser.add_argument("--transport", default="all", choices=TRANSPORTS + ("all",),
                        help="one transport, or all listed in the scenario's [transport] names")
    parser.add_argument("--out-dir", default=None, metavar="DIR",
                        help="where the run directory <name>-<stamp>/ is created (default: the "
                             "checkout's results/, where `latest` is looked up)")
    add_deprecated(parser, "--results-dir", "--out-dir")
    add_renamed(parser, "--out", "--out-dir")
    parser.add_argument("--json", action="store_true",
                        help="print the run's summary.json on stdout (the table and the "
                             "statements go to stderr)")
    parser.add_argument("--wide", action="store_true",
                        help="every column of the table (iteration percentiles, goodput, "
                             "retransmissions, EVs, trimming) and the nccl-tests row")
    parser.add_argument("--short", action="store_true",
                        help="run the scenario's [short] version (fewer/smaller iterations, fault "
                             "schedule scaled down; what the integration tests run)")
    cluster_options.add_arguments(parser)
    parser.add_argument("--validate-only", action="store_true",
                        help="check the scenario and exit without starting anything")
    parser.add_argument("--require-fidelity", action="store_true",
                        help=f"exit {EXIT_FIDELITY} when every transport verified but one's "
                             "fidelity verdict (summary.json 'fidelity', docs/fidelity.md) is not "
                             "'ok': its figures measure this machine's CPU, not the fabric")


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="mrclab run", description="Run a scenario (TOML) on the "
                                     "emulated fabric for one or all transports.")
    add_arguments(parser)
    return parser.parse_args(argv)


def main(args: argparse.Namespace | list[str] | None = None) -> int:
    """`mrclab run`: args parsed by the CLI's tree, or an argv list (parsed here)."""
    if not isinstance(args, argparse.Namespace):
        args = parse_args(sys.argv[1:] if args is None else args)
    try:
        scn = scenario_mod.load(args.scenario, short=args.short)
    except ScenarioError as exc:
        print(f"mrclab run: {exc}", file=sys.stderr)
        return EXIT_BAD_SCENARIO
    problem, placement = cluster_options.announce(scn, args)
    if problem:
        print(f"mrclab run: {problem}", file=sys.stderr)
        return EXIT_BAD_SCENARIO
    scn = cluster_options.with_placement(scn, placement)
    auto = scn.time_scale == "auto"
    transports = scn.transports_of(args.transport)
    scales = {}             # transport -> the k it runs at ("auto" resolves one per transport)
    if auto and not args.validate_only:
        from emulation.calibration import calibrate  # deferred: only for an "auto" time scale
        try:           # the trials are short runs: the [short] version when there is one
            trial = calibrate.trial_of(scn, scenario_mod.load(args.scenario, short=True)
                                       if scn.has_short else None)   # placed as the run
            for transport in transports:
                scales[transport] = calibrate.resolve(
                    scn, transport, run_transport, calibrate.CACHE_DIR, trial=trial,
                    log=lambda text: print(text, file=sys.stderr, flush=True))
        except calibrate.CalibrationError as exc:
            print(f"mrclab run: {exc}", file=sys.stderr)
            return EXIT_NOT_VERIFIED
    if args.validate_only:
        version = "short version " if scn.short else ""
        print(f"{args.scenario}: {version}ok ({len(scn.faults)} fault entries, "
              f"{scn.collective.iterations} iterations, transports {', '.join(scn.transports)}"
              f"{', has a [short] version' if scn.has_short and not scn.short else ''})")
        return 0
    if not auto:            # one declared k for every transport
        scales = {transport: float(scn.time_scale) for transport in transports}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    label = f"{scn.name}-short" if scn.short else scn.name
    root = Path(args.out_dir) if args.out_dir else results_dir()
    run_dir = root / f"{label}-{stamp}"
    suffix = 1
    while run_dir.exists():
        run_dir = root / f"{label}-{stamp}-{suffix}"
        suffix += 1
    run_dir.mkdir(parents=True)
    (run_dir / "scenario.toml").write_text(scn.text)
    options = {k: v for k, v in vars(args).items() if not callable(v)}
    record = run_record.start(run_dir, scn, options, scales)
    status, code, console = "crashed", None, None
    try:
        code, console = _run_transports(scn, transports, run_dir,
                                        getattr(args, "require_fidelity", False),
                                        scales=scales,
                                        source=args.scenario, auto=auto,
                                        wide=getattr(args, "wide", False),
                                        as_json=getattr(args, "json", False))
        status = "interrupted" if code == EXIT_INTERRUPTED else "finished"
        if auto and not scn.short and status == "finished":
            from emulation.calibration import calibrate  # deferred: only for "auto"
            calibrate.learn_after_run(scn, run_dir, calibrate.CACHE_DIR,
                                      log=lambda text: print(text, file=sys.stderr))
    except BaseException as exc:
        status = ("interrupted" if isinstance(exc, KeyboardInterrupt)
                  else f"crashed: {type(exc).__name__}: {exc}")
        raise
    finally:
        record.finish(code, console, status)
    return code


def _run_transports(scn: Scenario, transports: list[str], run_dir: Path,
                    require_fidelity: bool = False, source: str | None = None,
                    auto: bool | None = None, wide: bool = False,
                    as_json: bool = False, scales: dict | None = None) -> tuple[int, str]:
    """Run every transport into run_dir, write the run's summary.json and print the tables.
    scales: each transport's time scale where "auto" resolved it (the scenario's own otherwise).
    source, auto: the scenario as the user named it and whether its time scale was "auto" (the
    next step a verdict other than "ok" names); wide: every column and the nccl-tests row;
    as_json: summary.json on stdout, the console on stderr. Returns (exit code, the console as
    printed)."""
    summaries, interrupted = [], False
    for transport in transports:
        tdir = run_dir / transport
        print(f"mrclab run: {scn.name} over {transport} -> {tdir}", file=sys.stderr, flush=True)
        this = scn if transport not in (scales or {}) else dataclasses.replace(
            scn, time_scale=scales[transport])
        try:
            summaries.append(run_transport(this, transport, tdir))
        except KeyboardInterrupt:
            interrupted = True
            summaries.append(json.loads((tdir / "summary.json").read_text())
                             if (tdir / "summary.json").exists() else
                             {"transport": transport, "verified": False, "partial": True})
            break
    top = top_summary(scn, run_dir, summaries, interrupted,
                      require_fidelity=require_fidelity)
    (run_dir / "summary.json").write_text(json.dumps(top, indent=2))
    from analysis import flows as flow_analysis  # deferred: numpy/pandas, only to summarise
    from analysis import nccl_results  # deferred: numpy/pandas, only to summarise
    console = [comparison_table(summaries, wide)]
    if wide:        # nccl-tests' own row (its busbw from the mean time, named so)
        console.append(nccl_results.table(
            {s["transport"]: s["nccl"] for s in summaries if s.get("nccl")}))
    for s in summaries if wide else []:     # where each class's wake-ups waited for a CPU
        if s.get("sched_profile"):
            console.append(sched_profile.describe(s["transport"], s["sched_profile"],
                                                  (s.get("scheduling") or {}).get("scheduling")))
    for s in summaries:
        for flow in s.get("flows") or []:
            console.append(f"{s['transport']}: {flow_analysis.describe(flow)}")
    for s in summaries:     # one statement per transport: what it did, then its verdict
        console.append(fidelity_words.transport_line(s, source, auto,
                                                     lead=metric_names.takeaway(s)))
    console.append(propagation.console_line(scn.spec, transports))
    console.append(f"run directory: {run_dir}")
    here = "latest" if run_dir.parent.resolve() == results_dir().resolve() else run_dir
    console.append(f"next: `mrclab analyze {here}` for figures and report.html; every number: "
                   "summary.json")
    if as_json:     # stdout is the run's summary.json for a script; the words go to stderr
        print(json.dumps(top, indent=2))
        print("\n".join(console), file=sys.stderr)
    else:
        print("\n".join(console))
    if interrupted:
        print("interrupted: the fabric was torn down; the summary is partial", file=sys.stderr)
    elif top["exit_code"] == EXIT_FAULT_NOT_EFFECTIVE:
        print("mrclab run: the data verified, but a scheduled fault did not take effect "
              "(see above); the recovery numbers do not measure the schedule you wrote",
              file=sys.stderr)
    elif top["exit_code"] == EXIT_FIDELITY:
        print("mrclab run: the data verified, but a transport's fidelity is not ok (see above); "
              "its figures measure this machine's CPU, not the fabric", file=sys.stderr)
    return top["exit_code"], "\n".join(console)


if __name__ == "__main__":
    sys.exit(main())
