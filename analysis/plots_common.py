"""What every figure family shares: the transports' and EV states' colours, fault markers on a
time axis, the time origin of a transport's figures, and the heading every figure carries.

One time origin: t = 0 is the start of the transport's timed phase (its first rank's
warmup_done), in emulated time (the loaders divide by the time scale), so a fault lands where
the scenario scheduled it on every figure, in the report's tables and in the notebook. Each
transport ran on its own fabric at its own time, so each has its own timed start.

Apart from analysis/plots.py so each figure family (plots.py, plots_ev.py) draws with the same
colours and markers without importing another family.
"""
from __future__ import annotations

import pandas as pd

import textwrap

from analysis import metrics as m
from analysis.fidelity_words import time_scale_of, verdict_of

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
    """The transport's first fault, None without one."""
    return int(td.faults["t_ns"].min()) if len(td.faults) else None


TIME_AXIS = "time since the timed iterations started (s, emulated time)"


def origin_ns(td: m.TransportData, fallback_ns: int) -> int:
    """t = 0 of every time axis of a transport's figures: its timed start (module docstring);
    `fallback_ns` for logs that do not say when it was (no warmup_done)."""
    start = td.model.timed_start_ns if td.model is not None else None
    return int(start) if start is not None else int(fallback_ns)


def heading(run: m.RunAnalysis) -> str:
    """The line every figure is titled with: the scenario, the time scale k and each
    transport's fidelity verdict, so a figure copied out of the report still says whether its
    times measure the fabric."""
    summary = run.summary or {}
    scenario = summary.get("scenario") or run.run_dir.name
    short = " (short)" if summary.get("short") is True else ""
    scales = sorted({time_scale_of(td.summary) for td in run.transports.values()})
    verdicts = ", ".join(f"{n} {verdict_of(td.summary)}" for n, td in run.transports.items())
    return (f"scenario {scenario}{short}  |  time scale k = {', '.join(f'{k:g}' for k in scales)}"
            f"  |  fidelity: {verdicts}")


HEADING_INCHES = 0.35


def stamp(fig, text: str) -> None:
    """Put `text` above everything a finished figure holds: the figure grows by a band at the
    top and every axes and figure text keeps its size and place below it."""
    w, h = fig.get_size_inches()
    scale = h / (h + HEADING_INCHES)
    fig.set_size_inches(w, h + HEADING_INCHES)
    for ax in fig.axes:
        x0, y0, width, height = ax.get_position().bounds
        ax.set_position([x0, y0 * scale, width, height * scale])
    for t in fig.texts:
        x, y = t.get_position()
        t.set_position((x, y * scale))
    fig.text(0.5, 1 - 0.5 * HEADING_INCHES / (h + HEADING_INCHES), text, ha="center",
             va="center", fontsize=9, weight="bold")


def footnote(fig, lines: list[str], width_chars: int | None = None) -> float:
    """Notes under the axes, wrapped to the figure's width (never cut at its right edge);
    returns the fraction of the figure's height they take, for tight_layout's rect."""
    if not lines:
        return 0.0
    w, h = fig.get_size_inches()
    width_chars = width_chars or int(w * 15)          # 7-point text: ~15 characters an inch
    text = "\n".join(textwrap.fill(line, width_chars) for line in lines)
    fig.text(0.01, 0.005, text, fontsize=7, color="dimgrey", va="bottom")
    return min(0.4, (text.count("\n") + 1) * 0.12 / h + 0.01)
