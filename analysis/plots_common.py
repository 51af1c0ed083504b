"""What every figure family shares: the transports' and EV states' colours, fault markers on a
time axis, and the time origin of a transport's figures (its first fault).

Apart from analysis/plots.py so each figure family (plots.py, plots_ev.py) draws with the same
colours and markers without importing another family.
"""
from __future__ import annotations

import pandas as pd

from analysis import metrics as m

TRANSPORT_COLORS = {"mrc": "tab:green", "roce": "tab:orange", "tcp": "tab:blue"}
STATE_COLORS = ["#4caf50", "#ff9800", "#d32f2f", "#bdbdbd", "#fdd835"]  # metrics.EV_STATES order


def fault_label(f) -> str:
    a, b = getattr(f, "a", None), getattr(f, "b", None)
    ends = "~".join(str(x) for x in (a, b) if isinstance(x, str) and x)
    return f"{f.action} {ends}".strip()


def fault_markers(ax, faults: pd.DataFrame, t0_ns: int, *, color: str = "red") -> None:
    """Dashed lines at the faults; labels above the axes (never over the data, never clipped),
    staggered when two faults are close."""
    if faults is None or len(faults) == 0:
        return
    marks = {}
    for f in faults.drop_duplicates(subset=["t_ns", "action"]).sort_values("t_ns").itertuples(index=False):
        marks.setdefault(((f.t_ns - t0_ns) / 1e9, fault_label(f)), None)
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


def named_events(events: pd.DataFrame, name: str) -> pd.DataFrame:
    if len(events) == 0 or "event" not in events:
        return pd.DataFrame()
    return events[events["event"] == name].dropna(axis=1, how="all")


def first_fault_ns(td: m.TransportData) -> int | None:
    """The transport's first fault: t = 0 of every time axis of its figures."""
    return int(td.faults["t_ns"].min()) if len(td.faults) else None
