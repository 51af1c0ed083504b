"""Figures of a run (matplotlib, Agg backend: no display needed, safe in tests and over ssh).

Every function takes analysed data (analysis.metrics.RunAnalysis or DataFrames), draws one
figure with a title, axis units and a legend, and returns the matplotlib Figure; `save_all`
writes every figure of a run as PNG and returns {name: path}. Time axes are seconds since the
transport's first fault (each transport runs on its own fabric, at its own time, so that is the
one reference they share); faults are dashed vertical lines labelled above the axes.
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
from analysis import recovery, safe_write  # noqa: E402
from analysis import trimming as tr
from model import faults as fault_kinds
from model.events import Event
from model.topology import ev_plane, ev_spine, t0_name, t1_name

TRANSPORT_COLORS = {"mrc": "tab:green", "roce": "tab:orange", "tcp": "tab:blue"}
STATE_COLORS = ["#4caf50", "#ff9800", "#d32f2f", "#bdbdbd", "#fdd835"]  # metrics.EV_STATES order


def _fault_label(f) -> str:
    a, b = getattr(f, "a", None), getattr(f, "b", None)
    ends = "~".join(str(x) for x in (a, b) if isinstance(x, str) and x)
    return f"{f.action} {ends}".strip()


def _fault_markers(ax, faults: pd.DataFrame, t0_ns: int, *, color: str = "red") -> None:
    """Dashed lines at the faults; labels above the axes (never over the data, never clipped),
    staggered when two faults are close."""
    if faults is None or len(faults) == 0:
        return
    marks = {}
    for f in faults.drop_duplicates(subset=["t_ns", "action"]).sort_values("t_ns").itertuples(index=False):
        marks.setdefault(((f.t_ns - t0_ns) / 1e9, _fault_label(f)), None)
    lo, hi = ax.get_xlim()
    span = max(hi - lo, 1e-9)
    prev_x, level = None, 0
    for x, label in marks:
        ax.axvline(x, color=color, ls="--", lw=1, alpha=0.7)
        level = 1 - level if prev_x is not None and (x - prev_x) < 0.25 * span else 0
        ax.annotate(label, (x, 1.0), xycoords=ax.get_xaxis_transform(), xytext=(2, 3 + 11 * level),
                    textcoords="offset points", va="bottom", ha="left", fontsize=7, color=color,
                    annotation_clip=False)
        prev_x = x


def _total_goodput(td: m.TransportData, bin_ms: float, t0_ns: int) -> tuple[pd.Series, str]:
    """Delivered goodput (Mbit/s) summed over the receivers, per bin: endpoint logs when they
    have goodput events, else first arrivals in the captures."""
    gp = m.log_goodput_series(td.events, bin_ms, t0_ns)
    if gp.shape[1]:
        return gp.sum(axis=1), "endpoint logs"
    gp = m.goodput_series(td.packets, bin_ms, by=("host",), t0_ns=t0_ns)
    return (gp.sum(axis=1), "captures") if gp.shape[1] else (pd.Series(dtype=float), "")


def _named_events(events: pd.DataFrame, name: str) -> pd.DataFrame:
    if len(events) == 0 or "event" not in events:
        return pd.DataFrame()
    return events[events["event"] == name].dropna(axis=1, how="all")


def recovery_window_ms(td: m.TransportData) -> float:
    """The window analysis.recovery measures goodput over for this transport's run (one typical
    iteration, at least its default): the rolling mean uses the same one."""
    it = _named_events(td.events, Event.ITERATION)
    spans = (recovery.iteration_spans_ms(zip(it["iter"], it["start_ns"], it["end_ns"]))
             if len(it) and {"iter", "start_ns", "end_ns"} <= set(it.columns) else [])
    return recovery.collective_windows(spans)["window_ms"]


def _first_fault_ns(td: m.TransportData) -> int | None:
    """The transport's first fault: t = 0 of every time axis of its figures."""
    return int(td.faults["t_ns"].min()) if len(td.faults) else None


def capacity_fractions(topology, faults: pd.DataFrame) -> list[tuple[int, float]]:
    """(t_ns, fraction of the healthy capacity left) after each fault-log entry, by the
    recovery metric's own rule (analysis.recovery.surviving_capacity_fraction; without a
    topology, full capacity, as the metric assumes then)."""
    if len(faults) == 0:
        return []
    if topology is None:
        return [(int(t), 1.0) for t in sorted(faults["t_ns"])]
    state, out = {}, []
    for f in faults.sort_values("t_ns", kind="stable").to_dict("records"):
        f = {k: v for k, v in f.items() if not (isinstance(v, float) and np.isnan(v))}
        state = recovery.apply_fault_to_capacity(topology, state, f)
        out.append((int(f["t_ns"]), recovery.surviving_capacity_fraction(topology, state)))
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


GOODPUT_TOP_PERCENT = 160.0     # the axis top at least; a faint raw bin above it is noted


def goodput_figure(run: m.RunAnalysis):
    """Goodput of each transport in a row of its own, in percent of what the surviving paths
    allow (the pre-fault steady goodput times the capacity fraction left, as the recovery metric
    defines it), t = 0 at the transport's first fault.

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
    notes = []
    for ax, (name, td, total, source) in zip(axes, rows):
        color = TRANSPORT_COLORS.get(name)
        origin_ns = _first_fault_ns(td)
        if origin_ns is None:
            origin_ns = run.t0_ns + int(total.index[0] * 1e9)
        x = total.index.to_numpy(dtype=float) - (origin_ns - run.t0_ns) / 1e9
        window_ms = recovery_window_ms(td)
        n = max(1, int(round(window_ms / run.bin_ms)))
        rolling = total.rolling(n, min_periods=n).mean().shift(-(n - 1)).to_numpy()
        rec = (m.recovery_per_fault(td.faults, td.events, td.topology) if len(td.faults)
               else pd.DataFrame())
        fractions = capacity_fractions(td.topology, td.faults)
        steady = None
        if len(rec) and fractions and np.isfinite(rec["expected_mbit"].iloc[0]) \
                and fractions[0][1] > 0:
            steady = float(rec["expected_mbit"].iloc[0]) / fractions[0][1]
        if steady:
            allowed = _allowed_series(x, origin_ns, steady, fractions)
            scale = 100.0 / np.where(allowed > 0, allowed, np.nan)
            unit = "% of allowed"
        else:                       # no fault or no steady rate: plain Mbit/s
            scale, unit = np.ones(len(x)), "Mbit/s"
        raw = total.to_numpy() * scale
        ax.plot(x, raw, drawstyle="steps-post", lw=0.4, alpha=0.15, color=color)
        ax.plot(x, rolling * scale, lw=2, color=color,
                label=f"{window_ms:.0f} ms mean ({source})")
        if steady:
            ax.axhline(100 * recovery.DEFAULT_THRESHOLD, color="dimgrey", ls=(0, (4, 2)), lw=1)
            top = max(GOODPUT_TOP_PERCENT, 1.1 * float(np.nanmax(rolling * scale, initial=0)))
            ax.set_ylim(0, top)
            above = int(np.sum(raw > top))
            phys = physical_max_mbit(td.topology)
            if above:
                peak = np.nanmax(total.to_numpy())
                note = (f"{name}: {above} raw {run.bin_ms:g} ms bins above the axis (peak "
                        f"{peak:.0f} Mbit/s")
                note += (f", over the NICs' {phys:.0f} Mbit/s: samples land in bursts)"
                         if phys and peak > phys else ")")
                notes.append(note)
            _stall_spans(ax, rec, origin_ns, x[-1] if len(x) else 0.0, color, top)
        else:
            ax.set_ylim(bottom=0)
        ax.set_ylabel(f"{name}\n{unit}")
        ax.grid(alpha=0.3)
        for t_ns, _ in fractions:
            ax.axvline((t_ns - origin_ns) / 1e9, color="black", ls="--", lw=0.8, alpha=0.6)
    first = rows[0][1]
    if len(first.faults):
        _fault_markers(axes[0], first.faults, _first_fault_ns(first), color="black")
    axes[-1].set_xlabel("time since the transport's first fault (s)")
    fig.suptitle(f"Goodput per transport, in % of what the surviving paths allow (dashed: the "
                 f"recovery bar, {recovery.DEFAULT_THRESHOLD:.0%}; shaded: the stall; faint: "
                 f"{run.bin_ms:g} ms bins)", fontsize=10)
    if notes:
        fig.text(0.01, 0.005, "; ".join(notes), fontsize=7, color="dimgrey")
    fig.tight_layout(rect=(0, 0.03 if notes else 0, 1, 0.97))
    return fig


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


_SEVERITY = {"GOOD": 0, "UNKNOWN": 1, "SUSPECT": 2, "ASSUMED_BAD": 3, "DENIED": 4}
_HEALTH_STATES = tuple(s for s in m.EV_STATES if s != "DENIED")


def _qp_peers(events: pd.DataFrame) -> dict[tuple[str, int], str]:
    """(host, qp) -> peer host name, from the endpoints' `qp` events."""
    qp = _named_events(events, Event.QP)
    if len(qp) == 0 or not {"host", "qp", "peer"} <= set(qp.columns):
        return {}
    return {(str(r.host), int(r.qp)): str(r.peer) for r in qp.itertuples(index=False)}


def ev_path_matrix(events: pd.DataFrame, bin_ms: float, t0_ns: int,
                   topology=None) -> tuple[pd.DataFrame, dict]:
    """EV states grouped by path: one row per (host, direction, plane, T1), a bin holding the
    worst health state any of that host's live EVs on the path held in it (GOOD < UNKNOWN <
    SUSPECT < ASSUMED_BAD). An EV stops counting once a replacement EV takes its place (its
    last state is history, not the path's state).
    DENIED is the control plane's verdict on the EVs a rule names, not the health of the path:
    a link rule denies one host's EVs to the peers behind that link and leaves its other peers'
    EVs on the same plane and T1 in use. So the EVs that were ever denied get a row of their own
    per peer under their path, DENIED from each EV's deny to its allow and empty otherwise, and
    DENIED never paints the path's row. With a QP's peer known (`qp` events) and a topology, an
    EV to a peer under the same T0 crosses no T1: its row is "within" that T0. With a topology,
    paths that logged no transition get an empty row too, so an untouched plane shows.
    Returns (matrix of EV_STATES indices, NaN = nothing logged; {row label: EVs on the path})."""
    health = m.ev_state_matrix(events, bin_ms, t0_ns, states=_HEALTH_STATES)
    if len(health) == 0:
        return health, {}
    denied = m.ev_state_matrix(events, bin_ms, t0_ns, states=("DENIED",))
    st = _named_events(events, Event.EV_STATE)
    direction, retired, ever_denied = {}, {}, set()
    for r in st.to_dict("records"):
        key = f"{r['host']}/qp{int(r['qp'])}/ev{int(r['ev']):#010x}"
        direction[key] = "ACKs" if r.get("direction") == "reverse" else "data"
        if r.get("new") == "DENIED":
            ever_denied.add(key)
        old = r.get("replaces")
        if old is not None and not (isinstance(old, float) and np.isnan(old)):
            retired.setdefault(f"{r['host']}/qp{int(r['qp'])}/ev{int(old):#010x}", r["t_ns"])
    peers = _qp_peers(events)
    times = health.columns.to_numpy(dtype=float)
    to_sev = np.array([_SEVERITY[s] for s in m.EV_STATES], dtype=float)
    from_sev = {v: m.EV_STATES.index(k) for k, v in _SEVERITY.items()}

    def path_of(host: int, qp: int, ev: int) -> tuple[int, int]:
        """(plane, spine), spine -1 when the peer is under the same T0 (no T1 on the path)."""
        peer = peers.get((f"h{host}", qp))
        if topology is not None and peer is not None:
            try:
                if topology.host(host).group == topology.host(int(peer.lstrip("h"))).group:
                    return ev_plane(ev), -1
            except (KeyError, ValueError, IndexError):
                pass
        return ev_plane(ev), ev_spine(ev)

    groups: dict = {}               # (host, direction, plane, spine, peer or "") -> labels
    for label in health.index:
        host_text, qp_text, ev_text = label.split("/")
        host, qp, ev = int(host_text.lstrip("h")), int(qp_text[2:]), int(ev_text[2:], 16)
        base = (host, direction.get(label, "data")) + path_of(host, qp, ev)
        groups.setdefault(base + ("",), []).append(label)
        if label in ever_denied:
            groups.setdefault(base + (peers.get((host_text, qp), "?"),), []).append(label)
    if topology is not None:
        for host, dirn in {(k[0], k[1]) for k in groups}:
            for plane in range(topology.spec.planes):
                for spine in range(topology.spec.spines):
                    groups.setdefault((host, dirn, plane, spine, ""), [])
    rows, counts = {}, {}
    for (host, dirn, plane, spine, peer), labels in sorted(groups.items()):
        sev = np.full(len(times), -1.0)
        for label in labels:
            codes = (denied if peer else health).loc[label].to_numpy(dtype=float)
            level = np.where(np.isnan(codes), -1, to_sev[np.nan_to_num(codes).astype(int)])
            if label in retired and not peer:
                level[times >= (retired[label] - t0_ns) / 1e9] = -1
            sev = np.maximum(sev, level)
        where = (f"within {t0_name(plane, topology.host(host).group)}" if spine < 0
                 else f"via {t1_name(plane, spine)}")
        key = f"h{host} {dirn}  plane {plane} {where}" + (f"  denied, peer {peer}" if peer else "")
        rows[key] = np.array([np.nan if v < 0 else from_sev[int(v)] for v in sev])
        counts[key] = len(labels)
    return pd.DataFrame(rows, index=health.columns).T, counts


def ev_state_figure(td: m.TransportData, t0_ns: int, bin_ms: float = 10.0):
    """EV state over time, one row per path (host, data or ACK direction, plane, T1): the worst
    state of the host's live EVs on that path in each time bin. A dead T0-T1 link shows as the
    rows via that T1 turning ASSUMED_BAD while the other paths stay as they were. Denied EVs
    show in rows of their own per peer, DENIED from their deny to their allow (ev_path_matrix).
    Time is seconds since the transport's first fault, as in the goodput figure. None when the
    transport logged no EV state (the single-path baselines): no empty figure."""
    mat, counts = ev_path_matrix(td.events, bin_ms, t0_ns, td.topology)
    if len(mat) == 0:
        return None
    origin_ns = _first_fault_ns(td)
    shift = 0.0 if origin_ns is None else (origin_ns - t0_ns) / 1e9
    fig, ax = plt.subplots(figsize=(11, 1.9 + 0.3 * max(len(mat), 1)))
    cmap = ListedColormap(STATE_COLORS).with_extremes(bad="white")
    t = mat.columns.to_numpy(dtype=float) - shift
    step = t[1] - t[0] if len(t) > 1 else bin_ms / 1e3
    ax.pcolormesh(np.append(t, t[-1] + step), np.arange(len(mat) + 1),
                  np.ma.masked_invalid(mat.to_numpy(dtype=float)), cmap=cmap,
                  norm=BoundaryNorm(np.arange(len(STATE_COLORS) + 1) - 0.5, len(STATE_COLORS)),
                  shading="flat")
    ax.set_yticks(np.arange(len(mat)) + 0.5)
    ax.set_yticklabels([f"{k}  ({counts[k]} EVs {'denied' if 'denied' in k else 'logged'})"
                        for k in mat.index], fontsize=8)
    hosts = [" ".join(k.split()[:2]) for k in mat.index]
    for i in range(1, len(hosts)):
        if hosts[i] != hosts[i - 1]:
            ax.axhline(i, color="black", lw=0.8)
    ax.set_ylim(len(mat), 0)
    ax.set_xlim(t[0], t[-1] + step)
    handles = [Patch(color=c, label=s) for c, s in zip(STATE_COLORS, m.EV_STATES)]
    handles.append(Patch(facecolor="white", edgecolor="grey", label="no transition logged"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
              title="EV state")
    if origin_ns is not None:
        _fault_markers(ax, td.faults, origin_ns)
    ax.set_title(f"EV state per path ({td.name}): worst state of the host's EVs via each T1",
                 pad=30)
    ax.set_xlabel("time since the transport's first fault (s)" if origin_ns is not None
                  else "time since run start (s)")
    fig.tight_layout()
    return fig


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
    axes[0].set(title="Load per plane (data bytes sent)", ylabel="MB sent")
    axes[1].set(title="Load per path (plane p, T1 s)", ylabel="MB sent")
    for ax in axes:
        ax.grid(axis="y", alpha=0.3)
    if axes[1].get_legend_handles_labels()[0]:
        axes[1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if missing:
        fig.text(0.01, 0.01, "not drawn: " + ", ".join(missing) + " (no per-path byte counts: "
                 "its packets carry no MRC/RoCE header to tell the path from)", fontsize=8,
                 color="dimgrey")
    fig.tight_layout(rect=(0, 0.05 if missing else 0, 1, 1))
    return fig


def recovery_figure(run: m.RunAnalysis):
    """Recovery time per fault, one bar group per fault, one bar per transport. A 0 ms recovery
    is a diamond on the axis with its label (a zero-height bar would be invisible); a fault the
    transport never recovered from is a hatched bar to the top, labelled so."""
    tables = {}
    for name, td in run.transports.items():
        rec = m.recovery_per_fault(td.faults, td.events, td.topology)
        if len(rec):
            tables[name] = rec
    fig, ax = plt.subplots(figsize=(10, 4))
    if not tables:
        ax.text(0.5, 0.5, "no fault with goodput samples to measure recovery", ha="center")
        ax.set_axis_off()
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
        for xi, v in zip(x, vals):
            if np.isnan(v):
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
                 "what the surviving paths allow; diamond: 0 ms)", ylabel="recovery time (ms)")
    fig.tight_layout()
    return fig


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


def topology_figure(topology, faults: pd.DataFrame | None = None):
    """The fabric: hosts at the bottom, T0s, T1s on top, one colour per plane. Every faulted
    link is thick and labelled with its fault times (s since the first fault): red when the
    fault log leaves it down (or lossy/black-holed), black when it was restored (orange is a plane colour)."""
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
    touched: dict = {}          # link -> ["down 0.0 s", "up 6.0 s", ...] since the first fault
    if faults is not None and len(faults):
        first_ns = int(faults["t_ns"].min())
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
            color = "red" if key in failed else "black"
            ax.plot([x1, x2], [y1, y2], color=color, lw=4, zorder=3)
            ax.annotate(f"{link.a}~{link.b}\n" + ", ".join(touched[key]),
                        ((x1 + x2) / 2, (y1 + y2) / 2), xytext=(8, 0), textcoords="offset points",
                        fontsize=8, color=color, weight="bold", va="center", zorder=6,
                        bbox={"boxstyle": "round", "fc": "white", "ec": color, "alpha": 0.9})
        else:
            ax.plot([x1, x2], [y1, y2], color=plane_colors(link.plane), lw=1, alpha=0.6)
    for name, (x, y) in pos.items():
        ax.scatter([x], [y], s=300 if y else 200, marker="s" if y else "o", color="white",
                   edgecolor="black", zorder=5)
        ax.text(x, y - 0.06 if y == 0 else y + 0.05, name, ha="center", fontsize=7)
    handles = [Patch(color=plane_colors(p), label=f"plane {p}") for p in range(spec.planes)]
    if failed:
        handles.append(Patch(color="red", label="faulted, still failed at the end"))
    if set(touched) - failed:
        handles.append(Patch(color="black", label="faulted, then restored"))
    if touched:
        handles.append(Patch(color="white", label="times: s since the first fault"))
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
        ax.plot(v["series"].index, v["series"].values, drawstyle="steps-post", lw=1.4,
                color=TRANSPORT_COLORS.get(name),
                label=f"{name} ({opt}): mean {mean} Mbit/s")
    first = next(iter(series.values()))
    ax.set(title=f"Incast victim flow {first['src']} -> {first['dst']}: goodput (100 ms bins)",
           xlabel="time since run start (s)", ylabel="goodput (Mbit/s)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    return fig


def trim_figure(run: m.RunAnalysis):
    """Per switch port: marked and trimmed packets (left), and per transport: trims, NACKs,
    retransmissions by cause and ASSUMED_BAD transitions (right). None without counters."""
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
        ax1.bar(x + i * width, values, width, color=TRANSPORT_COLORS.get(name),
                label=f"{name} {col}", **style)
    ax1.set_xticks(x + width * (len(series) - 1) / 2, busy, rotation=60, ha="right", fontsize=7)
    ax1.set_ylabel("packets")
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
        ax2.bar(x2 + i * w2, values, w2, color=TRANSPORT_COLORS.get(name), label=name)
    ax2.set_xticks(x2 + w2 * (len(drawn) - 1) / 2, labels, rotation=30, ha="right", fontsize=8)
    ax2.set_ylabel("count")
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
                                      first.faults if first else None)
    for name, make in (("trimming", trim_figure), ("victim_goodput", victim_goodput_figure)):
        fig = make(run)
        if fig is not None:
            out[name] = fig
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
