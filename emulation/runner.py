"""`mrclab run experiments/<name>.toml [--transport mrc|roce|tcp|all] [--out results/] [--short]`.

--short runs the scenario's [short] version (emulation/scenario.py: fewer, smaller iterations and
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
            fabric/                   controller log, spec, fault log (Fabric's run_dir)
            pcaps/h<n>-p<plane>.pcap  MRC headers only (-s CAPTURE_SNAPLEN)
            iterations.csv, goodput.csv

Fault times: at_s counts from the start of the timed iterations (the first worker's
warmup_done); at_iteration = N fires as soon as any rank has finished timed iteration N-1;
after_s = X fires X seconds after the previous entry (file order) was applied.
Ctrl-C or a crash tears the fabric down (Fabric's context manager) and the summary is still
written from the logs, with "partial": true.

Exit code: 0 every transport verified and every scheduled fault took effect; 1 a transport did
not verify (incomplete, failed, wrong data); 2 bad scenario; 3 verified, but a scheduled fault
never took effect (sent after the traffic ended, refused by the controller, or never sent because
the traffic ended first or the fault scheduler died); 130 interrupted.
"""
from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from analysis.jsonl import parse_record
from controller.client import ControllerClient, ControllerError
from emulation import path_monitor
from emulation import scenario as scenario_mod
from emulation.scenario import Scenario, ScenarioError, TRANSPORTS
from model.events import Event, Phase
from traffic import codec
from traffic.qp_config import MRCConfig

REPO_ROOT = Path(__file__).resolve().parent.parent


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
POLL_S = 0.01
# Exit codes of `mrclab run` (README "Running an experiment").
EXIT_OK = 0
EXIT_NOT_VERIFIED = 1        # a transport's run is incomplete, failed or did not verify its data
EXIT_BAD_SCENARIO = 2
EXIT_FAULT_NOT_EFFECTIVE = 3  # every transport verified, but a scheduled fault never took effect
EXIT_INTERRUPTED = 130


# ---------------------------------------------------------------- worker config


def worker_config(scn: Scenario, transport: str, log_dir: Path) -> dict:
    """The JSON every worker reads (keys documented in traffic/worker.py)."""
    topo = scn.topology
    routing, _ = scn.routing_for(transport)
    coll = scn.collective
    hosts = [h.name for h in topo.hosts]
    return {
        "scenario": scn.name,
        "transport": transport,
        "world_size": len(hosts),
        "hosts": hosts,
        "collective": coll.kind,
        "message_bytes": coll.message_bytes,
        "iterations": coll.iterations,
        "warmup": coll.warmup,
        "qps_per_peer": coll.qps_per_peer,
        "timeout_s": coll.timeout_s,
        "incast_target": topo.host(coll.incast_target).index if coll.incast_target else 0,
        "victim": [topo.host(v).index for v in coll.victim] if coll.victim else None,
        "victim_only": coll.victim_only,
        "log_dir": str(log_dir),
        "goodput_interval_ms": scn.goodput_interval_ms,
        "fabric": scn.spec.to_dict(),
        "routing": routing,
        "trimming": scn.trimming,
        "tcp": {"endpoints": [[[topo.nic_addr(h.index, p), scn.tcp_port]
                               for p in range(scn.spec.planes)] for h in topo.hosts],
                "connect_timeout_s": 30.0},
        "mrc": scn.mrc,
    }


# ---------------------------------------------------------------- log tailing


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class LogTail:
    """Follows the workers' JSONL logs (complete lines only) and keeps what the runner needs."""

    def __init__(self, paths: list[Path]):
        self.paths = paths
        self.offsets = {p: 0 for p in paths}
        self.partial = {p: b"" for p in paths}
        self.done_iters = {p: -1 for p in paths}
        self.timed_start_ns: int | None = None
        self.lock = threading.Lock()

    def poll(self) -> None:
        with self.lock:
            for p in self.paths:
                try:
                    with open(p, "rb") as f:
                        f.seek(self.offsets[p])
                        chunk = f.read()
                except FileNotFoundError:
                    continue
                self.offsets[p] += len(chunk)
                data = self.partial[p] + chunk
                *lines, self.partial[p] = data.split(b"\n")
                for line in lines:
                    ev, _ = parse_record(line)     # a damaged line is the analysis' to report
                    if ev is None:
                        continue
                    if ev.get("event") == Event.ITERATION and _is_int(ev.get("iter")):
                        self.done_iters[p] = max(self.done_iters[p], ev["iter"])
                    elif (ev.get("event") == Event.PHASE and ev.get("phase") == Phase.WARMUP_DONE
                          and _is_int(ev.get("t_ns"))):
                        t = ev["t_ns"]
                        if self.timed_start_ns is None or t < self.timed_start_ns:
                            self.timed_start_ns = t

    def min_done(self) -> int:
        return min(self.done_iters.values()) + 1

    def max_done(self) -> int:
        return max(self.done_iters.values()) + 1


# ---------------------------------------------------------------- fault scheduling


def post_fault(client: ControllerClient, command: dict) -> dict:
    """POST /fault: the controller's answer, {"ok": False, "error"} when it refuses or fails the
    command; raises ControllerError when it cannot be reached (the scheduler then stops)."""
    try:
        return client.fault(command)
    except ControllerError as exc:
        if exc.status is None:
            raise
        return {"ok": False, "error": exc.detail}


class FaultScheduler(threading.Thread):
    """Applies the scenario's fault schedule at the right times; records every answer."""

    def __init__(self, scn: Scenario, tail: LogTail, api_port: int, applied_path: Path):
        super().__init__(daemon=True, name="fault-scheduler")
        self.pending = list(enumerate(scn.faults))
        self.tail = tail
        self.api_port = api_port
        self.client = ControllerClient(port=api_port, timeout_s=10.0)
        self.applied_path = applied_path
        self.applied: list[dict] = []
        self.applied_at: dict[int, int] = {}      # entry index -> when it was applied (ns)
        self.sent: set[int] = set()               # entries whose commands were (being) sent
        self.current: int | None = None           # entry being sent right now
        self.stop_event = threading.Event()
        self.error: str | None = None

    def due(self, index: int, entry) -> bool:
        start = self.tail.timed_start_ns
        if start is None:
            return False
        if entry.after_s is not None:
            previous = self.applied_at.get(index - 1)
            return previous is not None and time.monotonic_ns() >= previous + entry.after_s * 1e9
        if entry.at_s is not None:
            return time.monotonic_ns() >= start + entry.at_s * 1e9
        return entry.at_iteration == 0 or self.tail.max_done() >= entry.at_iteration

    def run(self) -> None:
        try:
            with open(self.applied_path, "a", buffering=1) as out:
                while self.pending and not self.stop_event.is_set():
                    self.tail.poll()
                    for item in [x for x in self.pending if self.due(*x)]:
                        self.pending.remove(item)
                        index, entry = item
                        self.sent.add(index)
                        self.current = index
                        for command in entry.commands:
                            asked = time.monotonic_ns()
                            answer = post_fault(self.client, command)
                            record = {"entry": index, "when": entry.when(), "asked_ns": asked,
                                      "t_ns": answer.get("t_ns", asked), "ok": bool(answer.get("ok")),
                                      "command": command}
                            if not record["ok"]:
                                record["error"] = answer.get("error", "no answer")
                            self.applied.append(record)
                            out.write(json.dumps(record) + "\n")
                        self.applied_at[index] = time.monotonic_ns()
                        self.current = None
                    self.stop_event.wait(POLL_S)
        except Exception as exc:  # noqa: BLE001 - reported in the summary, never kills the run
            self.error = f"fault scheduler failed: {exc!r}"
            if self.current is not None and not any(a["entry"] == self.current for a in self.applied):
                self.sent.discard(self.current)     # died before any answer: never sent

    def stop(self) -> None:
        self.stop_event.set()
        self.join(15)


def unreached_records(scn: Scenario, sent: set[int], reason: str) -> list[dict]:
    """faults-applied.jsonl records for the schedule entries that were never sent, so the run
    directory itself says which faults did not take effect and why."""
    out = []
    for index, entry in enumerate(scn.faults):
        if index in sent:
            continue
        first = entry.commands[0] if entry.commands else {}
        out.append({"entry": index, "when": entry.when(), "reached": False, "ok": False,
                    "action": first.get("action"), "a": first.get("a"), "b": first.get("b"),
                    "commands": len(entry.commands), "reason": reason})
    return out


def unreached_reason(state: dict, scheduler_error: str | None, timed_start_ns: int | None,
                     stopped_ns: int) -> str:
    """Why the entries still pending when the workers finished were never sent."""
    if scheduler_error:
        return f"the fault scheduler died before it was due ({scheduler_error})"
    if state.get("error"):
        return f"the run stopped before it was due ({state['error']})"
    if timed_start_ns is None:
        return "the timed iterations never started"
    return (f"the traffic ended before it was due (the workers finished "
            f"{(stopped_ns - timed_start_ns) / 1e9:.1f} s after the timed iterations started)")


# ---------------------------------------------------------------- progress


class Progress:
    """Plain stderr progress bar (rewritten in place on a terminal, a line per 5 s otherwise)."""

    def __init__(self, label: str, total: int):
        self.label, self.total = label, total
        self.tty = sys.stderr.isatty()
        self.last_line = 0.0
        self.started = time.monotonic()

    def update(self, done: int, faults_done: int, faults_total: int) -> None:
        now = time.monotonic()
        if not self.tty and now - self.last_line < 5:
            return
        self.last_line = now
        width = 30
        filled = int(width * min(done, self.total) / max(1, self.total))
        line = (f"[{self.label}] [{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} "
                f"iterations, faults {faults_done}/{faults_total}, {now - self.started:5.1f} s")
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n",
              file=sys.stderr, flush=True)

    def finish(self) -> None:
        if self.tty:
            print(file=sys.stderr, flush=True)


# ---------------------------------------------------------------- one transport


def run_transport(scn: Scenario, transport: str, tdir: Path) -> dict:
    from emulation.fabric import Fabric  # deferred: Mininet, only once a run starts (not --validate-only)

    tdir.mkdir(parents=True, exist_ok=True)
    (tdir / "pcaps").mkdir(exist_ok=True)
    # tcpdump stamps packets with the wall clock; logs use CLOCK_MONOTONIC. Two readings taken
    # back to back let analysis put pcap times on the monotonic axis (analysis.pcap.ClockOffset).
    (tdir / "clock.json").write_text(json.dumps(
        {"monotonic_ns": time.monotonic_ns(), "realtime_ns": time.time_ns()}))
    routing, convergence = scn.routing_for(transport)
    config = worker_config(scn, transport, tdir)
    control = path_monitor.RunControlPlane(scn, transport, config, tdir)   # sets control_dir
    (tdir / "worker.json").write_text(json.dumps(config, indent=2))
    hosts = config["hosts"]
    tail = LogTail([tdir / f"worker-{h}.jsonl" for h in hosts])
    state = {"partial": True, "error": None, "exit_codes": {}, "applied": [], "scheduler_error": None}
    fabric_kw = {"trimming": scn.trimming_for(transport),
                 "switch_buffer_bytes": (None if scn.switch_buffer_kb is None
                                         else scn.switch_buffer_kb * 1024)}
    scheduler = None
    procs: list[subprocess.Popen] = []
    stderr_files = []
    try:
        with Fabric(scn.spec, routing=routing, dynamic_convergence_s=convergence,
                    run_dir=tdir / "fabric", **fabric_kw) as fab:
            captures = []
            if scn.capture:
                for h in scn.topology.hosts:
                    for p in range(scn.spec.planes):
                        captures.append(fab.capture(h.index, p, tdir / "pcaps" / f"{h.name}-p{p}.pcap",
                                                    snaplen=CAPTURE_SNAPLEN))
            for rank, host in enumerate(hosts):
                err = open(tdir / f"worker-{host}.stderr", "w")
                stderr_files.append(err)
                procs.append(fab.popen_in_host(
                    rank, [sys.executable, "-m", "traffic.worker", "--config",
                           str(tdir / "worker.json"), "--rank", str(rank)],
                    cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=err, stderr=err))
            scheduler = FaultScheduler(scn, tail, fab.api_port, tdir / "faults-applied.jsonl")
            scheduler.start()
            # the monitor stops before the last iteration: finishing peers stop answering probes
            control.start(fab.api_port, lambda: tail.max_done() < scn.collective.iterations - 1)
            _wait_workers(scn, transport, procs, tail, scheduler, state)
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
        state["monitor_error"] = control.stop()
        if scheduler is not None:
            scheduler.stop()
            state["applied"] = scheduler.applied
            state["scheduler_error"] = scheduler.error
        stopped_ns = time.monotonic_ns()
        tail.poll()
        missing = unreached_records(scn, scheduler.sent if scheduler is not None else set(),
                                    unreached_reason(state, state["scheduler_error"],
                                                     tail.timed_start_ns, stopped_ns))
        if missing:
            with open(tdir / "faults-applied.jsonl", "a") as out:
                out.writelines(json.dumps(r) + "\n" for r in missing)
        for p, host in zip(procs, hosts):
            state["exit_codes"].setdefault(host, p.poll())
        for f in stderr_files:
            f.close()
        fabric_log = tdir / "fabric" / "faults.jsonl"
        if fabric_log.exists():
            shutil.copy(fabric_log, tdir / "faults.jsonl")
        for snapshot in ("trim_counters.json", "queue_counters.json"):   # Fabric's teardown
            if (tdir / "fabric" / snapshot).exists():
                shutil.copy(tdir / "fabric" / snapshot, tdir / snapshot)
        summary = summarize(scn, transport, tdir, state)
        (tdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _wait_workers(scn, transport, procs, tail, scheduler, state) -> None:
    coll = scn.collective
    deadline = time.monotonic() + 60 + (coll.warmup + coll.iterations) * coll.timeout_s
    progress = Progress(transport, coll.iterations)
    total_faults = len(scn.faults)
    first_failure = None
    try:
        while True:
            tail.poll()
            codes = [p.poll() for p in procs]
            progress.update(tail.min_done(), total_faults - len(scheduler.pending), total_faults)
            if all(c is not None for c in codes):
                break
            if first_failure is None and any(c not in (None, 0) for c in codes):
                first_failure = time.monotonic()
            # a failed worker makes its peers fail by timeout; do not wait longer than that
            grace = coll.timeout_s + 5
            if time.monotonic() > deadline or (first_failure and time.monotonic() - first_failure > grace):
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                state["error"] = "workers killed: " + ("overall deadline passed"
                                                       if time.monotonic() > deadline else
                                                       "peers did not exit after a worker failed")
            time.sleep(0.05)
    finally:
        progress.finish()
    tail.poll()
    state["exit_codes"] = {f"h{i}": p.returncode for i, p in enumerate(procs)}


# ---------------------------------------------------------------- summary


def loss_policy_in_force(scn: Scenario) -> str:
    """The MRC loss policy the run's QPs used: the scenario's [mrc.qp] loss_policy, else the
    QP's default (traffic/loss_policy.py)."""
    return (scn.mrc.get("qp") or {}).get("loss_policy") or MRCConfig().loss_policy


def bandwidth_and_delay(scn: Scenario, transport: str, tdir: Path, summary: dict) -> dict:
    """`line_rate_fraction`: the median timed iteration's bus bandwidth (NCCL's definition, from
    the collective's buffer size) over the host's total port rate (planes x host link rate);
    `fabric_delay_p999_ms`: the 99.9th percentile one-way delay of MRC data packets host port to
    host port, from the run's captures (mrc only, None without captures)."""
    from analysis import delay, metrics, pcap  # deferred: numpy/pandas, only to summarise
    out: dict = {"line_rate_fraction": None, "fabric_delay_p999_ms": None}
    times_s = [t / 1000 for t in summary.get("iteration_times_ms") or [] if t and t > 0]
    if times_s and metrics._norm_collective(scn.collective.kind) in metrics.BUSBW_FACTORS:
        _, busbw = metrics.bus_bandwidth([scn.collective.message_bytes] * len(times_s), times_s,
                                         summary["world_size"], scn.collective.kind)
        fraction = metrics.line_rate_fraction(busbw, scn.spec.planes, scn.spec.host_link_mbit)
        out["line_rate_fraction"] = None if fraction != fraction else round(float(fraction), 3)
    if transport == "mrc" and (tdir / "pcaps").is_dir():
        try:
            packets = pcap.load_captures(tdir, clock=pcap.find_clock(tdir))
            p999 = delay.fabric_delay_p999_ms(packets) if len(packets) else float("nan")
        except Exception as exc:  # noqa: BLE001 - a bad capture must not cost the summary
            out["fabric_delay_error"] = f"{exc.__class__.__name__}: {exc}"
        else:
            out["fabric_delay_p999_ms"] = None if p999 != p999 else round(float(p999), 2)
    return out


def summarize(scn: Scenario, transport: str, tdir: Path, state: dict) -> dict:
    """summary.json of one transport: the run model of its directory (analysis.runmodel, which
    the report and the analysis load the same way) plus what only the runner knows (exit codes,
    errors, whether the run was cut short). Works on partial runs too."""
    from analysis import runmodel  # deferred: numpy/pandas, only to summarise
    from analysis import trimming as trim_analysis  # deferred: numpy/pandas, only to summarise
    coll = scn.collective
    model = runmodel.load_transport(tdir, name=transport, faults_scheduled=len(scn.faults))
    codes = state.get("exit_codes", {})
    hosts = [h.name for h in scn.topology.hosts]
    verified = (not state.get("partial") and len(model.iterations) == coll.iterations
                and model.data_verified and all(codes.get(h) == 0 for h in hosts))
    error = state.get("error") or state.get("scheduler_error")
    summary = {
        "scenario": scn.name,
        "short": scn.short,
        "transport": transport,
        "routing": scn.routing_for(transport)[0],
        "dynamic_convergence_s": scn.routing_for(transport)[1],
        "collective": coll.kind,
        "world_size": len(hosts),
        "message_bytes": coll.message_bytes,
        "qps_per_peer": coll.qps_per_peer,
        "iterations_planned": coll.iterations,
        "verified": verified,
        "partial": bool(state.get("partial")),
        "error": error,
        "worker_exit_codes": codes,
        "loss_policy": loss_policy_in_force(scn) if transport == "mrc" else None,
        **model.summary_fields(),
    }
    summary.update(bandwidth_and_delay(scn, transport, tdir, summary))
    summary["problems"] = transport_problems(summary, model)
    summary.update(trim_analysis.transport_summary(tdir, scn.trimming_for(transport)))
    summary.update(path_monitor.run_denials(tdir / "faults.jsonl", state.get("applied", [])))
    summary["path_monitor_error"] = state.get("monitor_error")
    from analysis import flows as flow_analysis  # deferred: numpy/pandas, only to summarise
    summary.update(flow_analysis.flow_summary(tdir))     # bisection flows, incast victim
    _write_csvs(tdir, model)
    return summary


def transport_problems(summary: dict, model) -> list[str]:
    """What a user must know before trusting this transport's numbers, one sentence each."""
    out = []
    if summary.get("error"):
        out.append(f"run error: {summary['error']}")
    if summary.get("partial"):
        out.append("the run was cut short; the numbers cover only what was logged")
    done, planned = summary.get("iterations_completed"), summary.get("iterations_planned")
    if planned is not None and done != planned:
        out.append(f"{done} of {planned} iterations completed")
    if not model.data_verified:
        out.append("a collective result did not verify")
    out += [f"worker {e}" for e in model.worker_errors]
    bad = {h: c for h, c in (summary.get("worker_exit_codes") or {}).items() if c != 0}
    if bad:
        out.append("worker exit codes " + ", ".join(f"{h}={c}" for h, c in bad.items()))
    from analysis.runmodel import describe_not_effective  # deferred: numpy, only to summarise
    out += [describe_not_effective(f) for f in model.not_effective]
    return out


def _write_csvs(tdir: Path, model) -> None:
    with open(tdir / "iterations.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["iter", "host", "start_ns", "end_ns", "bytes", "verified"])
        for row in model.rank_iterations:
            w.writerow(row)
    with open(tdir / "goodput.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_ns", "rx_bytes_all_hosts"])
        for t, b in model.samples:
            w.writerow([int(t), int(b)])


# ---------------------------------------------------------------- comparison + CLI


def _fmt(value, digits=1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _faults_cell(s: dict) -> str:
    """'2/2' when every scheduled fault took effect, '1/2 !' when one did not, '-' for none."""
    scheduled = s.get("faults_scheduled")
    if not scheduled:
        return "-"
    applied = s.get("faults_applied") or 0
    return f"{applied}/{scheduled}" + ("" if s.get("faults_ok", applied == scheduled) else " !")


def comparison_table(summaries: list[dict]) -> str:
    """The terminal table, then one line per problem a user must know (faults that did not take
    effect, errors), drawn from the summaries (which come from analysis.runmodel)."""
    trim_cols = any("trimming" in s for s in summaries)
    rows = [("transport", "verified", "faults", "mean iter ms", "slowest iter ms", "recovery ms")
            + (("marked", "trimmed", "queue drops", "NACKs", "ASSUMED_BAD", "victim_Mbit/s")
               if trim_cols else ())]
    for s in summaries:
        rec = s.get("recovery_ms") or []
        rec_text = ", ".join("never" if r is None else f"{r:.0f}" for r in rec) or "-"
        verified = "yes" if s.get("verified") else ("PARTIAL" if s.get("partial") else "NO")
        trim = (tuple("-" if s.get(k) is None else str(s[k])
                      for k in ("marked", "trimmed", "queue_drops", "nacks_sent", "ev_assumed_bad"))
                + (_fmt(s.get("victim_goodput_mbit")),)) if trim_cols else ()
        rows.append((s["transport"], verified, _faults_cell(s), _fmt(s.get("mean_iteration_ms")),
                     _fmt(s.get("slowest_iteration_ms")), rec_text) + trim)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for s in summaries:
        lines += [f"{s['transport']}: {p}" for p in s.get("problems") or []]
    return "\n".join(lines)


def run_verdict(summaries: list[dict], interrupted: bool) -> tuple[int, list[str]]:
    """(exit code, problems prefixed by transport) of a whole run: not verified beats a fault
    that did not take effect, which beats success."""
    problems = [f"{s['transport']}: {p}" for s in summaries for p in s.get("problems") or []]
    if interrupted:
        return EXIT_INTERRUPTED, problems + ["interrupted: the summary is partial"]
    if not all(s.get("verified") for s in summaries):
        return EXIT_NOT_VERIFIED, problems
    if not all(s.get("faults_ok", True) for s in summaries):
        return EXIT_FAULT_NOT_EFFECTIVE, problems
    return EXIT_OK, problems


TOP_SUMMARY_KEYS = ("verified", "partial", "error", "problems", "data_verified", "mean_iteration_ms",
                    "slowest_iteration_ms", "recovery_ms", "fault_times_ns",
                    "iterations_completed", "faults_scheduled", "faults_applied", "faults_ok",
                    "faults_failed", "faults_not_reached", "flows")


def top_summary(scn: Scenario, run_dir: Path, summaries: list[dict], interrupted: bool) -> dict:
    """The run directory's summary.json: every transport's verdict and the run's exit code."""
    from analysis import trimming as trim_analysis  # deferred: numpy/pandas, only to summarise
    code, problems = run_verdict(summaries, interrupted)
    return {
        "scenario": scn.name, "short": scn.short, "run_dir": str(run_dir),
        "partial": interrupted or any(s.get("partial") for s in summaries),
        "exit_code": code,
        "verified": all(s.get("verified") for s in summaries),
        "faults_ok": all(s.get("faults_ok", True) for s in summaries),
        "problems": problems,
        "transports": {s["transport"]: {k: s.get(k) for k in TOP_SUMMARY_KEYS
                                        + trim_analysis.SUMMARY_KEYS}
                       for s in summaries},
        "trimming_option": scn.trimming,
        "trimming_note": "[options] trimming: queue-based ECN marking on every switch port for "
                         "every transport, trimming for mrc only" if scn.trimming else
                         "[options] trimming = false: plain HTB switch ports, no marking, no trimming"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `mrclab run`, declared on the CLI's subparser (or a standalone parser)."""
    parser.add_argument("scenario", help="experiments/<name>.toml")
    parser.add_argument("--transport", default="all", choices=TRANSPORTS + ("all",),
                        help="one transport, or all listed in the scenario's [transport] names")
    parser.add_argument("--out", default="results", help="parent directory of the run directory")
    parser.add_argument("--short", action="store_true",
                        help="run the scenario's [short] version (fewer/smaller iterations, fault "
                             "schedule scaled down; what the integration tests run)")
    parser.add_argument("--validate-only", action="store_true",
                        help="check the scenario and exit without starting anything")


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
    if args.validate_only:
        version = "short version " if scn.short else ""
        print(f"{args.scenario}: {version}ok ({len(scn.faults)} fault entries, "
              f"{scn.collective.iterations} iterations, transports {', '.join(scn.transports)}"
              f"{', has a [short] version' if scn.has_short and not scn.short else ''})")
        return 0
    transports = scn.transports if args.transport == "all" else [args.transport]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    label = f"{scn.name}-short" if scn.short else scn.name
    run_dir = Path(args.out) / f"{label}-{stamp}"
    suffix = 1
    while run_dir.exists():
        run_dir = Path(args.out) / f"{label}-{stamp}-{suffix}"
        suffix += 1
    run_dir.mkdir(parents=True)
    (run_dir / "scenario.toml").write_text(scn.text)
    summaries, interrupted = [], False
    for transport in transports:
        tdir = run_dir / transport
        print(f"mrclab run: {scn.name} over {transport} -> {tdir}", file=sys.stderr, flush=True)
        try:
            summaries.append(run_transport(scn, transport, tdir))
        except KeyboardInterrupt:
            interrupted = True
            summaries.append(json.loads((tdir / "summary.json").read_text())
                             if (tdir / "summary.json").exists() else
                             {"transport": transport, "verified": False, "partial": True})
            break
    top = top_summary(scn, run_dir, summaries, interrupted)
    (run_dir / "summary.json").write_text(json.dumps(top, indent=2))
    print(comparison_table(summaries))
    from analysis import flows as flow_analysis  # deferred: numpy/pandas, only to summarise
    for s in summaries:
        for flow in s.get("flows") or []:
            print(f"{s['transport']}: {flow_analysis.describe(flow)}")
    print(f"run directory: {run_dir}")
    if interrupted:
        print("interrupted: the fabric was torn down; the summary is partial", file=sys.stderr)
    elif top["exit_code"] == EXIT_FAULT_NOT_EFFECTIVE:
        print("mrclab run: the data verified, but a scheduled fault did not take effect "
              "(see above); the recovery numbers do not measure the schedule you wrote",
              file=sys.stderr)
    return top["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
