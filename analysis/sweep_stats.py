"""A sweep's tidy table and curves: one row per point x transport x repeat from the runs'
summary.json files, the mean of every metric per point and transport with a 95% Student-t
interval across repeats, and one figure per metric against the swept parameter.

A point is "trusted" when every repeat's fidelity verdict (summary.json `fidelity.verdict`) is
"ok". Untrusted points are drawn hollow and left out of the line through the points (the fit):
a number the host's CPU set rather than the emulated fabric is not a point of the curve. A run
without a fidelity verdict counts as "unknown", so not trusted.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from analysis import safe_write

# Student's t, 0.975 quantile (two-sided 95%), by degrees of freedom (any statistics table, e.g.
# NIST/SEMATECH e-Handbook 1.3.6.7.2). Past 30 the next smaller tabulated df is used: a slightly
# wider interval, never a narrower one.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120,
        17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064,
        25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000,
        120: 1.980}
Z975 = 1.960

# the metrics of a row (from a transport's summary.json) and of the curves
METRICS = ("time_median_ms", "time_mean_ms", "slowest_iteration_ms", "algbw_GBps", "busbw_GBps",
           "line_rate_fraction", "slowdown", "recovery_max_ms", "retransmissions", "evs_retired",
           "victim_goodput_mbit", "trimmed")
FIGURE_METRICS = ("time_mean_ms", "slowest_iteration_ms", "busbw_GBps", "line_rate_fraction",
                  "slowdown", "recovery_max_ms", "retransmissions", "evs_retired",
                  "victim_goodput_mbit", "trimmed")
LABELS = {"time_median_ms": "median iteration (ms)", "time_mean_ms": "mean iteration (ms)",
          "slowest_iteration_ms": "slowest iteration (ms)", "algbw_GBps": "algbw (GB/s)", "busbw_GBps": "busbw (GB/s)",
          "slowdown": "mean iteration / loss-free mean", "recovery_max_ms": "slowest recovery (ms)",
          "retransmissions": "retransmissions", "evs_retired": "EVs retired",
          "line_rate_fraction": "busbw / host line rate", "trimmed": "packets trimmed",
          "victim_goodput_mbit": "victim flow's goodput (Mbit/s)"}
TRUSTED = "ok"


def t_quantile(df: int) -> float:
    """t_{0.975, df}: T975, or the next smaller tabulated df; the normal's 1.96 past 120."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df > 120:
        return Z975
    return T975[max(k for k in T975 if k <= df)]


def mean_interval(values) -> tuple[float | None, float | None, float | None]:
    """(mean, low, high): the 95% t-interval mean +- t_{0.975,n-1} s / sqrt(n) of the values
    that are numbers; the interval is None with fewer than 2 values, all None with none."""
    xs = [float(v) for v in values if v is not None and not (isinstance(v, float) and v != v)]
    if not xs:
        return None, None, None
    mean = sum(xs) / len(xs)
    if len(xs) < 2:
        return mean, None, None
    s = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
    half = t_quantile(len(xs) - 1) * s / math.sqrt(len(xs))
    return mean, mean - half, mean + half


def row_of(summary: dict, point: dict, repeat: int, run_dir: str | None) -> dict:
    """The tidy row of one transport's summary.json at one point and repeat."""
    nccl = summary.get("nccl") or {}
    recovery = summary.get("recovery_ms") or []
    fidelity = summary.get("fidelity")
    verdict = fidelity.get("verdict") if isinstance(fidelity, dict) else None
    cpu = summary.get("cpu") if isinstance(summary.get("cpu"), dict) else {}
    row = {**point, "repeat": repeat, "transport": summary.get("transport"),
           "verified": bool(summary.get("verified")), "fidelity": verdict or "unknown",
           **{k: nccl.get(k) for k in ("time_median_ms", "time_mean_ms", "algbw_GBps",
                                         "busbw_GBps", "wrong")},
           "recovery_max_ms": (max(r for r in recovery if r is not None)
                               if any(r is not None for r in recovery) else None),
           "faults_ok": summary.get("faults_ok"),      # every scheduled fault took effect
           "faults_not_recovered": sum(r is None for r in recovery),
           "retransmissions": summary.get("retransmissions"),
           "evs_retired": summary.get("evs_retired"),
           "slowest_iteration_ms": summary.get("slowest_iteration_ms"),
           "line_rate_fraction": summary.get("line_rate_fraction"),
           "victim_goodput_mbit": summary.get("victim_goodput_mbit"),
           "trimmed": summary.get("trimmed"),
           # the run's conditions: its time scale and the load no role of the run accounts for
           "time_scale": summary.get("time_scale"),
           "cpu_other_cores": (cpu.get("cores_by_role") or {}).get("other"),
           "cores": cpu.get("cores"),
           "run_dir": run_dir}
    for i, r in enumerate(recovery):
        row[f"recovery_ms_f{i}"] = r
    return row


def rows_of_run(run_dir: Path, transports: list[str], point: dict, repeat: int) -> list[dict]:
    """One row per transport of a finished run directory; a transport without a summary.json
    gets a row that says so (verified false, no numbers)."""
    rows = []
    for t in transports:
        path = Path(run_dir) / t / "summary.json"
        try:
            summary = json.loads(path.read_text())
        except (OSError, ValueError):
            summary = {"transport": t, "verified": False}
        rows.append({**row_of(summary, point, repeat, str(run_dir)), **run_record(run_dir)})
    return rows


def run_record(run_dir: Path) -> dict:
    """What the run's run.json says of its conditions: wall time (s), commit, machine."""
    try:
        record = json.loads((Path(run_dir) / "run.json").read_text())
    except (OSError, ValueError):
        record = None
    record = record if isinstance(record, dict) else {}
    git = record.get("git") if isinstance(record.get("git"), dict) else {}
    machine = record.get("machine") if isinstance(record.get("machine"), dict) else {}
    return {"wall_s": record.get("duration_s"), "commit": git.get("commit"),
            "machine": machine.get("hostname"), "cpu_model": machine.get("cpu_model")}


def add_slowdown(rows: list[dict], baseline_x: float | None) -> None:
    """rows' "slowdown": time_mean_ms over the mean of the same transport's time_mean_ms at
    x == baseline_x (every repeat). None without a baseline or a baseline time."""
    reference = {}
    if baseline_x is not None:
        for t in {r["transport"] for r in rows}:
            mean, _, _ = mean_interval(r["time_mean_ms"] for r in rows
                                       if r["transport"] == t and r["x"] == baseline_x)
            reference[t] = mean
    for r in rows:
        ref = reference.get(r["transport"])
        r["slowdown"] = (r["time_mean_ms"] / ref if ref and r.get("time_mean_ms") is not None
                         else None)


def aggregate(rows: list[dict], series_keys: list[str] = ()) -> list[dict]:
    """One record per (point, transport): its x, the series it belongs to (the transport and
    the values of series_keys, the grid keys other than x: one line of a figure each; `group`
    is the series without the transport, what transports are compared within), n,
    trusted (every repeat's fidelity "ok"), and for each metric its mean and 95% interval
    (metric, metric_low, metric_high)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["point"], r["transport"]), []).append(r)
    out = []
    for (point, t), rs in groups.items():
        group = ", ".join(f"{k} = {rs[0].get(k)}" for k in series_keys)
        series = ", ".join([str(t)] + ([group] if group else []))
        rec = {"point": point, "x": rs[0]["x"], "transport": t, "series": series, "group": group,
               "n": len(rs),
               "trusted": all(r.get("fidelity") == TRUSTED for r in rs)}
        for m in METRICS:
            rec[m], rec[f"{m}_low"], rec[f"{m}_high"] = mean_interval(r.get(m) for r in rs)
        out.append(rec)
    out.sort(key=lambda a: (a["series"], a["x"]))
    return out


def plot(aggregated: list[dict], metric: str, x_label: str, title: str, path: Path) -> Path | None:
    """metric's mean against x, one line per series through its trusted points, 95%
    intervals as error bars, untrusted points hollow. None when no point has the metric."""
    points = [a for a in aggregated if a.get(metric) is not None]
    if not points:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, t in enumerate(sorted({a["series"] for a in points})):
        color = f"C{i % 10}"
        mine = sorted((a for a in points if a["series"] == t), key=lambda a: a["x"])
        trusted = [a for a in mine if a["trusted"]]
        if trusted:
            ax.plot([a["x"] for a in trusted], [a[metric] for a in trusted], "-", color=color,
                    label=t)
        for a in mine:
            low, high = a[f"{metric}_low"], a[f"{metric}_high"]
            if low is not None:
                ax.errorbar([a["x"]], [a[metric]], yerr=[[a[metric] - low], [high - a[metric]]],
                            fmt="none", ecolor=color, capsize=3)
            ax.plot([a["x"]], [a[metric]], "o", color=color,
                    markerfacecolor=color if a["trusted"] else "none",
                    label=None if trusted else t if a is mine[0] else None)
    ax.set_xlabel(x_label)
    ax.set_ylabel(LABELS.get(metric, metric))
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, "mean of the repeats, 95% t-interval; hollow: fidelity not ok "
             "(not in the line)", fontsize=7, color="0.4")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    try:
        safe_write.save_figure(fig, path, dpi=110)
    finally:
        plt.close(fig)
    return path
