"""Figures of a run (matplotlib, Agg backend: no display needed, safe in tests and over ssh).

Every function takes analysed data (analysis.metrics.RunAnalysis or DataFrames), draws one
figure with a title, axis units and a legend, and returns the matplotlib Figure; `figures`
heads each with the scenario, the time scale and the fidelity verdicts (plots_common.heading),
`save_all` writes every figure of a run as PNG and returns {name: path}. Time axes are seconds
of emulated time since the transport's timed start (plots_common: each transport runs on its
own fabric at its own time), so a fault sits at its scheduled time; faults are dashed vertical
lines labelled above the axes. The EV state figure is analysis/plots_ev.py; colours, fault
markers, the time origin and the heading, analysis/plots_common.py.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

from analysis import metrics as m  # noqa: E402
from analysis import recovery, safe_write  # noqa: E402
from analysis import trimming as tr
from analysis.fidelity_words import void_by_entry
from analysis.plots_common import (TIME_AXIS, TRANSPORT_COLORS, fault_markers, footnote,
                                   heading, named_events, origin_ns, stamp)
from analysis.plots_ev import ev_state_figure
from model import faults as fault_kinds
from model.events import Event


def _total_goodput(td: m.TransportData, bin_ms: float, t0_ns: int) -> tuple[pd.Series, str]:
    """Delivered goodput (Mbit/s) summed over the receivers, per bin: endpoint logs when they
    have goodput events, else first arrivals in the captures."""
    gp = m.log_goodput_series(td.events, bin_ms, t0_ns)
    if gp.shape[1]:
        return gp.sum(axis=1), "endpoint logs"
    gp = m.goodput_series(td.packets, bin_ms, by=("host",), t0_ns=t0_ns)
    return (gp.sum(axis=1), "captures") if gp.shape[1] else (pd.Series(dtype=float), "")


def recovery_window_ms(td: m.TransportData) -> float:
    """The window analysis.recovery measures goodput over for this transport's run (one typical
    iteration, at least its default): the rolling mean uses the same one."""
    it = named_events(td.events, Event.ITERATION)
    spans = (recovery.iteration_spans_ms(zip(it["iter"], it["start_ns"], it["end_ns"]))
             if len(it) and {"iter", "start_ns", "end_ns"} <= set(it.columns) else [])
    return recovery.collective_windows(spans)["window_ms"]


def capacity_fractions(topology, faults: pd.DataFrame, demand=None) -> list[tuple[int, float]]:
    """(t_ns, fraction of the healthy goodput the surviving fabric allows) after each fault-log
    entry, by the recovery metric's own rule (analysis.recovery.surviving_capacity_fraction,
    with the collective's demand; without a topology, full capacity, as the metric assumes)."""
    if len(faults) == 0:
        return []
    if topology is None:
        return [(int(t), 1.0) for t in sorted(faults["t_ns"])]
    state, out = {}, []
    for f in faults.sort_values("t_ns", kind="stable").to_dict("records"):
        f = {k: v for k, v in f.items() if not (isinstance(v, float) and np.isnan(v))}
        state = recovery.apply_fault_to_capacity(topology, state, f)
        out.append((int(f["t_ns"]),
                    recovery.surviving_capacity_fraction(topology, state, demand)))
    return out


def physical_max_mbit(topology) -> float | None:
    """What the hosts' NIC ports can receive at most, all together (planes x host link rate per
    host): no goodput can exceed it."""
    if topology is None:
        return None
    return sum(lk.mbit for h in topology.hosts for lk in topology.links_of(h.name))


def _allowed_series(times_s: np.ndarray, origin_ns: int, steady_mbit: float,
                    fractions: list[tuple[int, float]]) -> np.ndarray:
    """The goodput the surviving paths allow at each time (s since origin): the pre-fault
    steady goodput times the capacity fraction in force then."""
    allowed = np.full(len(times_s), steady_mbit)
    for t_ns, frac in fractions:
        allowed[times_s >= (t_ns - origin_ns) / 1e9] = steady_mbit * frac
    return allowed


GOODPUT_TOP_PERCENT = 130.0     # the axis top at least; a faint raw bin above it is noted


def _demand(td: m.TransportData):
    return td.model.demand if td.model is not None else None


def _over_axis_note(name: str, raw: np.ndarray, total: pd.Series, top: float, bin_ms: float,
                    topology) -> str | None:
    """Why raw bins stand above the axis, in words: each bin counts the bytes whose delivery was
    logged in it, and the workers log in bursts, so a short bin can hold more than a bin's worth
    of line rate; the rolling mean is what the metric judges."""
    above = int(np.sum(raw > top))
    if not above:
        return None
    peak, phys = np.nanmax(total.to_numpy()), physical_max_mbit(topology)
    over = (f", above the {phys:.0f} Mbit/s all NIC ports can carry: deliveries are logged in "
            f"bursts, the mean over the window is what the fabric carried"
            if phys and peak > phys else "")
    return (f"{name}: {above} faint {bin_ms:g} ms bins above the axis (peak {peak:.0f} Mbit/s "
            f"summed over the receivers{over}).")


def goodput_figure(run: m.RunAnalysis):
    """Goodput of each transport in a row of its own, in percent of what the surviving paths
    allow (the pre-fault steady goodput times the fraction of the collective's top rate the
    surviving fabric allows, as the recovery metric defines it), t = 0 at the timed start.

    Faint steps: per-bin goodput (bursty at 10 ms). Solid line: its rolling mean over the
    recovery metric's window, drawn at the window's start, so the curve at t is what the metric
    judges at t. Dashed line: the metric's bar (90%). Shaded: the stall, from the fault to where
    the metric says the transport recovered (or to the next fault when it did not).
    """
    rows = []
    for name, td in run.transports.items():
        total, source = _total_goodput(td, run.bin_ms, run.t0_ns)
        if len(total):
            rows.append((name, td, total, source))
    fig, axes = plt.subplots(max(1, len(rows)), 1, figsize=(11, 1.2 + 2.3 * max(1, len(rows))),
                             sharex=True, squeeze=False)
    axes = axes[:, 0]
    if not rows:
        axes[0].text(0.5, 0.5, "no goodput samples in this run", ha="center", va="center")
        axes[0].set_axis_off()
        return fig
    notes, units = [], []
    for ax, (name, td, total, source) in zip(axes, rows):
        color = TRANSPORT_COLORS.get(name)
        origin = origin_ns(td, run.t0_ns + int(total.index[0] * 1e9))
        x = total.index.to_numpy(dtype=float) - (origin - run.t0_ns) / 1e9
        window_ms = recovery_window_ms(td)
        n = max(1, int(round(window_ms / run.bin_ms)))
        rolling = total.rolling(n, min_periods=n).mean().shift(-(n - 1)).to_numpy()
        rec = (m.recovery_per_fault(td.faults, td.events, td.topology, demand=_demand(td))
               if len(td.faults) else pd.DataFrame())
        fractions = capacity_fractions(td.topology, td.faults, _demand(td))
        steady = None
        if len(rec) and fractions and np.isfinite(rec["expected_mbit"].iloc[0]) \
                and fractions[0][1] > 0:
            steady = float(rec["expected_mbit"].iloc[0]) / fractions[0][1]
        if steady:
            allowed = _allowed_series(x, origin, steady, fractions)
            scale = 100.0 / np.where(allowed > 0, allowed, np.nan)
            unit = "% of allowed"
        else:                       # no fault or no steady rate: plain Mbit/s
            scale, unit = np.ones(len(x)), "Mbit/s"
        units.append(unit)
        raw = total.to_numpy() * scale
        ax.plot(x, raw, drawstyle="steps-post", lw=0.4, alpha=0.15, color=color)
        ax.plot(x, rolling * scale, lw=2, color=color,
                label=f"{window_ms:.0f} ms mean ({source})")
        if steady:
            ax.axhline(100 * recovery.DEFAULT_THRESHOLD, color="dimgrey", ls=(0, (4, 2)), lw=1)
            top = max(GOODPUT_TOP_PERCENT, 1.1 * float(np.nanmax(rolling * scale, initial=0)))
            ax.set_ylim(0, top)
            note = _over_axis_note(name, raw, total, top, run.bin_ms, td.topology)
            notes += [note] if note else []
            _stall_spans(ax, rec, origin, x[-1] if len(x) else 0.0, color, top)
        else:
            ax.set_ylim(bottom=0)
        ax.set_ylabel(f"{name}\n{unit}")
        ax.grid(alpha=0.3)
        for t_ns, _ in fractions:
            ax.axvline((t_ns - origin) / 1e9, color="black", ls="--", lw=0.8, alpha=0.6)
    first = rows[0][1]
    if len(first.faults):
        fault_markers(axes[0], first.faults, origin_ns(first, run.t0_ns), color="black")
    axes[-1].set_xlabel(TIME_AXIS)
    fig.suptitle(f"Goodput per transport, {_goodput_scale_words(units)}faint: {run.bin_ms:g} ms "
                 "bins)", fontsize=10)
    fig.tight_layout(rect=(0, footnote(fig, notes), 1, 0.97))
    return fig


def _goodput_scale_words(units: list[str]) -> str:
    """The goodput figure's title says the scale its rows are drawn in: percent of what the
    surviving paths allow, or Mbit/s for a row with no pre-fault steady rate to scale by (a run
    with no fault, such as an incast, or no goodput measured before the first fault)."""
    if "Mbit/s" not in units:
        words = "in % of what the surviving paths allow ("
    elif len(set(units)) == 1:
        return "in Mbit/s (no pre-fault steady rate to scale it by; "
    else:
        words = ("in % of what the surviving paths allow, rows with no pre-fault steady rate "
                 "in Mbit/s\n(")
    return (words + f"dashed: the recovery bar, {recovery.DEFAULT_THRESHOLD:.0%}; "
            "shaded: the stall; ")


def _stall_spans(ax, rec: pd.DataFrame, origin_ns: int, x_end: float, color,
                 top: float) -> None:
    """Shade each fault's stall (fault to recovery, by the recovery metric) and label it; a
    fault the transport never recovered from is shaded to the next fault and says so."""
    if len(rec) == 0:
        return
    rec = rec.sort_values("t_ns").reset_index(drop=True)
    starts = (rec["t_ns"].to_numpy(dtype=float) - origin_ns) / 1e9
    for i, row in rec.iterrows():
        stop = starts[i + 1] if i + 1 < len(rec) else max(x_end, starts[i])
        if np.isfinite(row.recovery_ms):
            end, label = starts[i] + row.recovery_ms / 1e3, f"recovered in {row.recovery_ms:.0f} ms"
        else:
            end, label = stop, "not recovered"
        if end > starts[i]:
            ax.axvspan(starts[i], end, color=color, alpha=0.2, lw=0)
        # labels of successive faults on alternate lines, so close faults do not overprint
        ax.annotate(label, (starts[i], top), xytext=(3, -4 - 12 * (i % 2)),
                    textcoords="offset points", fontsize=8, color="black", va="top",
                    bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})
        if np.isfinite(row.recovery_ms):
            ax.plot([end], [100 * recovery.DEFAULT_THRESHOLD], "o", ms=5, color=color,
                    markeredgecolor="black", zorder=5)


def load_figure(run: m.RunAnalysis):
    """Bytes sent per plane and per path (plane, T1), per transport, with Jain indices."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    width = 0.8 / max(1, len(run.transports))
    missing = []
    for i, (name, td) in enumerate(run.transports.items()):
        if len(td.packets) == 0:
            missing.append(name)
            continue
        lb = m.load_balance(td.packets)
        for ax, key, jkey in ((axes[0], "plane_bytes", "plane_jain"), (axes[1], "path_bytes", "path_jain")):
            items = sorted(lb[key].items())
            x = np.arange(len(items)) + i * width
            ax.bar(x, [v / 1e6 for _, v in items], width, color=TRANSPORT_COLORS.get(name),
                   label=f"{name} (Jain {lb[jkey]:.3f})")
            ax.set_xticks(np.arange(len(items)) + width * (len(run.transports) - 1) / 2)
            ax.set_xticklabels([f"plane {k}" if key == "plane_bytes" else str(k) for k, _ in items],
                               fontsize=8)
    why = ("not drawn: " + ", ".join(missing) + " (no per-path byte counts: its packets carry "
           "no MRC/RoCE header to tell the path from)")
    if missing and len(missing) == len(run.transports):    # said in words, never empty axes
        for ax in axes:
            fig.delaxes(ax)
        fig.set_size_inches(12, 1.5)
        fig.text(0.5, 0.4, why, ha="center", va="center", fontsize=10)
        return fig
    axes[0].set(title="Load per plane (data bytes sent)", ylabel="MB sent")
    axes[1].set(title="Load per path (plane p, T1 s)", ylabel="MB sent")
    for ax in axes:
        ax.grid(axis="y", alpha=0.3)
    if axes[1].get_legend_handles_labels()[0]:
        axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if missing:
        fig.text(0.01, 0.01, why, fontsize=8, color="dimgrey")
    fig.tight_layout(rect=(0, 0.05 if missing else 0, 1, 1))
    return fig


def recovery_figure(run: m.RunAnalysis):
    """Recovery time per fault, one bar group per fault, one bar per transport. A 0 ms recovery
    is a diamond on the axis with its label (a zero-height bar would be invisible); a fault the
    transport never recovered from is a hatched bar to the top, labelled so."""
    tables = {}
    for name, td in run.transports.items():
        rec = m.recovery_per_fault(td.faults, td.events, td.topology, demand=_demand(td))
        if len(rec):
            tables[name] = rec
    fig, ax = plt.subplots(figsize=(10, 4))
    if not tables:                                          # said in words, never empty axes
        fig.delaxes(ax)
        fig.set_size_inches(10, 1.5)
        fig.text(0.5, 0.4, "no fault with goodput samples to measure recovery", ha="center",
                 va="center")
        return fig
    labels = None
    width = 0.8 / len(tables)
    finite = [v for rec in tables.values() for v in rec["recovery_ms"] if np.isfinite(v)]
    top = max(finite + [100.0]) * 1.25
    for i, (name, rec) in enumerate(tables.items()):
        labels = [f"{r.action}\n{r.a}~{r.b}" for r in rec.itertuples()]
        vals = rec["recovery_ms"].to_numpy(dtype=float)
        x = np.arange(len(vals)) + i * width
        color = TRANSPORT_COLORS.get(name)
        ax.bar(x, np.where(np.isnan(vals), 0, vals), width, color=color, label=name)
        for xi, v, void in zip(x, vals, void_rows(run.transports[name], rec)):
            if void:        # a stall inside its recovery window: the bar is the machine's
                ax.bar([xi], [top if np.isnan(v) else v], width, color="white",
                       edgecolor=color, hatch="xx")
                ax.text(xi, top * 0.5, "void (CPU stall)", ha="center", va="center",
                        fontsize=7, rotation=90)
            elif np.isnan(v):
                ax.bar([xi], [top], width, color="none", edgecolor=color, hatch="//")
                ax.text(xi, top * 0.5, "not recovered", ha="center", va="center", fontsize=7,
                        rotation=90)
            else:
                if v == 0:
                    ax.plot([xi], [0], marker="D", ms=7, color=color, markeredgecolor="black",
                            clip_on=False, zorder=5)
                ax.text(xi, v + top * 0.02, f"{v:.0f} ms", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(np.arange(len(labels)) + width * (len(tables) - 1) / 2)
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylim(0, top)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="y", alpha=0.3)
    ax.set(title=f"Recovery time per fault (goodput back to {recovery.DEFAULT_THRESHOLD:.0%} of "
                 "what the surviving paths allow; diamond: 0 ms)",
           ylabel="recovery time (ms)")
    fig.tight_layout()
    return fig


def void_rows(td, rec: pd.DataFrame) -> list:
    """Per row of a recovery table (m.recovery_per_fault): why a stall voided it, else None;
    matched to the run model's faults by time, else by order."""
    voids = void_by_entry(td.model, td.summary) if td.model is not None else {}
    at = {f.t_ns: voids[f.entry] for f in (td.model.faults if td.model else [])
          if f.entry in voids}
    ordered = list((td.summary or {}).get("recovery_void") or [])
    out = []
    for i, t in enumerate(rec["t_ns"] if "t_ns" in rec else [None] * len(rec)):
        why = at.get(int(t)) if t is not None and t == t else None
        if why is None and not at and len(ordered) == len(rec):
            why = ordered[i]
        out.append(why)
    return out


def iteration_figure(run: m.RunAnalysis):
    """Distribution of collective iteration times per transport (box + points)."""
    fig, ax = plt.subplots(figsize=(8, 4))
    data, names = [], []
    for name, td in run.transports.items():
        it = m.iteration_times(td.events, td.model.groups if td.model else None)
        if len(it):
            data.append(it["duration_s"].to_numpy() * 1e3)
            names.append(name)
    if not data:
        ax.text(0.5, 0.5, "no iteration events", ha="center")
        ax.set_axis_off()
    else:
        ax.boxplot(data, tick_labels=names, showfliers=False)
        for i, (d, n) in enumerate(zip(data, names), start=1):
            jitter = np.random.default_rng(0).uniform(-0.12, 0.12, len(d))
            ax.scatter(np.full(len(d), i) + jitter, d, s=10, alpha=0.6,
                       color=TRANSPORT_COLORS.get(n), label=f"{n}: median {np.median(d):.1f} ms")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.grid(axis="y", alpha=0.3)
    ax.set(title="Collective iteration time per transport", ylabel="iteration time (ms)")
    fig.tight_layout()
    return fig


RESTORED_COLOR = "black"        # the plane colours are tab10's: orange is plane 1's


def topology_figure(topology, faults: pd.DataFrame | None = None, origin: int | None = None):
    """The fabric: hosts at the bottom, T0s, T1s on top, one colour per plane. Every faulted
    link is thick and labelled with its fault times (s since `origin`, the timed start; the
    first fault without one): red when the fault log leaves it down (or lossy/black-holed),
    black when it was restored. Switch and host names sit on a white box above the links."""
    fig, ax = plt.subplots(figsize=(10, 5))
    if topology is None:
        ax.text(0.5, 0.5, "fabric spec not found in the run directory", ha="center")
        ax.set_axis_off()
        return fig
    spec = topology.spec
    pos = {}
    nh = len(topology.hosts)
    for h in topology.hosts:
        pos[h.name] = ((h.index + 0.5) / nh, 0.0)
    t0s = [s for s in topology.switches.values() if s.tier == 0]
    t1s = [s for s in topology.switches.values() if s.tier == 1]
    for lst, y in ((t0s, 0.45), (t1s, 0.9)):
        lst.sort(key=lambda s: (s.plane, s.index))
        for i, s in enumerate(lst):
            pos[s.name] = ((i + 0.5) / len(lst), y)
    state: dict = {}
    touched: dict = {}          # link -> ["down 3.0 s", "up 8.5 s", ...] since the origin
    if faults is not None and len(faults):
        first_ns = int(faults["t_ns"].min()) if origin is None else origin
        for f in faults.sort_values("t_ns").to_dict("records"):
            f = {k: v for k, v in f.items() if not (isinstance(v, float) and np.isnan(v))}
            state = recovery.apply_fault_to_capacity(topology, state, f)
            if f.get("a") and f.get("b"):
                kind = fault_kinds.BY_ACTION.get(f["action"])
                what = kind.display() if kind is not None else f["action"]
                touched.setdefault(frozenset((f["a"], f["b"])), []).append(
                    f"{what} {(f['t_ns'] - first_ns) / 1e9:.1f} s")
    failed = {frozenset(k) for k, v in state.items() if v < 1.0}
    plane_colors = plt.get_cmap("tab10")
    for link in topology.links:
        (x1, y1), (x2, y2) = pos[link.a], pos[link.b]
        key = frozenset(link.ends())
        if key in touched:
            color = "red" if key in failed else RESTORED_COLOR
            ax.plot([x1, x2], [y1, y2], color=color, lw=4, zorder=3)
            ax.annotate(f"{link.a}~{link.b}\n" + ", ".join(touched[key]),
                        (x1 + 0.4 * (x2 - x1), y1 + 0.4 * (y2 - y1)), xytext=(10, 0),
                        textcoords="offset points",
                        fontsize=8, color=color, weight="bold", va="center", zorder=6,
                        bbox={"boxstyle": "round", "fc": "white", "ec": color, "alpha": 0.9})
        else:
            ax.plot([x1, x2], [y1, y2], color=plane_colors(link.plane), lw=1, alpha=0.6)
    for name, (x, y) in pos.items():
        ax.scatter([x], [y], s=300 if y else 200, marker="s" if y else "o", color="white",
                   edgecolor="black", zorder=5)
        ax.text(x, y - 0.06 if y == 0 else y + 0.05, name, ha="center", fontsize=7, zorder=7,
                bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none"})
    handles = [Patch(color=plane_colors(p), label=f"plane {p}") for p in range(spec.planes)]
    if failed:
        handles.append(Patch(color="red", label="faulted, still failed at the end"))
    if set(touched) - failed:
        handles.append(Patch(color=RESTORED_COLOR, label="faulted, then restored"))
    if touched:
        handles.append(Patch(color="white", label="times: s since the timed start"
                             if origin is not None else "times: s since the first fault"))
    ax.legend(handles=handles, loc="upper left", fontsize=7, bbox_to_anchor=(1.0, 1.0))
    ax.set(title=f"Fabric: {spec.planes} planes x {spec.groups} groups x {spec.spines} spines, "
                 f"{spec.num_hosts} hosts", xlim=(-0.05, 1.05), ylim=(-0.12, 1.0))
    ax.set_axis_off()
    fig.tight_layout()
    return fig


def victim_goodput_figure(run: m.RunAnalysis):
    """Incast: goodput of the victim flow (worker log at its destination) per transport, with
    the trimming option of each transport's run in the legend. None when there is no victim."""
    series = {}
    for name, td in run.transports.items():
        v = tr.victim_goodput(td.directory, bin_ms=100.0, t0_ns=run.t0_ns)
        if v is not None and len(v["series"]):
            series[name] = v
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(10, 4))
    for name, v in series.items():
        t = (run.transports[name].summary or {}).get("trimming") or {}
        opt = "trim+mark" if t.get("trim") else ("mark" if t.get("mark") else "no trimming")
        mean = "-" if v["mean_mbit"] is None else f"{v['mean_mbit']:.1f}"
        shift = (origin_ns(run.transports[name], run.t0_ns) - run.t0_ns) / 1e9
        ax.plot(v["series"].index - shift, v["series"].values, drawstyle="steps-post", lw=1.4,
                color=TRANSPORT_COLORS.get(name),
                label=f"{name} ({opt}): mean {mean} Mbit/s")
    first = next(iter(series.values()))
    ax.set(title=f"Incast victim flow {first['src']} -> {first['dst']}: goodput (100 ms bins)",
           xlabel=TIME_AXIS, ylabel="goodput (Mbit/s)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    return fig


def _count_labels(ax, bars, values) -> None:
    """Each non-zero bar's count above it: on a log axis a bar of 9 beside one of 14,000 is
    short, its number says what it is."""
    ax.bar_label(bars, labels=[f"{int(v):,}" if v else "" for v in np.asarray(values)],
                 fontsize=6, padding=1)


def _log_counts(ax) -> None:
    """A log count axis from below 1, so a bar of 1 stands visibly, with plain tick numbers."""
    ax.set_yscale("log")
    ax.set_ylim(bottom=0.5)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else ""))
    ax.yaxis.set_minor_formatter(NullFormatter())


def trim_figure(run: m.RunAnalysis):
    """Per switch port: marked and trimmed packets (left), and per transport: trims, NACKs,
    retransmissions by cause and ASSUMED_BAD transitions (right), on log axes with each bar's
    count (marks outnumber trims by orders of magnitude). None without counters."""
    ports = {n: tr.port_table(tr.load_trim_counters(td.directory))
             for n, td in run.transports.items()}
    ports = {n: p for n, p in ports.items() if len(p)}
    if not ports:
        return None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    names = sorted(set().union(*(set(p["port"]) for p in ports.values())))
    busy = [p for p in names if any(int(df.loc[df["port"] == p, ["marked", "trimmed"]].sum().sum())
                                    for df in ports.values())] or names[:8]
    # Only series with a non-zero value get a bar and a legend entry: some are zero by design
    # (a transport run without trimming never trims); the note under the axes names them.
    series, zero = [], []
    for name, df in ports.items():
        d = df.set_index("port").reindex(busy).fillna(0)
        for col, style in (("marked", {"alpha": 0.5}), ("trimmed", {"hatch": "//"})):
            (series if d[col].sum() > 0 else zero).append((name, col, d[col], style))
    x = np.arange(len(busy))
    width = 0.8 / max(1, len(series))
    for i, (name, col, values, style) in enumerate(series):
        bars = ax1.bar(x + i * width, values, width, color=TRANSPORT_COLORS.get(name),
                       label=f"{name} {col}", **style)
        _count_labels(ax1, bars, values)
    ax1.set_xticks(x + width * (len(series) - 1) / 2, busy, rotation=60, ha="right", fontsize=7)
    ax1.set_ylabel("packets (log scale)")
    _log_counts(ax1)
    ax1.set_title("Switch egress ports with marks or trims", pad=22)
    if series:                      # above the axes: never over a bar
        ax1.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=4,
                   frameon=False)
    rows = []
    for name, td in run.transports.items():
        s = td.summary or {}
        rc = s.get("retransmits_by_reason") or {}
        rows.append((name, [s.get("trimmed") or 0, s.get("nacks_sent") or 0,
                            rc.get("nack_trimmed", 0), rc.get("timeout", 0),
                            s.get("ev_assumed_bad") or 0]))
    labels = ["trimmed", "NACKs sent", "retx nack_trimmed", "retx timeout", "ASSUMED_BAD (fwd)"]
    drawn = [(n, v) for n, v in rows if any(v)]
    zero += [(n, "counters", None, None) for n, v in rows if not any(v)]
    x2 = np.arange(len(labels))
    w2 = 0.8 / max(1, len(drawn))
    for i, (name, values) in enumerate(drawn):
        bars = ax2.bar(x2 + i * w2, values, w2, color=TRANSPORT_COLORS.get(name), label=name)
        _count_labels(ax2, bars, values)
    ax2.set_xticks(x2 + w2 * (len(drawn) - 1) / 2, labels, rotation=30, ha="right", fontsize=8)
    ax2.set_ylabel("count (log scale)")
    _log_counts(ax2)
    ax2.set_title("Per transport", pad=22)
    if drawn:
        ax2.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=3,
                   frameon=False)
    if zero:
        fig.text(0.01, 0.01, "zero throughout (not drawn): " +
                 ", ".join(f"{n} {c}" for n, c, _, _ in zero), fontsize=7, color="dimgrey")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def figures(run: m.RunAnalysis) -> dict:
    """name -> Figure for every figure of a run."""
    out = {"goodput": goodput_figure(run)}
    for name, td in run.transports.items():
        fig = ev_state_figure(td, run.t0_ns, run.bin_ms)
        if fig is not None:                   # the single-path baselines log no EV state
            out[f"ev_state_{name}"] = fig
    out["load"] = load_figure(run)
    out["recovery"] = recovery_figure(run)
    out["iterations"] = iteration_figure(run)
    first = next(iter(run.transports.values()), None)
    out["topology"] = topology_figure(first.topology if first else None,
                                      first.faults if first else None,
                                      origin_ns(first, run.t0_ns) if first else None)
    for name, make in (("trimming", trim_figure), ("victim_goodput", victim_goodput_figure)):
        fig = make(run)
        if fig is not None:
            out[name] = fig
    title = heading(run)
    for fig in out.values():
        stamp(fig, title)
    return out


def save_all(run: m.RunAnalysis, out_dir) -> dict:
    """Write every figure as <out_dir>/<name>.png; returns {name: Path}."""
    out_dir = safe_write.ensure_dir(Path(out_dir))
    paths = {}
    for name, fig in figures(run).items():
        p = out_dir / f"{name}.png"
        safe_write.save_figure(fig, p, dpi=110)
        plt.close(fig)
        paths[name] = p
    return paths
