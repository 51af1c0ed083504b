"""The EV state figure: per path (host, direction, plane, T1), the worst state of the host's live
EVs in each time bin, and the matrix behind it (ev_path_matrix).

Apart from analysis/plots.py because it is the one figure family drawn from the endpoints' EV
state events, with its own rules (what counts as a path's state, denied EVs in rows of their
own); the other figures draw goodput, load, recovery and the topology.
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")            # no display needed, as analysis/plots.py
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import BoundaryNorm, ListedColormap  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from analysis import metrics as m  # noqa: E402
from analysis.plots_common import (STATE_COLORS, TIME_AXIS, fault_markers,  # noqa: E402
                                   named_events, origin_ns)
from model.events import Event  # noqa: E402
from model.topology import ev_plane, ev_spine, t0_name, t1_name  # noqa: E402

_SEVERITY = {"GOOD": 0, "UNKNOWN": 1, "SUSPECT": 2, "ASSUMED_BAD": 3, "DENIED": 4}
_HEALTH_STATES = tuple(s for s in m.EV_STATES if s != "DENIED")


def _qp_peers(events: pd.DataFrame) -> dict[tuple[str, int], str]:
    """(host, qp) -> peer host name, from the endpoints' `qp` events."""
    qp = named_events(events, Event.QP)
    if len(qp) == 0 or not {"host", "qp", "peer"} <= set(qp.columns):
        return {}
    return {(str(r.host), int(r.qp)): str(r.peer) for r in qp.itertuples(index=False)}


def _good_before_first(codes: np.ndarray, times_s: np.ndarray, first_s: float) -> np.ndarray:
    """An EV whose first logged change (at first_s) left GOOD was GOOD before it (an EV
    starts GOOD and every change is logged): its bins before that change read GOOD, not
    unknown."""
    out = codes.copy()
    before = (times_s < first_s) & np.isnan(out)
    out[before] = m.EV_STATES.index("GOOD")
    return out


def ev_path_matrix(events: pd.DataFrame, bin_ms: float, t0_ns: int,
                   topology=None) -> tuple[pd.DataFrame, dict]:
    """EV states grouped by path: one row per (host, direction, plane, T1), a bin holding the
    worst health state any of that host's live EVs on the path held in it (GOOD < UNKNOWN <
    SUSPECT < ASSUMED_BAD). An EV keeps its last logged state after a replacement takes its
    slot: an ASSUMED_BAD EV out of the rotation is still probed, so the path reads bad until a
    probe brings it back GOOD (after the repair), as the failed link was. Before its first
    logged change an EV whose change left GOOD was GOOD (_good_before_first).
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
    st = named_events(events, Event.EV_STATE)
    direction, ever_denied, first_old = {}, set(), {}
    for r in sorted(st.to_dict("records"), key=lambda r: r["t_ns"]):
        key = f"{r['host']}/qp{int(r['qp'])}/ev{int(r['ev']):#010x}"
        direction[key] = "ACKs" if r.get("direction") == "reverse" else "data"
        first_old.setdefault(key, (r.get("old"), (r["t_ns"] - t0_ns) / 1e9))
        if r.get("new") == "DENIED":
            ever_denied.add(key)
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
            old, first_s = first_old.get(label, (None, 0.0))
            if not peer and old == "GOOD":
                codes = _good_before_first(codes, times, first_s)
            level = np.where(np.isnan(codes), -1, to_sev[np.nan_to_num(codes).astype(int)])
            sev = np.maximum(sev, level)
        where = (f"within {t0_name(plane, topology.host(host).group)}" if spine < 0
                 else f"via {t1_name(plane, spine)}")
        key = f"h{host} {dirn}  plane {plane} {where}" + (f"  denied, peer {peer}" if peer else "")
        rows[key] = np.array([np.nan if v < 0 else from_sev[int(v)] for v in sev])
        counts[key] = len(labels)
    return pd.DataFrame(rows, index=health.columns).T, counts


QUIET_COLOR = "#dcedc8"         # a path none of whose EVs changed state: pale, not blank


def ev_state_figure(td: m.TransportData, t0_ns: int, bin_ms: float = 10.0):
    """EV state over time, one row per path (host, data or ACK direction, plane, T1): the worst
    state of the host's EVs on that path in each time bin. A dead T0-T1 link shows as the rows
    via that T1 turning ASSUMED_BAD while the other paths stay as they were, and green again
    once probes succeed after the repair. A path none of whose EVs changed state is pale green
    (every EV starts GOOD and every change is logged). Denied EVs show in rows of their own per
    peer, DENIED from their deny to their allow (ev_path_matrix). t = 0 at the transport's
    timed start, as every figure (plots_common). None when the transport logged no EV state
    (the single-path baselines): no empty figure."""
    mat, counts = ev_path_matrix(td.events, bin_ms, t0_ns, td.topology)
    if len(mat) == 0:
        return None
    origin = origin_ns(td, t0_ns)
    fig, ax = plt.subplots(figsize=(11, 1.9 + 0.3 * max(len(mat), 1)))
    colors = STATE_COLORS + [QUIET_COLOR]
    cmap = ListedColormap(colors).with_extremes(bad="white")
    t = mat.columns.to_numpy(dtype=float) - (origin - t0_ns) / 1e9
    step = t[1] - t[0] if len(t) > 1 else bin_ms / 1e3
    values = mat.to_numpy(dtype=float, copy=True)
    quiet = np.array([counts[k] == 0 for k in mat.index])
    values[quiet] = len(STATE_COLORS)
    ax.pcolormesh(np.append(t, t[-1] + step), np.arange(len(mat) + 1),
                  np.ma.masked_invalid(values), cmap=cmap,
                  norm=BoundaryNorm(np.arange(len(colors) + 1) - 0.5, len(colors)),
                  shading="flat")
    ax.set_yticks(np.arange(len(mat)) + 0.5)
    ax.set_yticklabels([f"{k}  ({counts[k]} EVs {'denied' if 'denied' in k else 'logged'})"
                        if counts[k] else f"{k}  (no change)" for k in mat.index], fontsize=8)
    hosts = [" ".join(k.split()[:2]) for k in mat.index]
    for i in range(1, len(hosts)):
        if hosts[i] != hosts[i - 1]:
            ax.axhline(i, color="black", lw=0.8)
    ax.set_ylim(len(mat), 0)
    ax.set_xlim(t[0], t[-1] + step)
    handles = [Patch(color=c, label=s) for c, s in zip(STATE_COLORS, m.EV_STATES)]
    handles.append(Patch(color=QUIET_COLOR, label="no EV changed state"))
    handles.append(Patch(facecolor="white", edgecolor="grey", label="state not known yet"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
              title="EV state")
    if len(td.faults):
        fault_markers(ax, td.faults, origin)
    ax.set_title(f"EV state per path ({td.name}): worst state of the host's EVs via each T1",
                 pad=30)
    ax.set_xlabel(TIME_AXIS)
    fig.tight_layout()
    return fig
