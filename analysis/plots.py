"""Figures of a run (matplotlib, Agg backend: no display needed, safe in tests and over ssh).

Every function takes analysed data (analysis.metrics.RunAnalysis or DataFrames), draws one
figure with a title, axis units and a legend, and returns the matplotlib Figure; `save_all`
writes every figure of a run as PNG and returns {name: path}. Time axes are seconds since the
run's first event; faults are dashed vertical lines labelled with their action.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import BoundaryNorm, ListedColormap  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from analysis import metrics as m  # noqa: E402

TRANSPORT_COLORS = {"mrc": "tab:green", "roce": "tab:orange", "tcp": "tab:blue"}
STATE_COLORS = ["#4caf50", "#ff9800", "#d32f2f", "#bdbdbd", "#fdd835"]  # metrics.EV_STATES order


def _fault_markers(ax, faults: pd.DataFrame, t0_ns: int) -> None:
    if faults is None or len(faults) == 0:
        return
    seen = set()
    for f in faults.drop_duplicates(subset=["t_ns", "action"]).itertuples(index=False):
        x = (f.t_ns - t0_ns) / 1e9
        ax.axvline(x, color="red", ls="--", lw=1, alpha=0.7)
        label = f"{f.action} {getattr(f, 'a', '') or ''}~{getattr(f, 'b', '') or ''}".strip("~ ")
        if (x, label) not in seen:
            ax.text(x, 1.0, " " + label, rotation=90, va="top", ha="left", fontsize=7,
                    color="red", transform=ax.get_xaxis_transform())
            seen.add((x, label))


def goodput_figure(run: m.RunAnalysis):
    """Total delivered goodput per transport, overlaid, with fault markers."""
    fig, ax = plt.subplots(figsize=(10, 4.5))
    for name, td in run.transports.items():
        gp = m.log_goodput_series(td.events, run.bin_ms, run.t0_ns)
        source = "endpoint logs"
        if gp.shape[1] == 0:
            gp = m.goodput_series(td.packets, run.bin_ms, by=("host",), t0_ns=run.t0_ns)
            source = "captures"
        if gp.shape[1] == 0:
            continue
        ax.plot(gp.index, gp.sum(axis=1), label=f"{name} ({source})",
                color=TRANSPORT_COLORS.get(name), lw=1.4, drawstyle="steps-post")
    _fault_markers(ax, run.all_faults(), run.t0_ns)
    ax.set(title=f"Goodput vs time (all receivers, {run.bin_ms:g} ms bins)",
           xlabel="time since run start (s)", ylabel="goodput (Mbit/s)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


def ev_state_figure(td: m.TransportData, t0_ns: int, bin_ms: float = 10.0, max_rows: int = 64):
    """Heatmap: one row per (host, QP, EV), colour = EV state over time."""
    mat = m.ev_state_matrix(td.events, bin_ms, t0_ns)
    fig, ax = plt.subplots(figsize=(10, 1.5 + 0.18 * min(max(len(mat), 1), max_rows)))
    if len(mat) == 0:
        ax.text(0.5, 0.5, f"no ev_state events in the {td.name} logs", ha="center", va="center")
        ax.set_axis_off()
    else:
        # rows that ever leave GOOD first, so the interesting EVs are visible when truncated
        bad_first = mat.apply(lambda r: -(r.fillna(0) > 0).sum(), axis=1).sort_values(kind="stable")
        mat = mat.loc[bad_first.index[:max_rows]]
        cmap = ListedColormap(STATE_COLORS).with_extremes(bad="white")
        t = mat.columns.to_numpy(dtype=float)
        step = t[1] - t[0] if len(t) > 1 else bin_ms / 1e3
        ax.pcolormesh(np.append(t, t[-1] + step), np.arange(len(mat) + 1),
                      np.ma.masked_invalid(mat.to_numpy(dtype=float)), cmap=cmap,
                      norm=BoundaryNorm(np.arange(len(STATE_COLORS) + 1) - 0.5, len(STATE_COLORS)),
                      shading="flat")
        ax.set_yticks(np.arange(len(mat)) + 0.5)
        ax.set_yticklabels(mat.index, fontsize=6)
        ax.invert_yaxis()
        ax.legend(handles=[Patch(color=c, label=s) for c, s in zip(STATE_COLORS, m.EV_STATES)],
                  loc="upper right", fontsize=7, ncol=5)
        _fault_markers(ax, td.faults, t0_ns)
    ax.set(title=f"EV state timeline ({td.name}): host/QP/EV x time", xlabel="time since run start (s)")
    fig.tight_layout()
    return fig


def load_figure(run: m.RunAnalysis):
    """Bytes sent per plane and per path (plane, T1), per transport, with Jain indices."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / max(1, len(run.transports))
    for i, (name, td) in enumerate(run.transports.items()):
        if len(td.packets) == 0:
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
    axes[0].set(title="Load per plane (data bytes sent)", ylabel="MB sent")
    axes[1].set(title="Load per path (plane p, T1 s)", ylabel="MB sent")
    for ax in axes:
        ax.grid(axis="y", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def recovery_figure(run: m.RunAnalysis):
    """Recovery time per fault, one bar group per fault, one bar per transport."""
    tables = {}
    for name, td in run.transports.items():
        rec = m.recovery_per_fault(td.faults, td.events, td.topology)
        if len(rec):
            tables[name] = rec
    fig, ax = plt.subplots(figsize=(9, 4))
    if not tables:
        ax.text(0.5, 0.5, "no fault with goodput samples to measure recovery", ha="center")
        ax.set_axis_off()
    else:
        labels = None
        width = 0.8 / len(tables)
        for i, (name, rec) in enumerate(tables.items()):
            labels = [f"{r.action}\n{r.a}~{r.b}" for r in rec.itertuples()]
            vals = rec["recovery_ms"].to_numpy(dtype=float)
            x = np.arange(len(vals)) + i * width
            ax.bar(x, np.nan_to_num(vals), width, color=TRANSPORT_COLORS.get(name), label=name)
            for xi, v in zip(x, vals):
                ax.text(xi, 0 if np.isnan(v) else v, "not recovered" if np.isnan(v) else f"{v:.0f}",
                        ha="center", va="bottom", fontsize=7, rotation=90 if np.isnan(v) else 0)
        ax.set_xticks(np.arange(len(labels)) + width * (len(tables) - 1) / 2)
        ax.set_xticklabels(labels, fontsize=7)
        ax.legend()
        ax.grid(axis="y", alpha=0.3)
    ax.set(title="Recovery time per fault (goodput back to 90% of surviving capacity)",
           ylabel="recovery time (ms)")
    fig.tight_layout()
    return fig


def iteration_figure(run: m.RunAnalysis):
    """Distribution of collective iteration times per transport (box + points)."""
    fig, ax = plt.subplots(figsize=(8, 4))
    data, names = [], []
    for name, td in run.transports.items():
        it = m.iteration_times(td.events)
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
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    ax.set(title="Collective iteration time per transport", ylabel="iteration time (ms)")
    fig.tight_layout()
    return fig


def topology_figure(topology, faults: pd.DataFrame | None = None):
    """The fabric: hosts at the bottom, T0s, T1s on top, one colour per plane; links that a
    fault left down (or lossy/black-holed) at the end of the fault log in red."""
    from analysis import recovery
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
    touched = set()
    if faults is not None and len(faults):
        for f in faults.sort_values("t_ns").to_dict("records"):
            f = {k: v for k, v in f.items() if not (isinstance(v, float) and np.isnan(v))}
            state = recovery.apply_fault_to_capacity(topology, state, f)
            if f.get("a") and f.get("b"):
                touched.add(frozenset((f["a"], f["b"])))
    failed = {frozenset(k) for k, v in state.items() if v < 1.0}
    plane_colors = plt.get_cmap("tab10")
    for link in topology.links:
        (x1, y1), (x2, y2) = pos[link.a], pos[link.b]
        key = frozenset(link.ends())
        if key in failed:
            ax.plot([x1, x2], [y1, y2], color="red", lw=2.5, zorder=3)
            ax.text((x1 + x2) / 2, (y1 + y2) / 2, "X", color="red", fontsize=12, ha="center",
                    va="center", weight="bold", zorder=4)
        else:
            ax.plot([x1, x2], [y1, y2], color=plane_colors(link.plane), lw=1,
                    alpha=0.6, ls=":" if key in touched else "-")
    for name, (x, y) in pos.items():
        ax.scatter([x], [y], s=300 if y else 200, marker="s" if y else "o", color="white",
                   edgecolor="black", zorder=5)
        ax.text(x, y - 0.06 if y == 0 else y + 0.05, name, ha="center", fontsize=7)
    handles = [Patch(color=plane_colors(p), label=f"plane {p}") for p in range(spec.planes)]
    handles.append(Patch(color="red", label="failed at end of fault log"))
    if touched - failed:
        handles.append(Patch(color="grey", label="faulted, restored (dotted)"))
    ax.legend(handles=handles, loc="upper left", fontsize=7, bbox_to_anchor=(1.0, 1.0))
    ax.set(title=f"Fabric: {spec.planes} planes x {spec.groups} groups x {spec.spines} spines, "
                 f"{spec.num_hosts} hosts", xlim=(-0.05, 1.05), ylim=(-0.12, 1.0))
    ax.set_axis_off()
    fig.tight_layout()
    return fig


def victim_goodput_figure(run: m.RunAnalysis):
    """Incast: goodput of the victim flow (worker log at its destination) per transport, with
    the trimming option of each transport's run in the legend. None when there is no victim."""
    from analysis import trimming as tr
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
        ax.plot(v["series"].index, v["series"].values, drawstyle="steps-post", lw=1.4,
                color=TRANSPORT_COLORS.get(name),
                label=f"{name} ({opt}): mean {mean} Mbit/s")
    first = next(iter(series.values()))
    ax.set(title=f"Incast victim flow {first['src']} -> {first['dst']}: goodput (100 ms bins)",
           xlabel="time since run start (s)", ylabel="goodput (Mbit/s)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


def trim_figure(run: m.RunAnalysis):
    """Per switch port: marked and trimmed packets (left), and per transport: trims, NACKs,
    retransmissions by cause and ASSUMED_BAD transitions (right). None without counters."""
    from analysis import trimming as tr
    ports = {n: tr.port_table(tr.load_trim_counters(td.directory))
             for n, td in run.transports.items()}
    ports = {n: p for n, p in ports.items() if len(p)}
    if not ports:
        return None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    names = sorted(set().union(*(set(p["port"]) for p in ports.values())))
    busy = [p for p in names if any(int(df.loc[df["port"] == p, ["marked", "trimmed"]].sum().sum())
                                    for df in ports.values())] or names[:8]
    x = np.arange(len(busy))
    width = 0.8 / (2 * len(ports))
    for i, (name, df) in enumerate(ports.items()):
        d = df.set_index("port").reindex(busy).fillna(0)
        color = TRANSPORT_COLORS.get(name)
        ax1.bar(x + (2 * i) * width, d["marked"], width, color=color, alpha=0.5,
                label=f"{name} marked")
        ax1.bar(x + (2 * i + 1) * width, d["trimmed"], width, color=color, hatch="//",
                label=f"{name} trimmed")
    ax1.set_xticks(x + 0.4 - width / 2, busy, rotation=60, ha="right", fontsize=7)
    ax1.set(title="Switch egress ports with marks or trims", ylabel="packets")
    ax1.legend(fontsize=7)
    rows = []
    for name, td in run.transports.items():
        s = td.summary or {}
        rc = s.get("retransmits_by_reason") or {}
        rows.append((name, s.get("trimmed") or 0, s.get("nacks_sent") or 0,
                     rc.get("nack_trimmed", 0), rc.get("timeout", 0), s.get("ev_assumed_bad") or 0))
    labels = ["trimmed", "NACKs sent", "retx nack_trimmed", "retx timeout", "ASSUMED_BAD (fwd)"]
    x2 = np.arange(len(labels))
    w2 = 0.8 / max(1, len(rows))
    for i, row in enumerate(rows):
        ax2.bar(x2 + i * w2, row[1:], w2, color=TRANSPORT_COLORS.get(row[0]), label=row[0])
    ax2.set_xticks(x2 + 0.4 - w2 / 2, labels, rotation=30, ha="right", fontsize=8)
    ax2.set(title="Per transport", ylabel="count")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return fig


def figures(run: m.RunAnalysis) -> dict:
    """name -> Figure for every figure of a run."""
    out = {"goodput": goodput_figure(run)}
    for name, td in run.transports.items():
        out[f"ev_state_{name}"] = ev_state_figure(td, run.t0_ns, run.bin_ms)
    out["load"] = load_figure(run)
    out["recovery"] = recovery_figure(run)
    out["iterations"] = iteration_figure(run)
    first = next(iter(run.transports.values()), None)
    out["topology"] = topology_figure(first.topology if first else None,
                                      first.faults if first else None)
    for name, make in (("trimming", trim_figure), ("victim_goodput", victim_goodput_figure)):
        fig = make(run)
        if fig is not None:
            out[name] = fig
    return out


def save_all(run: m.RunAnalysis, out_dir) -> dict:
    """Write every figure as <out_dir>/<name>.png; returns {name: Path}."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, fig in figures(run).items():
        p = out_dir / f"{name}.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths[name] = p
    return paths
