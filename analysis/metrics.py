"""Metrics of a run, from the packet table (analysis.pcap) and the event log (analysis.logs).

Pure functions of DataFrames (no I/O) except `analyze_run`, which loads a run directory and
computes everything the report, the notebook and the runner's summary show. Times are
CLOCK_MONOTONIC ns; rates are Mbit/s (10^6 bit/s), the unit of the fabric's link rates.

Bus bandwidth follows NCCL's definition (nccl-tests doc/PERFORMANCE.md): algbw = S / t with S the
collective's buffer size in bytes and t its time; busbw = algbw * factor, where the factor makes
the figure comparable to link speed: all_reduce 2(n-1)/n; reduce_scatter, all_gather and
all_to_all (n-1)/n; broadcast, reduce and send/recv 1.

Recovery time per fault uses the single definition in analysis.recovery, with its inputs
assembled by analysis.runmodel (the same code that writes the runner's summary.json), so the
report, the notebook and the terminal table give the same numbers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import runmodel
from analysis import flows, metric_names, recovery
from analysis.metric_names import BUSBW_FACTORS, busbw_factor  # noqa: F401 - re-exported
from analysis.metric_names import norm_collective as _norm_collective  # noqa: F401
from analysis.logs import load_events, load_faults, load_summary, run_topology, transport_dirs
from analysis.pcap import drop_far_packets, load_captures
from analysis.timescale import time_scale_problem
from model.events import Event, Phase
from model.faults import ACTIONS as FAULT_ACTIONS

DATA_OPNAMES = ("WRITE_FIRST", "WRITE_MIDDLE", "WRITE_LAST", "WRITE_LAST_IMM", "WRITE_ONLY",
                "WRITE_ONLY_IMM")
# OCP's EV states, plus SUSPECT: not an OCP state, the time an EV spends out of use while a
# loss on it awaits its verdict (traffic/core/reliability.py loss verdicts; ev_suspect / ev_cleared).
EV_STATES = ("GOOD", "ASSUMED_BAD", "DENIED", "UNKNOWN", "SUSPECT")


# ---------------------------------------------------------------- basic formulas


def jain_index(loads) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 = perfectly even, 1/n = all on one.
    NaN for no values; 1.0 when every load is 0 (nothing to be unfair about)."""
    x = np.asarray(list(loads), dtype=float)
    if x.size == 0:
        return float("nan")
    sq = float((x * x).sum())
    if sq == 0:
        return 1.0
    return float(x.sum() ** 2 / (x.size * sq))


def bus_bandwidth(size_bytes, seconds, n: int, collective: str = "allreduce"):
    """(algbw, busbw) in bytes/s (NCCL prints GB/s); vectorised over size_bytes/seconds.

    nccl-tests doc/PERFORMANCE.md: algbw = S / t, busbw = algbw x factor (busbw_factor).
    size_bytes is NCCL's S, not what a rank sends: the per-rank buffer for all-reduce, the
    total input (reduce-scatter) or output (all-gather) of n chunks, the total for all-to-all,
    the message for send/recv. The worker logs it as `nccl_size_bytes`; its `bytes` (what the
    rank sent, 2(n-1)/n of S for an all-reduce) would count the factor twice."""
    algbw = np.asarray(size_bytes, dtype=float) / np.asarray(seconds, dtype=float)
    return algbw, algbw * busbw_factor(collective, n)


def line_rate_fraction(busbw_Bps, planes: int, host_link_mbit: float) -> float:
    """How much of a host's line rate the collective used: the median iteration's busbw over
    planes x host link rate (a host has one link per plane). busbw_Bps: bytes/s, one value or
    one per iteration (the median is taken). NaN when there is no iteration."""
    if isinstance(planes, bool) or not isinstance(planes, (int, np.integer)) or planes < 1:
        raise ValueError(f"planes must be an integer >= 1, got {planes!r}")
    if not isinstance(host_link_mbit, (int, float, np.number)) or isinstance(host_link_mbit, bool) \
            or not host_link_mbit > 0 or not np.isfinite(host_link_mbit):
        raise ValueError(f"host_link_mbit must be a positive number, got {host_link_mbit!r}")
    values = np.atleast_1d(np.asarray(busbw_Bps, dtype=float))
    values = values[~np.isnan(values)]
    if values.size == 0:
        return float("nan")
    return float(np.median(values) * 8 / (planes * host_link_mbit * 1e6))

# ---------------------------------------------------------------- packets


def data_packets(pk: pd.DataFrame, direction: str | None = "rx") -> pd.DataFrame:
    sel = pk["opname"].isin(DATA_OPNAMES)
    if direction is not None:
        sel &= pk["direction"] == direction
    return pk[sel]


def first_arrivals(pk: pd.DataFrame) -> pd.DataFrame:
    """Received data packets minus duplicates (same transport/host/src/QP/PSN seen before) and
    trimmed ones: what counts as delivered payload."""
    rx = data_packets(pk, "rx")
    rx = rx[~rx["trimmed"].astype(bool)] if "trimmed" in rx else rx
    keys = [c for c in ("transport", "host", "src", "qp", "psn") if c in rx.columns]
    return rx.loc[~rx.duplicated(subset=keys, keep="first")]


def goodput_series(pk: pd.DataFrame, bin_ms: float = 10.0, by=("host",), t0_ns: int | None = None,
                   unique: bool = True) -> pd.DataFrame:
    """Delivered payload rate (Mbit/s) per time bin, one column per group of `by` (any of
    transport, host, qp, plane, ev, ev_plane, ev_spine). Index: bin start, seconds from t0."""
    rx = first_arrivals(pk) if unique else data_packets(pk, "rx")
    if t0_ns is None:
        t0_ns = int(pk["time_ns"].min()) if len(pk) else 0
    bin_ns = int(bin_ms * 1e6)
    if len(rx) == 0:
        return pd.DataFrame(index=pd.Index([], name="t_s"))
    b = (rx["time_ns"].to_numpy() - t0_ns) // bin_ns
    bytes_ = rx["payload_len"].fillna(0).to_numpy(dtype=np.int64)
    frame = pd.DataFrame({"bin": b, "bytes": bytes_})
    by = list(by)
    for c in by:
        frame[c] = rx[c].astype(object).to_numpy()
    table = frame.pivot_table(index="bin", columns=by or None, values="bytes", aggfunc="sum",
                              fill_value=0) if by else frame.groupby("bin")["bytes"].sum().to_frame("all")
    full = np.arange(0, int(b.max()) + 1)
    table = table.reindex(full, fill_value=0)
    table.index = pd.Index(full * bin_ns / 1e9, name="t_s")
    return table * 8 / (bin_ns / 1e9) / 1e6


def load_by(pk: pd.DataFrame, key, direction: str = "tx") -> pd.Series:
    """Bytes sent (frame sizes of data packets) per plane / path: key 'plane', 'ev', or a list
    such as ['ev_plane', 'ev_spine'] (a path = plane + T1)."""
    tx = data_packets(pk, direction)
    return tx.groupby(key, observed=True)["size"].sum().astype(np.int64)


def load_balance(pk: pd.DataFrame) -> dict:
    """Jain index over planes and over (plane, spine) paths of transmitted data bytes."""
    planes = load_by(pk, "plane")
    paths = load_by(pk, ["ev_plane", "ev_spine"])
    return {"plane_bytes": planes.to_dict(), "plane_jain": jain_index(planes.values),
            "path_bytes": {f"p{p}s{s}": int(v) for (p, s), v in paths.items()},
            "path_jain": jain_index(paths.values)}


def reordering(pk: pd.DataFrame) -> pd.DataFrame:
    """Reordering distance per received data packet: how many PSNs below the highest PSN already
    received on the same (host, src, qp) it arrives (0 = in order). Retransmissions excluded
    (their lateness is recovery, not reordering)."""
    rx = data_packets(pk, "rx")
    rx = rx[~rx["retx"]]
    keys = [c for c in ("transport", "host", "src", "qp") if c in rx.columns]
    if len(rx) == 0:
        return pd.DataFrame(columns=keys + ["psn", "distance"])
    psn = rx["psn"].astype(np.int64)
    highest = psn.groupby([rx[k].astype(object) for k in keys], sort=False).cummax()
    out = rx[keys + ["time_ns"]].copy()
    out["psn"] = psn.to_numpy()
    out["distance"] = (highest - psn).to_numpy()
    return out


def packet_retransmissions(pk: pd.DataFrame) -> pd.DataFrame:
    """Transmitted data packets with the retransmission flag, per transport/host/plane."""
    tx = data_packets(pk, "tx")
    keys = [c for c in ("transport", "host", "plane") if c in tx.columns]
    g = tx.groupby(keys, observed=True)
    return pd.DataFrame({"sent": g.size(), "retransmitted": g["retx"].sum()}).reset_index()


# ---------------------------------------------------------------- events


def _events(ev: pd.DataFrame, name: str) -> pd.DataFrame:
    if len(ev) == 0 or "event" not in ev:
        return pd.DataFrame()
    return ev[ev["event"] == name].dropna(axis=1, how="all")


def log_goodput_series(ev: pd.DataFrame, bin_ms: float = 10.0, t0_ns: int | None = None,
                       counter: str = "rx_bytes") -> pd.DataFrame:
    """Rate (Mbit/s) per host from the endpoints' cumulative `goodput` events, resampled to bins."""
    g = _events(ev, Event.GOODPUT)
    if len(g) == 0 or counter not in g:
        return pd.DataFrame(index=pd.Index([], name="t_s"))
    if t0_ns is None:
        t0_ns = int(ev["t_ns"].min())
    bin_ns = int(bin_ms * 1e6)
    cols = {}
    for host, h in g.groupby("host", observed=True):
        h = h.sort_values("t_ns")
        b = (h["t_ns"].to_numpy() - t0_ns) // bin_ns
        last = pd.Series(h[counter].to_numpy(dtype=float), index=b).groupby(level=0).max()
        cols[host] = last
    table = pd.DataFrame(cols)
    full = np.arange(int(table.index.min()), int(table.index.max()) + 1)
    table = table.reindex(full).ffill().fillna(0).diff().clip(lower=0).fillna(0)
    table.index = pd.Index(full * bin_ns / 1e9, name="t_s")
    return table * 8 / (bin_ns / 1e9) / 1e6


def retransmission_causes(ev: pd.DataFrame) -> pd.DataFrame:
    """Count of `retransmit` events per host and reason (timeout, sack_gap, nack_trimmed, ...)."""
    r = _events(ev, Event.RETRANSMIT)
    if len(r) == 0:
        return pd.DataFrame(columns=["host", "reason", "count"])
    return (r.groupby(["host", "reason"], observed=True).size()
            .rename("count").reset_index())


def ev_state_intervals(ev: pd.DataFrame, end_ns: int | None = None) -> pd.DataFrame:
    """One row per (host, qp, ev) stretch in one state: start_ns, end_ns, state, reason.
    ev_suspect starts a SUSPECT stretch, ev_cleared returns the EV to GOOD."""
    s = _events(ev, Event.EV_STATE)
    cols = ["host", "qp", "ev", "plane", "state", "start_ns", "end_ns", "reason"]
    if len(s) == 0:
        return pd.DataFrame(columns=cols)
    verdicts = ev[ev["event"].isin([Event.EV_SUSPECT, Event.EV_CLEARED])]
    if len(verdicts):
        suspect = verdicts["event"] == Event.EV_SUSPECT
        reason = verdicts["reason"] if "reason" in verdicts else pd.Series(None, index=verdicts.index)
        evidence = (verdicts["evidence"] if "evidence" in verdicts
                    else pd.Series(None, index=verdicts.index))
        extra = pd.DataFrame({"t_ns": verdicts["t_ns"], "host": verdicts["host"],
                              "qp": verdicts["qp"], "ev": verdicts["ev"],
                              "plane": verdicts.get("plane"),
                              "new": np.where(suspect, "SUSPECT", "GOOD"),
                              "reason": reason.where(suspect, evidence)})
        s = pd.concat([s, extra], ignore_index=True)
    if end_ns is None:
        end_ns = int(ev["t_ns"].max())
    s = s.sort_values("t_ns", kind="stable")
    out = []
    for (host, qp, e), grp in s.groupby(["host", "qp", "ev"], observed=True, sort=False):
        t = grp["t_ns"].to_numpy()
        ends = np.append(t[1:], max(end_ns, int(t[-1])))
        for i, row in enumerate(grp.itertuples(index=False)):
            out.append((host, int(qp), int(e), int(getattr(row, "plane", -1) if hasattr(row, "plane") else -1),
                        row.new, int(t[i]), int(ends[i]), getattr(row, "reason", None)))
    return pd.DataFrame(out, columns=cols)


def ev_state_matrix(ev: pd.DataFrame, bin_ms: float = 10.0, t0_ns: int | None = None,
                    end_ns: int | None = None, states: tuple[str, ...] | None = None) -> pd.DataFrame:
    """EV x time-bin matrix of state codes (index of EV_STATES; NaN = no state known yet).
    Rows are 'host/qp/ev' labels; a bin shows the worst state held during it. `states`: only
    stretches in these states count (the bins and rows stay those of all states)."""
    iv = ev_state_intervals(ev, end_ns)
    if len(iv) == 0:
        return pd.DataFrame()
    t0 = int(ev["t_ns"].min()) if t0_ns is None else t0_ns
    end = int(iv["end_ns"].max()) if end_ns is None else end_ns
    if states is not None:
        labels = {f"{r.host}/qp{r.qp}/ev{r.ev:#010x}" for r in iv.itertuples(index=False)}
        iv = iv[iv["state"].isin(states)]
    bin_ns = int(bin_ms * 1e6)
    nbins = max(1, int((end - t0) // bin_ns) + 1)
    # a bin shows the worst state held in it: DENIED > ASSUMED_BAD > SUSPECT > UNKNOWN > GOOD
    severity = {"GOOD": 0, "UNKNOWN": 1, "SUSPECT": 2, "ASSUMED_BAD": 3, "DENIED": 4}
    rows, worst = {}, {}
    for r in iv.itertuples(index=False):
        label = f"{r.host}/qp{r.qp}/ev{r.ev:#010x}"
        row = rows.setdefault(label, np.full(nbins, np.nan))
        sev = worst.setdefault(label, np.full(nbins, -1))
        a = int(max(0, (r.start_ns - t0) // bin_ns))
        b = int(min(nbins - 1, max(a, (r.end_ns - 1 - t0) // bin_ns)))
        state = r.state if r.state in EV_STATES else "UNKNOWN"
        level = severity[state]
        upd = sev[a:b + 1] < level
        row[a:b + 1][upd] = EV_STATES.index(state)
        sev[a:b + 1][upd] = level
    if states is not None:
        for label in labels:
            rows.setdefault(label, np.full(nbins, np.nan))
    m = pd.DataFrame(rows).T.sort_index()
    m.columns = pd.Index(np.arange(nbins) * bin_ns / 1e9, name="t_s")
    return m


def iteration_times(ev: pd.DataFrame, groups: list[frozenset[str]] | None = None) -> pd.DataFrame:
    """Collective iterations: one row per (transport, iter) with the slowest rank's duration
    (a collective ends when its last rank ends), bytes (most any rank sent) and NCCL's size S
    (nccl_size_bytes; NaN in logs that predate it). `groups` (flows.coupled_groups): hosts
    whose iterations are tied by data; the duration is then the slowest group's span, and
    hosts in no group (an incast's victim-only flow) are not ranks of the collective."""
    it = _events(ev, Event.ITERATION)
    cols = ["transport", "collective", "iter", "start_ns", "end_ns", "duration_s", "bytes",
            "nccl_size_bytes", "ranks", "verified"]
    if len(it) == 0:
        return pd.DataFrame(columns=cols)
    it = it.copy()
    if "transport" not in it:
        it["transport"] = "?"
    if "nccl_size_bytes" not in it:
        it["nccl_size_bytes"] = float("nan")
    if groups:
        members = set().union(*groups)
        it = it[it["host"].astype(str).isin(members)]
        if len(it) == 0:
            return pd.DataFrame(columns=cols)
    g = it.groupby(["transport", "collective", "iter"], observed=True)
    out = g.agg(start_ns=("start_ns", "min"), end_ns=("end_ns", "max"), bytes=("bytes", "max"),
                nccl_size_bytes=("nccl_size_bytes", "max"), ranks=("host", "nunique"),
                verified=("verified", lambda v: bool(pd.Series(v).fillna(False).astype(bool).all())))
    out["duration_s"] = (out["end_ns"] - out["start_ns"]) / 1e9
    if groups:
        spans = {key: flows.slowest_group_span_ns(
                     list(zip(x["host"].astype(str), x["start_ns"].astype("int64"),
                              x["end_ns"].astype("int64"))), groups)
                 for key, x in g}
        out["duration_s"] = [spans[key] / 1e9 for key in out.index]
    return out.reset_index()[cols]


def iteration_bandwidth(iters: pd.DataFrame, world_size: int | None = None) -> pd.DataFrame:
    """iteration_times plus algbw/busbw (bytes/s, NCCL definition, from nccl_size_bytes) per
    iteration."""
    out = iters.copy()
    if len(out) == 0:
        out["algbw_Bps"] = out["busbw_Bps"] = []
        return out
    algs, buses = [], []
    for r in out.itertuples(index=False):
        n = world_size or int(r.ranks)
        try:
            a, b = bus_bandwidth(r.nccl_size_bytes, r.duration_s, n, r.collective)
        except ValueError:
            a, b = float(r.nccl_size_bytes) / r.duration_s, float("nan")
        algs.append(float(a))
        buses.append(float(b))
    out["algbw_Bps"] = algs
    out["busbw_Bps"] = buses
    return out


def recovery_per_fault(faults: pd.DataFrame, ev: pd.DataFrame, topology=None,
                       counter: str = "rx_bytes", demand=None) -> pd.DataFrame:
    """Recovery time (ms) of every fault in a fault-log DataFrame, with the inputs assembled by
    analysis.runmodel.measure_recoveries from the event log (warmup_done, complete iterations,
    the hosts' `goodput` counters), exactly as for summary.json. Each fault-log row counts as one
    fault; a run directory's per-entry numbers are in recovery_table. recovery_ms is NaN when the
    goodput never recovers (the definition's None). demand: the collective's flows
    (TransportData.model.demand), as the run model weighs the fabric's cuts."""
    cols = ["t_ns", "action", "a", "b", "expected_mbit", "recovery_ms", "recovered"]
    g = _events(ev, Event.GOODPUT)
    if len(faults) == 0 or len(g) == 0 or counter not in g:
        return pd.DataFrame(columns=cols)
    per_host = {str(h): list(zip(x["t_ns"].astype(float), x[counter].astype(float)))
                for h, x in g.groupby("host", observed=True)}
    samples = recovery.aggregate_cumulative(per_host)
    faults = faults.sort_values("t_ns", kind="stable").reset_index(drop=True)
    it = _events(ev, Event.ITERATION)
    spans, traffic_end = [], None
    if len(it) and {"iter", "start_ns", "end_ns"} <= set(it.columns):
        ranks = it["host"].nunique()
        whole = it.groupby("iter").filter(lambda x: x["host"].nunique() == ranks)
        spans = recovery.iteration_spans_ms(zip(whole["iter"], whole["start_ns"], whole["end_ns"]))
        traffic_end = int(it["end_ns"].max())
    ph = _events(ev, Event.PHASE)
    starts = ph[ph["phase"] == Phase.WARMUP_DONE]["t_ns"] if "phase" in ph else []
    timed_start = int(min(starts)) if len(starts) else None
    commands = [{k: v for k, v in f.items() if not (isinstance(v, float) and np.isnan(v))}
                for _, f in faults.iterrows()]
    _, _, results = runmodel.measure_recoveries(
        samples, spans, timed_start, traffic_end,
        [(int(c["t_ns"]), [c]) for c in commands], topology, demand)
    rows = [(int(c["t_ns"]), c.get("action"), c.get("a"), c.get("b"),
             (expected or float("nan")) * 8 / 1e6, float("nan") if rec is None else rec,
             rec is not None)
            for c, (_, expected, rec) in zip(commands, results)]
    return pd.DataFrame(rows, columns=cols)


def recovery_table(model: runmodel.TransportRun, t0_ns: int | None = None) -> pd.DataFrame:
    """Every scheduled fault of one transport's run model: when (s since t0_ns, default the
    timed start), what, whether it took effect and why not, and its recovery time."""
    t0 = model.timed_start_ns if t0_ns is None else t0_ns
    rows = [{"entry": f.entry, "when": f.when, "action": f.action, "a": f.a, "b": f.b,
             "t_s": None if f.t_ns is None or t0 is None else (f.t_ns - t0) / 1e9,
             "status": f.status, "capacity_fraction": f.capacity_fraction,
             "expected_mbit": None if f.expected_goodput_bps is None
             else f.expected_goodput_bps * 8 / 1e6,
             "recovery_ms": f.recovery_ms, "reason": f.reason} for f in model.faults]
    return pd.DataFrame(rows, columns=["entry", "when", "action", "a", "b", "t_s", "status",
                                       "capacity_fraction", "expected_mbit", "recovery_ms",
                                       "reason"])


# ---------------------------------------------------------------- a whole run


@dataclass
class TransportData:
    name: str
    directory: Path
    packets: pd.DataFrame
    events: pd.DataFrame
    faults: pd.DataFrame
    summary: dict
    problems: list[str] = field(default_factory=list)
    topology: object = None     # model.topology.Topology of the run's fabric, if known
    model: runmodel.TransportRun | None = None   # verdict and recovery numbers (summary.json's)


@dataclass
class RunAnalysis:
    run_dir: Path
    transports: dict[str, TransportData]
    t0_ns: int
    bin_ms: float
    summary: dict

    def all_faults(self) -> pd.DataFrame:
        frames = [t.faults.assign(transport=n) for n, t in self.transports.items() if len(t.faults)]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
            columns=["t_ns", "action", "a", "b", "transport"])


def load_run(run_dir, bin_ms: float = 10.0) -> RunAnalysis:
    """Load every transport of a run directory (captures, event logs, fault log, summary)."""
    run_dir = Path(run_dir)
    transports = {}
    starts = []
    run_problems: list[str] = []       # the run's own summary.json: shown with every transport
    run_summary = load_summary(run_dir, run_problems)
    for name, d in transport_dirs(run_dir).items():
        pk = load_captures(d, transport=name)
        events = load_events(d)
        raw_faults = load_faults(d)
        # entries that are not faults (port_status notifications, flap steps, ...) stay in
        # the raw log but are not drawn or timed as faults
        faults = raw_faults[raw_faults["action"].isin(FAULT_ACTIONS)].reset_index(drop=True)
        faults.attrs = dict(raw_faults.attrs)
        problems = list(events.attrs.get("log_problems", [])) + list(faults.attrs.get("log_problems", []))
        for rep in pk.attrs.get("pcap_reports", []):
            problems += [f"{Path(rep['path']).name}: {p}" for p in rep.get("problems", [])]
        pk = drop_far_packets(pk, int(events["t_ns"].median()) if len(events) else None,
                              problems)
        scale_problem = time_scale_problem(d)
        if scale_problem:
            problems.append(scale_problem)
        summary = load_summary(d, problems)
        topology = run_topology(d, problems) or run_topology(run_dir, problems)
        problems = list(dict.fromkeys(problems + run_problems))   # one line per problem
        scheduled = summary.get("faults_scheduled")
        model = runmodel.load_transport(d, name=name, faults_scheduled=(
            scheduled if isinstance(scheduled, int) and not isinstance(scheduled, bool) else None))
        transports[name] = TransportData(name, d, pk, events, faults, summary, problems, topology,
                                         model)
        for df, col in ((pk, "time_ns"), (events, "t_ns")):
            if len(df):
                starts.append(int(df[col].min()))
    t0 = min(starts) if starts else 0
    return RunAnalysis(run_dir, transports, t0, bin_ms, run_summary)


def _nan(value) -> float:
    return float("nan") if value is None else float(value)


def transport_metrics(td: TransportData, t0_ns: int, bin_ms: float = 10.0) -> dict:
    """Headline numbers of one transport (the comparison table's row) under the keys of
    analysis/metric_names.py, computed there from the run model (so they are summary.json's);
    then what only the captures measure (balance, reordering, retransmissions seen)."""
    row: dict = {"transport": td.name}
    s = td.summary if isinstance(td.summary, dict) else {}
    model = td.model
    times = model.iteration_times_ms if model is not None else []
    if not times:       # logs the run model cannot read (no worker logs): the events' iterations
        it = iteration_times(td.events)
        times = [float(d) * 1e3 for d in it["duration_s"]] if len(it) else []
    median = metric_names.median_iteration_ms(times)
    row["iterations_completed"] = len(times)
    row["median_iteration_ms"] = _nan(median)
    row["p99_iteration_ms"] = _nan(metric_names.p99_iteration_ms(times))
    row["slowest_iteration_ms"] = _nan(metric_names.slowest_iteration_ms(times))
    world = s.get("world_size")
    bus = (metric_names.busbw_mbit(s["collective"], s.get("message_bytes"), world, median)
           if s.get("collective") and isinstance(world, int) else None)
    row["busbw_mbit"] = _nan(bus)
    row["line_rate_fraction"] = _nan(s.get("line_rate_fraction"))
    goodput = (metric_names.goodput_sum_mbit(model.samples, model.timed_start_ns,
                                             model.traffic_end_ns) if model is not None else None)
    if goodput is None and len(td.packets):     # no worker logs: the captures' payload, binned
        gp = goodput_series(td.packets, bin_ms, by=("host",), t0_ns=t0_ns)
        goodput = float(gp.sum(axis=1).mean()) if gp.shape[1] else None
    row["goodput_sum_mbit"] = _nan(goodput)
    row["retransmissions"] = _nan(model.retransmissions if model is not None else None)
    pr = packet_retransmissions(td.packets) if len(td.packets) else pd.DataFrame()
    row["retransmissions_captured"] = int(pr["retransmitted"].sum()) if len(pr) else 0
    if len(td.packets):
        lb = load_balance(td.packets)
        row["plane_jain"] = lb["plane_jain"]
        row["path_jain"] = lb["path_jain"]
        ro = reordering(td.packets)
        row["reorder_p99"] = float(ro["distance"].quantile(0.99)) if len(ro) else float("nan")
    applied = model.applied if model is not None else []
    if applied:
        recs = [f.recovery_ms for f in applied]
        row["recovery_first_fault_ms"] = _nan(recs[0])
        known = [r for r in recs if r is not None]
        row["recovery_max_ms"] = max(known) if known else float("nan")
        row["faults_not_recovered"] = sum(r is None for r in recs)
    if model is not None and model.faults:
        row["faults_not_effective"] = len(model.not_effective)
    row["problems"] = len(td.problems)
    return row


def compare_transports(run: RunAnalysis) -> pd.DataFrame:
    """Side-by-side table, one row per transport."""
    rows = [transport_metrics(td, run.t0_ns, run.bin_ms) for td in run.transports.values()]
    return pd.DataFrame(rows).set_index("transport") if rows else pd.DataFrame()
