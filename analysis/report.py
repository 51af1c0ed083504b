"""Self-contained HTML report of a run: every figure embedded as base64 PNG, summary tables.

One file, no external assets, so it can be mailed or attached to an issue as is.
"""
from __future__ import annotations

import base64
import html
import json
from pathlib import Path

import pandas as pd

from analysis import metrics as m

_STYLE = """body{font-family:sans-serif;max-width:1150px;margin:2em auto;color:#222}
table{border-collapse:collapse;font-size:13px;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;
text-align:right}th{background:#f0f0f0}img{max-width:100%;border:1px solid #eee;margin:.5em 0}
.problems{color:#a33;font-size:12px}"""


def _table(df: pd.DataFrame, float_format="{:.3f}") -> str:
    if df is None or len(df) == 0:
        return "<p><i>none</i></p>"
    return df.to_html(float_format=lambda v: float_format.format(v), na_rep="-", border=0)


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"></figure>'


def write_report(run: m.RunAnalysis, figure_paths: dict, out_path) -> Path:
    """Write the HTML report; figure_paths from analysis.plots.save_all."""
    out_path = Path(out_path)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>MRC lab run "
             f"{html.escape(run.run_dir.name)}</title><style>{_STYLE}</style></head><body>",
             f"<h1>MRC lab run <code>{html.escape(run.run_dir.name)}</code></h1>",
             f"<p>Transports: {', '.join(run.transports)}. Times are seconds since the first "
             f"event (CLOCK_MONOTONIC); rates in Mbit/s.</p>"]
    parts.append("<h2>Transports side by side</h2>" + _table(m.compare_transports(run)))
    faults = run.all_faults()
    if len(faults):
        f = faults.copy()
        f["t_s"] = (f["t_ns"] - run.t0_ns) / 1e9
        parts.append("<h2>Fault log</h2>" + _table(f.drop(columns=["t_ns"]).drop_duplicates()))
    from analysis import trimming as tr
    trim_rows = tr.comparison_rows([{"transport": n, **(td.summary or {})}
                                    for n, td in run.transports.items()
                                    if (td.summary or {}).get("trimming") is not None])
    if len(trim_rows):
        parts.append("<h2>In-fabric trimming and queue-based ECN</h2><p>Switch-port counters "
                     "(trim_counters.json), NACKs and EV health from the endpoint logs; the "
                     "victim flow's goodput from its destination's worker log.</p>"
                     + _table(trim_rows.astype(object).where(trim_rows.notna(), None)
                              .map(lambda v: json.dumps(v) if isinstance(v, dict) else v),
                              "{:.1f}"))
        for name, td in run.transports.items():
            ports = tr.port_table(tr.load_trim_counters(td.directory))
            busy = ports[(ports["marked"] > 0) | (ports["trimmed"] > 0) | (ports["dropped"] > 0)]
            if len(ports):
                parts.append(f"<h3>{html.escape(name)}: ports that marked, trimmed or dropped "
                             f"({len(busy)} of {len(ports)})</h3>" + _table(busy.set_index("port")))
    rec_rows = []
    for name, td in run.transports.items():
        rec = m.recovery_per_fault(td.faults, td.events, td.topology)
        if len(rec):
            rec_rows.append(rec.assign(transport=name))
    if rec_rows:
        rec = pd.concat(rec_rows, ignore_index=True)
        rec["t_s"] = (rec["t_ns"] - run.t0_ns) / 1e9
        parts.append("<h2>Recovery per fault</h2>" + _table(rec.drop(columns=["t_ns"])))
    for name, td in run.transports.items():
        rc = m.retransmission_causes(td.events)
        it = m.iteration_times(td.events)
        parts.append(f"<h2>{html.escape(name)}</h2><h3>Retransmissions by cause</h3>" + _table(rc))
        if len(it):
            parts.append("<h3>Iteration times</h3>" + _table(it["duration_s"].describe().to_frame().T))
        if len(td.packets):
            lb = m.load_balance(td.packets)
            parts.append(f"<p>Load balance: Jain index over planes {lb['plane_jain']:.3f}, "
                         f"over paths {lb['path_jain']:.3f}; {len(td.packets)} MRC packets captured.</p>")
        if td.problems:
            shown = "".join(f"<li>{html.escape(p)}</li>" for p in td.problems[:20])
            more = f"<li>... {len(td.problems) - 20} more</li>" if len(td.problems) > 20 else ""
            parts.append(f"<div class='problems'>Unreadable input (skipped):<ul>{shown}{more}</ul></div>")
    parts.append("<h2>Figures</h2>")
    for name, p in figure_paths.items():
        parts.append(f"<h3>{html.escape(name.replace('_', ' '))}</h3>" + _img(p, name))
    if run.summary:
        parts.append("<h2>summary.json</h2><pre>" +
                     html.escape(json.dumps(run.summary, indent=2, default=str)[:20000]) + "</pre>")
    parts.append("</body></html>")
    out_path.write_text("\n".join(parts))
    return out_path
