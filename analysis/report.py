"""Self-contained HTML report of a run: the verdict in words first, then the figures, then the
detail tables; every figure embedded as base64 PNG.

One file, no external assets, so it can be mailed or attached to an issue as is (the only links
are to the run's summary.json files, relative, for whoever has the run directory).

Every verdict and recovery number comes from the run model (analysis.runmodel, through
RunAnalysis.transports[*].model), the same one the runner writes summary.json and prints its
table from, so the report never disagrees with the terminal.
"""
from __future__ import annotations

import base64
import html
import json
import os
from pathlib import Path

import pandas as pd

from analysis import cpu_usage, fidelity
from analysis import metrics as m
from analysis import runmodel
from analysis import trimming as tr

_STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.4}
h1{font-size:1.6em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
.verdict{border-left:6px solid #2e7d32;background:#f1f8f1;padding:.6em 1em;margin:1em 0}
.verdict.bad{border-color:#c62828;background:#fdf1f1}
.verdict p{margin:.4em 0}.verdict .headline{font-size:1.15em;font-weight:600}
.bad-text{color:#b71c1c}.muted{color:#666;font-size:.9em}
.tablewrap{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:13px;margin:.6em 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;vertical-align:top}
th{background:#f0f0f0}td.text,th.text{text-align:left}
figure{margin:1em 0}figcaption{font-weight:600;margin-bottom:.3em}
img{max-width:100%;border:1px solid #eee}
.problems{color:#a33;font-size:12px}"""


def _esc(value) -> str:
    return html.escape(str(value))


def _ms(value) -> str:
    return "-" if value is None else f"{value:.0f} ms"


def _table(df: pd.DataFrame, float_format="{:.3f}") -> str:
    """A pandas table that never runs off the page (scrolls inside its own box if it must)."""
    if df is None or len(df) == 0:
        return "<p><i>none</i></p>"
    def fmt(v):
        return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else float_format.format(v)
    def cell(v):
        if v is None or (isinstance(v, float) and v != v):
            return "-"
        if isinstance(v, float):
            return fmt(v)
        return json.dumps(v) if isinstance(v, dict) else v
    df = df.astype(object).map(cell)
    return "<div class='tablewrap'>" + df.to_html(na_rep="-", border=0) + "</div>"


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f'<img alt="{_esc(alt)}" src="data:image/png;base64,{data}">'


def _link(target: Path, out_dir: Path, text: str) -> str:
    rel = os.path.relpath(Path(target).resolve(), Path(out_dir).resolve())
    return f'<a href="{_esc(Path(rel).as_posix())}">{_esc(text)}</a>'


# ---------------------------------------------------------------- the verdict in words


def transport_status(td: m.TransportData) -> tuple[bool, str]:
    """(all good, one sentence) about one transport's iterations and data."""
    model, summary = td.model, td.summary or {}
    done = len(model.iterations)
    planned = summary.get("iterations_planned", model.iterations_planned)
    ran = f"{done} of {planned} iterations" if planned else f"{done} iterations"
    mean = sum(model.iteration_times_ms) / done if done else None
    timing = f", mean {mean:.0f} ms per iteration" if mean else ""
    problems = summary.get("problems")
    if problems is None:        # a directory not written by this runner: judge from the logs
        problems = [] if model.data_verified else ["a collective result did not verify"]
        problems += [f"worker {e}" for e in model.worker_errors]
        problems += [runmodel.describe_not_effective(f) for f in model.not_effective]
    verified = summary.get("verified", bool(done) and model.data_verified
                           and (not planned or done == planned))
    data = "data verified" if verified else "NOT verified"
    # faults that did not take effect get their own section; this line is about the data
    ok = bool(verified) and not [p for p in problems if "did not take effect" not in p]
    return ok, f"{td.name}: {ran} completed, {data}{timing}."


def _recovery_words(f: runmodel.Fault, next_t_ns, end_ns) -> str:
    if not f.took_effect:
        return "did not take effect"
    if f.recovery_ms is not None:
        return f"recovered in {f.recovery_ms:.0f} ms"
    if f.expected_goodput_bps is None:
        return "not measurable (no goodput before the first fault)"
    until = next_t_ns if next_t_ns is not None else end_ns
    span = f" ({(until - f.t_ns) / 1e9:.1f} s)" if until is not None and f.t_ns is not None else ""
    return ("did not recover before the next fault" if next_t_ns is not None
            else "did not recover before the traffic ended") + span


def _schedule(run: m.RunAnalysis) -> list[runmodel.Fault]:
    """Every scheduled fault once (the schedule is the same for every transport): the first
    transport's record of each entry that names its action."""
    seen: dict[int, runmodel.Fault] = {}
    for td in run.transports.values():
        for f in td.model.faults:
            if f.entry not in seen or (seen[f.entry].action is None and f.action):
                seen[f.entry] = f
    return [seen[k] for k in sorted(seen)]


def _fault_cells(run: m.RunAnalysis) -> dict[int, dict[str, str]]:
    """entry -> transport -> what happened to that fault in that transport's run."""
    out: dict[int, dict[str, str]] = {}
    for name, td in run.transports.items():
        model = td.model
        effective = sorted((f for f in model.faults if f.t_ns is not None and f.took_effect),
                           key=lambda f: f.t_ns)
        following = {f.entry: (effective[i + 1].t_ns if i + 1 < len(effective) else None)
                     for i, f in enumerate(effective)}
        for f in model.faults:
            out.setdefault(f.entry, {})[name] = _recovery_words(f, following.get(f.entry),
                                                                model.traffic_end_ns)
    return out


def verdict_html(run: m.RunAnalysis, out_dir: Path) -> str:
    """The report's opening: did the run verify, what failed when, how long each transport took
    to recover, which faults did not take effect and why."""
    statuses = [transport_status(td) for td in run.transports.values()]
    not_effective = [(name, f) for name, td in run.transports.items()
                     for f in td.model.not_effective]
    all_ok = all(ok for ok, _ in statuses) and not not_effective
    schedule = _schedule(run)
    names = list(run.transports)
    if all_ok:
        headline = (f"Every transport ({', '.join(names)}) completed its iterations and verified "
                    f"the collective's data" + (f"; all {len(schedule)} scheduled faults took "
                                               f"effect." if schedule else "."))
    elif not_effective and all(ok or "NOT" not in text for ok, text in statuses):
        headline = ("The data verified, but a scheduled fault did not take effect: the recovery "
                    "numbers do not measure the schedule as written.")
    else:
        headline = "This run did not verify: see below before trusting any number in it."
    parts = [f"<div class='verdict{'' if all_ok else ' bad'}'>",
             f"<p class='headline'>{_esc(headline)}</p>"]
    parts += [f"<p class='{'' if ok else 'bad-text'}'>{_esc(text)}</p>" for ok, text in statuses]
    for name, td in run.transports.items():
        for p in (td.summary or {}).get("problems") or []:
            if "did not take effect" not in p:
                parts.append(f"<p class='bad-text'>{_esc(name)}: {_esc(p)}</p>")
    for name, td in run.transports.items():
        cpu = (td.summary or {}).get("cpu")
        if isinstance(cpu, dict):       # a CPU-bound run's times measure the machine: say so here
            parts.append(f"<p class='{'bad-text' if cpu.get('saturated') else 'muted'}'>"
                         f"{_esc(cpu_usage.describe(name, cpu))}</p>")
    parts.append("</div>")

    if schedule:
        cells = _fault_cells(run)
        parts.append("<h2>What failed when, and how long each transport took to recover</h2>")
        sentences = []
        for f in schedule:
            said = [cells[f.entry].get(n, "no record") for n in names]
            per = (f"every transport: {said[0]}" if len(names) > 1 and len(set(said)) == 1 else
                   "; ".join(f"{n} {w}" for n, w in zip(names, said)))
            sentences.append(f"<li><b>{_esc(f.label())}</b> ({_esc(f.when)}): {_esc(per)}.</li>")
        parts.append("<ul>" + "".join(sentences) + "</ul>")
        head = "".join(f"<th>{_esc(n)}</th>" for n in names)
        rows = []
        for f in schedule:
            tds = []
            for n in names:
                model = run.transports[n].model
                mine = next((g for g in model.faults if g.entry == f.entry), None)
                if mine is None or not mine.took_effect:
                    tds.append("<td class='text bad-text'>did not take effect</td>")
                    continue
                at = ("" if model.timed_start_ns is None else
                      f"<br><span class='muted'>at {(mine.t_ns - model.timed_start_ns) / 1e9:.2f} s</span>")
                value = "never" if mine.recovery_ms is None else _ms(mine.recovery_ms)
                tds.append(f"<td>{value}{at}</td>")
            rows.append(f"<tr><td>{f.entry}</td><td class='text'>{_esc(f.label())}</td>"
                        f"<td class='text'>{_esc(f.when)}</td>{''.join(tds)}</tr>")
        parts.append("<div class='tablewrap'><table><tr><th>#</th><th class='text'>fault</th>"
                     f"<th class='text'>scheduled</th>{head}</tr>{''.join(rows)}</table></div>")
        parts.append("<p class='muted'>Recovery: time from the fault until the goodput of all "
                     "hosts stays at or above 90% of what the surviving capacity allows (pre-fault "
                     "steady goodput x surviving fraction of the narrowest cut), over windows of "
                     "one median iteration; \"never\" = not before the next fault or the end of "
                     "the traffic. Times are seconds after the timed iterations started. "
                     "Definition: analysis/recovery.py.</p>")
    if not_effective:
        parts.append("<h2 class='bad-text'>Faults that did not take effect</h2><ul>")
        grouped: dict[str, list[str]] = {}
        for name, f in not_effective:
            grouped.setdefault(runmodel.describe_not_effective(f), []).append(name)
        parts += [f"<li class='bad-text'>{_esc(', '.join(who))}: {_esc(line)}</li>"
                  for line, who in grouped.items()]
        parts.append("</ul>")
    links = [_link(run.run_dir / "summary.json", out_dir, "summary.json")
             ] if (run.run_dir / "summary.json").exists() else []
    links += [_link(td.directory / "summary.json", out_dir, f"{name}/summary.json")
              for name, td in run.transports.items() if (td.directory / "summary.json").exists()]
    if links:
        parts.append(f"<p class='muted'>The same numbers, machine-readable: {', '.join(links)}.</p>")
    return "\n".join(parts)


# ---------------------------------------------------------------- detail tables


def _side_by_side(run: m.RunAnalysis) -> pd.DataFrame:
    """compare_transports with transports as columns: a handful of columns fits any page."""
    df = m.compare_transports(run)
    return df.T if len(df) else df


def _iteration_summary(run: m.RunAnalysis) -> pd.DataFrame:
    rows = {}
    for name, td in run.transports.items():
        times = pd.Series(td.model.iteration_times_ms, dtype=float)
        if len(times):
            rows[name] = {"iterations": len(times), "mean ms": times.mean(),
                          "median ms": times.median(), "p99 ms": times.quantile(0.99),
                          "max ms": times.max()}
    return pd.DataFrame(rows).T


def _retransmissions(run: m.RunAnalysis) -> pd.DataFrame:
    frames = []
    for name, td in run.transports.items():
        rc = m.retransmission_causes(td.events)
        if len(rc):
            frames.append(rc.groupby("reason", observed=True)["count"].sum().rename(name))
    return pd.concat(frames, axis=1).fillna(0).astype(int) if frames else pd.DataFrame()


def details_html(run: m.RunAnalysis) -> str:
    parts = ["<h2>Transports side by side</h2>" + _table(_side_by_side(run), "{:.2f}"),
             "<h3>Iteration times</h3>" + _table(_iteration_summary(run), "{:.1f}"),
             "<h3>Retransmissions by cause</h3>" + _table(_retransmissions(run), "{:.0f}")]
    jain = [f"{name}: Jain index over planes {lb['plane_jain']:.3f}, over paths "
            f"{lb['path_jain']:.3f} ({len(td.packets)} MRC packets captured)"
            for name, td in run.transports.items() if len(td.packets)
            for lb in [m.load_balance(td.packets)]]
    if jain:
        parts.append("<h3>Load balance</h3><ul>" + "".join(f"<li>{_esc(j)}</li>" for j in jain)
                     + "</ul>")
    trim_rows = tr.comparison_rows([{"transport": n, **(td.summary or {})}
                                    for n, td in run.transports.items()
                                    if (td.summary or {}).get("trimming") is not None])
    if len(trim_rows):
        table = (trim_rows.astype(object).where(trim_rows.notna(), None)
                 .map(lambda v: json.dumps(v) if isinstance(v, dict) else v)).T
        parts.append("<h3>In-fabric trimming and queue-based ECN</h3><p>Switch-port counters "
                     "(trim_counters.json), NACKs and EV health from the endpoint logs; the "
                     "victim flow's goodput from its destination's worker log.</p>"
                     + _table(table, "{:.1f}"))
        for name, td in run.transports.items():
            ports = tr.port_table(tr.load_trim_counters(td.directory))
            busy = ports[(ports["marked"] > 0) | (ports["trimmed"] > 0) | (ports["dropped"] > 0)]
            if len(ports):
                parts.append(f"<h4>{_esc(name)}: ports that marked, trimmed or dropped "
                             f"({len(busy)} of {len(ports)})</h4>" + _table(busy.set_index("port")))
    parts.append("<h3>Fault schedule per transport</h3>")
    for name, td in run.transports.items():
        rec = m.recovery_table(td.model)
        if len(rec):
            parts.append(f"<h4>{_esc(name)}</h4>" + _table(
                rec.drop(columns=["when"]).set_index("entry"), "{:.2f}"))
    for name, td in run.transports.items():
        problems = td.problems + td.model.problems
        if problems:
            shown = "".join(f"<li>{_esc(p)}</li>" for p in problems[:20])
            more = f"<li>... {len(problems) - 20} more</li>" if len(problems) > 20 else ""
            parts.append(f"<div class='problems'>{_esc(name)}: unreadable input (skipped):"
                         f"<ul>{shown}{more}</ul></div>")
    return "\n".join(parts)


def write_report(run: m.RunAnalysis, figure_paths: dict, out_path) -> Path:
    """Write the HTML report; figure_paths from analysis.plots.save_all."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    scenario = (run.summary or {}).get("scenario")
    short = " (short version)" if (run.summary or {}).get("short") else ""
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>MRC lab run "
             f"{_esc(run.run_dir.name)}</title><style>{_STYLE}</style></head><body>",
             f"<h1>MRC lab run <code>{_esc(run.run_dir.name)}</code></h1>",
             f"<p class='muted'>{'Scenario ' + _esc(scenario) + _esc(short) + '; ' if scenario else ''}"
             f"transports {_esc(', '.join(run.transports))}. Rates in Mbit/s.</p>",
             fidelity.paragraph_html(run.run_dir),      # analysis/fidelity.py: can it be trusted
             "<h2>Verdict</h2>", verdict_html(run, out_path.parent)]
    if figure_paths:
        parts.append("<h2>Figures</h2>")
        for name, p in figure_paths.items():
            parts.append(f"<figure><figcaption>{_esc(name.replace('_', ' '))}</figcaption>"
                         f"{_img(p, name)}</figure>")
    parts.append(details_html(run))
    parts.append("</body></html>")
    out_path.write_text("\n".join(parts))
    return out_path
