"""One transport's run directory, loaded once into a typed result: the single source of every
verdict and recovery number that summary.json, the terminal table, report.html and the notebook
show.

What it reads (all written by emulation.run.runner):
    worker.json            hosts, planned iterations, the fabric spec (for surviving capacity)
    worker-h<n>.jsonl      phase warmup_done, iteration, goodput, error events
    faults-applied.jsonl   one record per command the runner sent (entry, when, t_ns, ok, error)
                           and one per schedule entry that was never sent (reached: false, reason)
    faults.jsonl           the controller's fault log: only when faults-applied.jsonl is absent
                           (directories not written by the runner)

Recovery inputs are assembled here and nowhere else (analysis.recovery holds the definition):
    samples      every host's cumulative rx_bytes, summed (recovery.aggregate_cumulative)
    window/hold  from the median complete timed iteration (recovery.collective_windows)
    baseline     steady goodput from the first warmup_done to the first applied fault
                 (or to the end of the traffic when no fault was applied)
    evaluation   of each applied entry: from its first command's controller time until the next
                 applied entry or the end of the traffic (the last rank's last iteration end)

A fault "did not take effect" when its entry was never sent (not reached), when the controller
refused any of its commands (failed), or when it was applied after the traffic had ended.

Pure data and numpy (through analysis.recovery): no pandas, so the runner can import it cheaply.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from analysis import flows, recovery
from analysis import metric_names
from analysis.jsonl import contradiction, drop_far_times, parse_json, read_jsonl
from analysis.timescale import MAX_WORKER_JSON_BYTES
from model import traffic_end
from model.events import Event, Phase
from model.faults import ACTIONS as FAULT_ACTIONS
from model.safe_read import read_regular
from model.topology import FabricSpec, SpecError, Topology

APPLIED, FAILED, NOT_REACHED, AFTER_TRAFFIC = "applied", "failed", "not_reached", "after_traffic"


@dataclass(frozen=True)
class Iteration:
    """One timed collective iteration over all ranks that logged it."""
    index: int
    start_ns: int            # first rank's start
    end_ns: int              # last rank's end
    ranks: int
    verified: bool           # every rank that logged it verified its result
    span_ns: int | None = None   # slowest coupled group's span (flows.coupled_groups)

    @property
    def duration_ms(self) -> float:
        return (self.span_ns if self.span_ns is not None else self.end_ns - self.start_ns) / 1e6


@dataclass(frozen=True)
class Fault:
    """One entry of the scenario's fault schedule and what became of it."""
    entry: int                         # index in the scenario's [[faults]] (file order)
    when: str                          # "at_s=2.0", "at_iteration=10", "after_s=3.0"
    status: str                        # APPLIED, FAILED, NOT_REACHED or AFTER_TRAFFIC
    action: str | None
    a: str | None
    b: str | None
    t_ns: int | None = None            # controller's time of the first accepted command
    commands: int = 0                  # commands sent (a links= selector sends several)
    reason: str | None = None          # why it did not take effect
    capacity_fraction: float | None = None
    expected_goodput_bps: float | None = None
    recovery_ms: float | None = None

    @property
    def took_effect(self) -> bool:
        return self.status == APPLIED

    def label(self) -> str:
        """'link_down t0p0g0~t1p0s0' (what the user wrote in the scenario)."""
        target = "~".join(x for x in (self.a, self.b) if x)
        return f"{self.action or '?'} {target}".strip()

    def to_json(self) -> dict:
        return {"entry": self.entry, "when": self.when, "status": self.status,
                "action": self.action, "a": self.a, "b": self.b, "t_ns": self.t_ns,
                "commands": self.commands, "reason": self.reason,
                "capacity_fraction": self.capacity_fraction,
                "expected_goodput_bps": self.expected_goodput_bps,
                "recovery_ms": self.recovery_ms}


@dataclass
class TransportRun:
    """Everything about one transport's run that a verdict or a recovery number depends on."""
    name: str
    directory: Path
    hosts: list[str]
    iterations_planned: int | None
    iterations: list[Iteration]                    # complete ones (every rank), by index
    goodput: dict[str, list[tuple[int, int]]]      # host -> (t_ns, cumulative rx bytes)
    samples: list[tuple[float, float]]             # all hosts summed on one grid
    timed_start_ns: int | None
    traffic_end_ns: int | None
    data_verified: bool                            # no iteration record failed verification
    worker_errors: list[str]
    faults: list[Fault]                            # every schedule entry, in schedule order
    baseline_goodput_bps: float | None
    windows: dict
    rank_iterations: list[tuple] = field(default_factory=list)  # (iter, host, start_ns, end_ns, bytes, verified)
    groups: list[frozenset[str]] = field(default_factory=list)  # the collective's coupled ranks
    problems: list[str] = field(default_factory=list)
    # elements that failed verification over every rank's timed iterations (nccl-tests'
    # #wrong); None when a failed iteration's record does not say how many (older logs)
    wrong_elements: int | None = 0
    # packets the transport resent, summed over hosts (each worker's last `counters` event:
    # MRC/RoCE endpoint counters, TCP's tcpi_total_retrans); None when no worker logged them
    retransmissions: int | None = None
    # the transport's own failure, when a worker's QP went to error (traffic/workload/worker.py
    # logs it): {"host", "reason", "t_ns", "after_timed_start_ms"}; None when none did
    transport_failure: dict | None = None
    # the collective's flows, (src, dst) -> relative rate (analysis.flows.collective_demand):
    # what the recovery metric weighs the fabric's cuts by; None when worker.json does not say
    demand: dict | None = None

    @property
    def iteration_times_ms(self) -> list[float]:
        return [it.duration_ms for it in self.iterations]

    @property
    def records_verified(self) -> bool:
        """The logs' own verdict, whatever summary.json says: every planned iteration (0 ..
        planned - 1) has one record of every rank (a duplicate voids the data) and every
        record verified its result."""
        planned = self.iterations_planned
        indices = [it.index for it in self.iterations]
        return (bool(indices) and self.data_verified and all(it.verified for it in self.iterations)
                and (planned is None or sorted(indices) == list(range(planned))))

    @property
    def applied(self) -> list[Fault]:
        return [f for f in self.faults if f.took_effect]

    @property
    def not_effective(self) -> list[Fault]:
        """Faults of the schedule that never took effect, in schedule order."""
        return [f for f in self.faults if not f.took_effect]

    def summary_fields(self) -> dict:
        """The summary.json keys that come from the run's files."""
        times = self.iteration_times_ms
        effective = sorted((f for f in self.faults
                            if f.t_ns is not None and f.status in (APPLIED, FAILED)),
                           key=lambda f: f.t_ns)
        return {
            "iterations_completed": len(self.iterations),
            "iteration_times_ms": times,
            "mean_iteration_ms": metric_names.mean_iteration_ms(times),
            "median_iteration_ms": metric_names.median_iteration_ms(times),
            "p99_iteration_ms": metric_names.p99_iteration_ms(times),
            "slowest_iteration_ms": metric_names.slowest_iteration_ms(times),
            "goodput_sum_mbit": metric_names.goodput_sum_mbit(
                self.samples, self.timed_start_ns, self.traffic_end_ns),
            "data_verified": self.data_verified,
            "wrong_elements": self.wrong_elements,
            "retransmissions": self.retransmissions,
            "worker_errors": list(self.worker_errors),
            "transport_failure": self.transport_failure,
            "timed_start_ns": self.timed_start_ns,
            "traffic_end_ns": self.traffic_end_ns,
            "baseline_goodput_bps": self.baseline_goodput_bps,
            "fault_times_ns": [f.t_ns for f in effective],
            "recovery_ms": [f.recovery_ms for f in effective],
            "faults": [f.to_json() for f in effective],
            "faults_scheduled": len(self.faults),
            "faults_applied": len(self.applied),
            "faults_failed": [_not_effective_json(f) for f in self.faults if f.status == FAILED],
            "faults_not_reached": [_not_effective_json(f) for f in self.faults
                                   if f.status in (NOT_REACHED, AFTER_TRAFFIC)],
            "faults_ok": not self.not_effective,
            "recovery_definition": (
                "analysis/recovery.py: goodput >= 90% of pre-fault steady goodput x surviving "
                "capacity fraction, in windows of one median iteration "
                f"({self.windows['window_ms']:.0f} ms), sustained {self.windows['hold_ms']:.0f} ms; "
                "inputs assembled by analysis/runmodel.py"),
        }


def _not_effective_json(f: Fault) -> dict:
    return {"entry": f.entry, "when": f.when, "action": f.action, "a": f.a, "b": f.b,
            "status": f.status, "reason": f.reason, "t_ns": f.t_ns}


def describe_not_effective(f: Fault) -> str:
    """One line naming the fault and why it did not take effect."""
    return f"fault #{f.entry} {f.label()} ({f.when}) did not take effect: {f.reason}"


# ---------------------------------------------------------------- reading files


def _planned(config: dict, tdir: Path, problems: list[str]) -> int | None:
    """The timed iterations the ranks were to run: the end the runner named after the last
    fault (model/traffic_end.py), else worker.json's count."""
    try:
        named = traffic_end.read(tdir)
    except traffic_end.TrafficEndError as exc:
        problems.append(str(exc))
        named = None
    return named if named is not None else _int(config.get("iterations"))


def _int(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    return None


def _topology_of(config: dict, tdir: Path):
    """The run's Topology from worker.json's fabric spec, else from the scenario copy's [fabric]
    table; None if neither is readable (every fault then counts as leaving full capacity)."""
    fabric = config.get("fabric")
    for scenario in (tdir / "scenario.toml", tdir.parent / "scenario.toml"):
        if isinstance(fabric, dict):
            break
        try:
            fabric = tomllib.loads(scenario.read_text()).get("fabric")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError,
                AttributeError):
            continue
    if not isinstance(fabric, dict):
        return None
    try:
        return Topology(FabricSpec.from_fabric_table(fabric))
    except (SpecError, ValueError):
        return None


def _worker_logs(tdir: Path, hosts: list[str], problems: list[str]) -> dict[str, list[dict]]:
    if not hosts:
        hosts = sorted((p.name[len("worker-"):-len(".jsonl")] for p in tdir.glob("worker-*.jsonl")),
                       key=lambda h: (len(h), h))
    logs = {f"worker-{h}.jsonl": read_jsonl(tdir / f"worker-{h}.jsonl", problems,
                                            check=lambda obj, h=h: contradiction(obj, h))
            for h in hosts}
    logs = drop_far_times(logs, problems)
    return {h: logs[f"worker-{h}.jsonl"] for h in hosts}


def _retransmissions(logs: dict[str, list[dict]]) -> int | None:
    """Sum over hosts of the last `counters` event's retransmits (None: no host logged one)."""
    total, seen = 0, False
    for events in logs.values():
        last = next((e for e in reversed(events) if e.get("event") == Event.COUNTERS
                     and _int(e.get("retransmits")) is not None), None)
        if last is not None:
            total += _int(last["retransmits"])
            seen = True
    return total if seen else None


def _transport_failure(logs: dict[str, list[dict]], timed_start_ns: int | None) -> dict | None:
    """The first QP error a worker logged (an error event with qp_error), with its time after
    the timed iterations started (None before they did)."""
    first = None
    for host, events in logs.items():
        for e in events:
            t = _int(e.get("t_ns"))
            if e.get("event") == Event.ERROR and e.get("qp_error") is True and t is not None:
                if first is None or t < first["t_ns"]:
                    first = {"host": host, "reason": str(e.get("reason")), "t_ns": t}
                break
    if first is not None:
        first["after_timed_start_ms"] = (None if timed_start_ns is None
                                         else (first["t_ns"] - timed_start_ns) / 1e6)
    return first


def _fault_records(tdir: Path, problems: list[str]) -> list[dict]:
    """The runner's request/answer log; else the controller's log, one entry per fault."""
    applied = tdir / "faults-applied.jsonl"
    if applied.exists():
        return read_jsonl(applied, problems)
    out = []
    for rec in read_jsonl(tdir / "faults.jsonl", problems):
        if rec.get("action") in FAULT_ACTIONS and _int(rec.get("t_ns")) is not None:
            command = {k: v for k, v in rec.items() if k != "t_ns"}
            out.append({"entry": len(out), "when": "controller log", "t_ns": rec["t_ns"],
                        "ok": True, "command": command})
    return out


# ---------------------------------------------------------------- assembling


def _iterations(logs: dict[str, list[dict]], hosts: list[str], problems: list[str],
                side_flows: frozenset[str] = frozenset(),
                groups: list[frozenset[str]] | None = None):
    """side_flows: hosts whose iterations are not the collective's (an incast's victim-only
    flow runs at its own pace): their records count for verification and the traffic's end, not
    for the collective's iterations."""
    per_index: dict[int, list[dict]] = {}      # every host's records
    collective: dict[int, list[dict]] = {}     # the collective's ranks' records
    errors, timed_start, verified, per_rank, wrong = [], None, True, [], 0
    seen: set[tuple[int, str]] = set()
    for host, events in logs.items():
        for e in events:
            kind = e.get("event")
            if kind == Event.ITERATION:
                idx, start, end = _int(e.get("iter")), _int(e.get("start_ns")), _int(e.get("end_ns"))
                if None in (idx, start, end):
                    problems.append(f"worker-{host}.jsonl: iteration event without iter/start_ns/end_ns")
                    continue
                if (idx, host) in seen:      # a rank logs each iteration once: the log is damaged
                    problems.append(f"worker-{host}.jsonl: iteration {idx} recorded twice")
                    verified = False
                    continue
                seen.add((idx, host))
                per_index.setdefault(idx, []).append(e)
                if host not in side_flows:
                    collective.setdefault(idx, []).append({**e, "host": host})
                per_rank.append((idx, host, start, end, e.get("bytes"), e.get("verified") is True))
                verified = verified and e.get("verified") is True
                count = _int(e.get("wrong"))
                if e.get("verified") is not True and (count is None or count < 0):
                    wrong = None
                elif wrong is not None and e.get("verified") is not True:
                    wrong += count
            elif kind == Event.ERROR:
                errors.append(f"{host}: {e.get('reason')}")
            elif kind == Event.PHASE and e.get("phase") == Phase.WARMUP_DONE:
                t = _int(e.get("t_ns"))
                if t is not None:
                    timed_start = t if timed_start is None else min(timed_start, t)
    ranks = max(1, len([h for h in hosts if h not in side_flows]))
    expected = {h for h in hosts if h not in side_flows}
    complete = [Iteration(i, min(e["start_ns"] for e in recs), max(e["end_ns"] for e in recs),
                          len(recs), all(e.get("verified") is True for e in recs),
                          flows.slowest_group_span_ns(
                              [(e["host"], e["start_ns"], e["end_ns"]) for e in recs], groups)
                          if groups else None)
                for i, recs in sorted(collective.items())
                if len(recs) >= ranks and {e["host"] for e in recs} >= expected]
    traffic_end = max((e["end_ns"] for recs in per_index.values() for e in recs), default=None)
    per_rank.sort(key=lambda r: (r[0], hosts.index(r[1]) if r[1] in hosts else len(hosts), r[1]))
    return complete, timed_start, traffic_end, verified, errors, per_rank, wrong


def _goodput(logs: dict[str, list[dict]]) -> dict[str, list[tuple[int, int]]]:
    out = {}
    for host, events in logs.items():
        out[host] = [(e["t_ns"], e["rx_bytes"]) for e in events
                     if e.get("event") == Event.GOODPUT and _int(e.get("t_ns")) is not None
                     and isinstance(e.get("rx_bytes"), (int, float))
                     and not isinstance(e.get("rx_bytes"), bool)]
    return out


def tidy_when(when) -> str:
    """'at_s=1.2000000000000002' (a scaled float) -> 'at_s=1.2'; anything else unchanged."""
    key, sep, value = str(when).partition("=")
    try:
        number = float(value)
    except ValueError:
        return str(when)
    return f"{key}{sep}{number:.6g}" if sep and math.isfinite(number) else str(when)


def _group_entries(records: list[dict], traffic_end_ns: int | None):
    """(fault outcomes per schedule entry without recovery, {entry: its records})."""
    by_entry: dict[int, list[dict]] = {}
    for r in records:
        entry = _int(r.get("entry"))
        if entry is not None:
            by_entry.setdefault(entry, []).append(r)
    out = []
    for entry, recs in sorted(by_entry.items()):
        first_cmd = next((r.get("command") for r in recs if isinstance(r.get("command"), dict)), {})
        when = tidy_when(recs[0].get("when", "?"))
        base = dict(entry=entry, when=when, action=first_cmd.get("action") or recs[0].get("action"),
                    a=first_cmd.get("a") or recs[0].get("a"), b=first_cmd.get("b") or recs[0].get("b"))
        sent = [r for r in recs if r.get("reached", True) is not False]
        if not sent:
            out.append(Fault(status=NOT_REACHED, reason=str(recs[0].get("reason") or "never sent"),
                             **base))
            continue
        ok = [r for r in sent if r.get("ok") is True]
        refused = [r for r in sent if r.get("ok") is not True]
        t_ns = min((_int(r.get("t_ns")) for r in ok if _int(r.get("t_ns")) is not None), default=None)
        if refused:
            why = "; ".join(sorted({str(r.get("error") or "no answer") for r in refused}))
            reason = (f"the controller refused {len(refused)} of {len(sent)} command(s): {why}")
            out.append(Fault(status=FAILED, reason=reason, t_ns=t_ns, commands=len(sent), **base))
        elif t_ns is not None and traffic_end_ns is not None and t_ns > traffic_end_ns:
            reason = (f"applied {(t_ns - traffic_end_ns) / 1e9:.2f} s after the traffic ended "
                      f"(the last iteration finished first)")
            out.append(Fault(status=AFTER_TRAFFIC, reason=reason, t_ns=t_ns, commands=len(sent),
                             **base))
        else:
            out.append(Fault(status=APPLIED, t_ns=t_ns, commands=len(sent), **base))
    return out, by_entry


def measure_recoveries(samples, iteration_times_ms, timed_start_ns, traffic_end_ns,
                       faults: list[tuple[int, list[dict]]], topology=None, demand=None):
    """(baseline_bps, windows, [(capacity_fraction, expected_bps, recovery_ms)] per fault):
    the recovery definition's inputs assembled in one place. faults: (t_ns, commands) of every
    applied fault in time order; topology None counts every fault as leaving full capacity;
    demand: the collective's flows (analysis.flows.collective_demand), None if unknown."""
    windows = recovery.collective_windows(iteration_times_ms)
    if not samples:
        return None, windows, [(None, None, None)] * len(faults)
    first_sample, last_sample = samples[0][0], samples[-1][0]
    end = traffic_end_ns if traffic_end_ns is not None else last_sample
    start = timed_start_ns if timed_start_ns is not None else first_sample
    baseline = recovery.steady_goodput_bps(samples, start, faults[0][0] if faults else end,
                                           window_ms=windows["window_ms"])
    capacity: dict = {}
    out = []
    for k, (t_fault, commands) in enumerate(faults):
        fraction = 1.0
        if topology is not None:
            for command in commands:
                capacity = recovery.apply_fault_to_capacity(topology, capacity, command)
            fraction = recovery.surviving_capacity_fraction(topology, capacity, demand)
        until = faults[k + 1][0] if k + 1 < len(faults) else end
        expected = baseline * fraction if baseline else None
        rec = None
        if expected and until > t_fault:
            rec = recovery.recovery_time_ms(samples, t_fault, expected, until_ns=until, **windows)
        out.append((fraction, expected, rec))
    return baseline, windows, out


def _victim_only_hosts(config: dict, hosts: list[str]) -> frozenset[str]:
    """The hosts of an incast's victim flow when they take no part in the incast
    (`victim_only`): worker.json names them by rank."""
    victim = config.get("victim")
    if config.get("victim_only") is not True or not isinstance(victim, list):
        return frozenset()
    return frozenset(hosts[r] for r in victim
                     if isinstance(r, int) and not isinstance(r, bool) and 0 <= r < len(hosts))


def load_transport(tdir, *, name: str | None = None, faults_scheduled: int | None = None) -> TransportRun:
    """Load one transport directory. faults_scheduled: how many [[faults]] entries the scenario
    has (the runner knows it); an entry with no record at all is then reported as not reached."""
    tdir = Path(tdir)
    problems: list[str] = []
    try:
        config = parse_json(read_regular(tdir / "worker.json", MAX_WORKER_JSON_BYTES))
        if not isinstance(config, dict):
            raise ValueError("not a JSON object")
    except FileNotFoundError:
        config = {}
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        problems.append(f"worker.json: unreadable ({exc.__class__.__name__})")
        config = {}
    hosts = [str(h) for h in config.get("hosts", [])] if isinstance(config.get("hosts"), list) else []
    logs = _worker_logs(tdir, hosts, problems)
    hosts = hosts or list(logs)
    side = _victim_only_hosts(config, hosts)
    groups = flows.coupled_groups(config, [h for h in hosts if h not in side])
    iterations, timed_start, traffic_end, verified, errors, per_rank, wrong = _iterations(
        logs, hosts, problems, side, groups)
    goodput = _goodput(logs)
    samples = recovery.aggregate_cumulative({h: s for h, s in goodput.items() if s})
    # a worker that failed before the last iteration stopped its traffic, it did not end it: a
    # fault sent after the last complete iteration then landed in the one that never finished
    planned = _planned(config, tdir, problems)
    stopped = bool(errors) and (planned is None or len(iterations) < planned)
    outcomes, by_entry = _group_entries(_fault_records(tdir, problems),
                                        None if stopped else traffic_end)
    if faults_scheduled is not None:
        for entry in range(faults_scheduled):
            if entry not in by_entry:
                outcomes.append(Fault(entry=entry, when="?", status=NOT_REACHED, action=None,
                                      a=None, b=None, reason="the run ended before it was due"))
        outcomes.sort(key=lambda f: f.entry)
    topology = _topology_of(config, tdir)
    demand = flows.collective_demand(config)
    measured = sorted((f for f in outcomes if f.t_ns is not None and f.status in (APPLIED, FAILED)),
                      key=lambda f: f.t_ns)
    ok_commands = {f.entry: [r["command"] for r in by_entry.get(f.entry, [])
                             if r.get("ok") is True and isinstance(r.get("command"), dict)]
                   for f in measured}
    baseline, windows, results = measure_recoveries(
        samples, [it.duration_ms for it in iterations], timed_start, traffic_end,
        [(f.t_ns, ok_commands[f.entry]) for f in measured], topology, demand)
    done = {f.entry: replace(f, capacity_fraction=fr, expected_goodput_bps=exp, recovery_ms=rec)
            for f, (fr, exp, rec) in zip(measured, results)}
    faults = [done.get(f.entry, f) for f in outcomes]
    faults.sort(key=lambda f: f.entry)
    return TransportRun(name=name or str(config.get("transport") or tdir.name), directory=tdir,
                        hosts=hosts, iterations_planned=planned, iterations=iterations,
                        goodput=goodput, samples=samples, timed_start_ns=timed_start,
                        traffic_end_ns=traffic_end, data_verified=verified, worker_errors=errors,
                        faults=faults, baseline_goodput_bps=baseline, windows=windows,
                        rank_iterations=per_rank, problems=problems, groups=groups,
                        wrong_elements=wrong, retransmissions=_retransmissions(logs),
                        transport_failure=_transport_failure(logs, timed_start),
                        demand=demand)
