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
import os
from pathlib import Path

import pandas as pd

from analysis import cpu_usage, fidelity, metric_names
from analysis.fidelity_verdict import OK
from analysis.fidelity_words import NOT_ASSESSED, verdict_of, void_by_entry
from analysis import metrics as m
from analysis import runmodel, safe_write
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
th{background:#f0f0f0}tbody th{white-space:nowrap}td.text,th.text{text-align:left}
figure{margin:1em 0}figcaption{font-weight:600;margin-bottom:.3em}
img{max-width:100%;border:1px solid #eee}
.problems{color:#a33;font-size:12px}"""


# What the captured packets of each transport are (the same decoder reads both: UDP 4791).
PACKET_KIND = {"mrc": "MRC", "roce": "RoCEv2"}


def _esc(value) -> str:
    return html.escape(str(value))


def _ms(value) -> str:
    return "-" if value is None else f"{value:.0f} ms"


# Column and row names as a reader says them, with units; names not listed get the generic rule
# of human_name (suffix -> unit, underscores -> spaces).
HUMAN = {
    "goodput_mean_mbit": "mean goodput (Mbit/s)", "goodput_p5_mbit": "5th-percentile goodput (Mbit/s)",
    "iterations": "iterations", "iter_median_ms": "median iteration (ms)",
    "iter_p99_ms": "99th-percentile iteration (ms)",
    "busbw_median_mbit": "median bus bandwidth (Mbit/s)", "retransmits": "retransmissions (logged)",
    "retx_packets_captured": "retransmitted packets (captured)",
    "plane_jain": "Jain index over planes", "path_jain": "Jain index over paths",
    "reorder_p99": "99th-percentile reordering (packets)",
    "recovery_first_fault_ms": "recovery after the first fault (ms)",
    "recovery_max_ms": "longest recovery (ms)", "faults_not_recovered": "faults not recovered",
    "faults_not_effective": "faults without effect", "problems": "unreadable inputs",
    "mark": "ECN marking on", "trim": "trimming on", "marked": "CE-marked packets",
    "trimmed": "trimmed packets", "dropped": "dropped packets (trimmer)",
    "queue_drops": "queue drops", "marked_last_hop": "CE-marked on the last hop",
    "nacks_sent": "NACKs sent", "trimmed_received": "trimmed headers received",
    "retransmit_timeouts": "retransmission timeouts",
    "ev_assumed_bad": "EVs retired (ASSUMED_BAD, data)",
    "ev_assumed_bad_reverse": "EVs retired (ASSUMED_BAD, ACK paths)",
    "ev_assumed_bad_by_reason": "EVs retired, by reason", "loss_verdicts": "loss verdicts",
    "victim": "victim flow", "victim_goodput_mbit": "victim goodput (Mbit/s)",
    "offered_packets": "packets offered", "mrc_data_packets": "RoCEv2/MRC data packets (UDP 4791)",
    "dropped_bytes": "dropped bytes", "vq_bytes": "virtual queue (bytes)",
    "vq_peak_bytes": "virtual queue peak (bytes)", "errors": "errors",
    "t_s": "at (s after the timed start)", "action": "fault", "a": "end A", "b": "end B",
    "status": "status", "capacity_fraction": "capacity left (fraction)",
    "expected_mbit": "goodput the surviving paths allow (Mbit/s)", "recovery_ms": "recovery (ms)",
    "reason": "why",
    # the parts of summary.json's loss_verdicts and ev_assumed_bad_by_reason
    "loss_verdicts_opened": "opened", "losses_explained_by_trim": "explained by a trim",
    "losses_explained_by_late_delivery": "explained by a late delivery",
    "loss_verdicts_failed": "ended in ASSUMED_BAD", "timeout": "retransmission timeout",
    "sack_gap": "SACK gap", "nack_trimmed": "trimmed-packet NACK", "gbn": "go-back-N",
    "reverse:reverse_probe_timeout": "ACK path: probe timed out",
    "reverse_probe_timeout": "ACK path: probe timed out", "probe_timeout": "probe timed out",
    "loss_verdict": "loss verdict",
}
HUMAN.update(metric_names.LABELS)   # the headline metrics: one name, analysis/metric_names.py
HUMAN.update(iterations_completed="iterations completed",
             retransmissions_captured="retransmitted data packets in the captures (sum over ports)")

# Each figure's caption: what it shows, in words (a name not listed is an EV state figure of
# the transport it names, or spelt out).
CAPTIONS = {
    "goodput": "Goodput of each transport over the run, in % of what the surviving paths "
               "allow (Mbit/s where no pre-fault rate scales it); shaded: the stall the recovery "
               "metric measured",
    "load": "Data bytes sent per plane and per path, with Jain's fairness index",
    "recovery": "Recovery time per fault and transport",
    "iterations": "Collective iteration times per transport",
    "topology": "The fabric and the links the faults touched",
    "trimming": "ECN marks and trims per switch port, NACKs and retransmissions per transport",
    "victim_goodput": "Goodput of the incast's victim flow per transport",
}


def caption(name: str) -> str:
    """A figure's caption for a reader (CAPTIONS), never its file name."""
    if name in CAPTIONS:
        return CAPTIONS[name]
    if name.startswith("ev_state_"):
        return (f"EV state per path over time ({name[len('ev_state_'):]}): the worst state of "
                "each host's entropy values on each path")
    return name.replace("_", " ").capitalize()
_UNITS = (("_mbit", " (Mbit/s)"), ("_ms", " (ms)"), ("_ns", " (ns)"), ("_bytes", " (bytes)"),
          ("_s", " (s)"))


def human_name(name) -> str:
    """A column or row name for a reader: HUMAN's, else underscores as spaces and a unit
    suffix (_ms, _mbit, ...) as the unit in brackets."""
    if not isinstance(name, str):
        return str(name)
    if name in HUMAN:
        return HUMAN[name]
    for suffix, unit in _UNITS:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[:-len(suffix)].replace("_", " ") + unit
    return name.replace("_", " ")


def number(value) -> str:
    """A number as a reader wants it: whole numbers whole, others to the digits that mean
    something (3 significant, at most 1 decimal from 100 on)."""
    v = float(value)
    if v != v:
        return "-"
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}" if abs(v) >= 0.001 else f"{v:.1e}"


def cell_text(value) -> str:
    """Any table cell as words: yes/no, never True/False; "-" for nothing; a number to its
    meaningful digits; a dict (counts by reason, a flow) as `name value` pairs, never JSON."""
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        if not value:
            return "-"
        return ", ".join(f"{human_name(k)} {cell_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return " -> ".join(map(str, value)) if all(isinstance(v, str) for v in value) \
            else ", ".join(map(cell_text, value))
    if isinstance(value, (int, float)):
        return number(value)
    try:                                # numpy scalars
        return cell_text(value.item())
    except AttributeError:
        return str(value)


def readable(df: pd.DataFrame) -> pd.DataFrame:
    """A table for a reader (the report's and the notebook's): human column and row names
    (HUMAN, units in brackets), every cell as cell_text, no index or column-axis names."""
    df = df.rename(columns=human_name, index=human_name).astype(object).map(cell_text)
    df.index.name = None
    df.columns.name = None
    return df


def _table(df: pd.DataFrame) -> str:
    """A pandas table that never runs off the page (scrolls inside its own box if it must),
    readable(); the index only when it names the rows (never 0, 1, 2 ...)."""
    if df is None or len(df) == 0:
        return "<p><i>none</i></p>"
    named = not isinstance(df.index, pd.RangeIndex)
    return ("<div class='tablewrap'>" + readable(df).to_html(na_rep="-", border=0, index=named)
            + "</div>")


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f'<img alt="{_esc(alt)}" src="data:image/png;base64,{data}">'


def _strings(value) -> list[str] | None:
    """A summary.json list of strings as such (None if absent); any other type is one problem,
    not a crash: summary.json is an input like any other."""
    if value is None:
        return None
    if not isinstance(value, list):
        return [f"summary.json problems is a {type(value).__name__}, not a list"]
    return [str(v)[:300] for v in value]


def _int_or_none(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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
    problems = _strings(summary.get("problems"))
    if problems is None:        # a directory not written by this runner: judge from the logs
        problems = [] if model.data_verified else ["a collective result did not verify"]
        problems += [f"worker {e}" for e in model.worker_errors]
        problems += [runmodel.describe_not_effective(f) for f in model.not_effective]
    # the records decide, never summary.json: every (rank, iteration) once and verified
    verified = model.records_verified and (not _int_or_none(planned) or done == planned)
    if not model.records_verified and model.data_verified and done:
        problems = problems + ["the iteration records are incomplete (a rank's record missing "
                               "or duplicated)"]
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
            words = _recovery_words(f, following.get(f.entry), model.traffic_end_ns)
            if _void_reason(td, f):
                words += " (void: a stall inside its recovery window)"
            out.setdefault(f.entry, {})[name] = words
    return out


def _headline(names, statuses, not_effective, schedule, unfaithful) -> str:
    """The verdict box's first sentence: verified, faults in effect, and the fidelity verdict
    (a run whose data verified but whose times measure the CPU gets no clean headline)."""
    if all(ok for ok, _ in statuses) and not not_effective:
        text = (f"Every transport ({', '.join(names)}) completed its iterations and verified "
                f"the collective's data" + (f"; all {len(schedule)} scheduled faults took "
                                           f"effect" if schedule else ""))
        if not unfaithful:
            return text + "."
        return (text + f", but the fidelity of {', '.join(unfaithful)} is not \"ok\": its "
                "times and recovery times measure this machine's CPU, not the fabric (the "
                "fidelity box above says what to do).")
    if not_effective and all(ok or "NOT" not in text for ok, text in statuses):
        return ("The data verified, but a scheduled fault did not take effect: the recovery "
                "numbers do not measure the schedule as written.")
    return "This run did not verify: see below before trusting any number in it."


def _cpu_lines(run: m.RunAnalysis) -> list[str]:
    """Each transport's CPU load, read through its fidelity verdict (analysis/cpu_usage.py)."""
    out = []
    for name, td in run.transports.items():
        cpu = (td.summary or {}).get("cpu")
        if isinstance(cpu, dict):
            verdict = verdict_of(td.summary)
            verdict = None if verdict == NOT_ASSESSED else verdict
            bad = verdict not in (None, OK) or (verdict is None and cpu.get("saturated"))
            out.append(f"<p class='{'bad-text' if bad else 'muted'}'>"
                       f"{_esc(cpu_usage.describe(name, cpu, verdict))}</p>")
    return out


def _void_reason(td: m.TransportData, fault: runmodel.Fault) -> str | None:
    """Why a stall voided this fault's recovery time, None when it stands."""
    return void_by_entry(td.model, td.summary).get(fault.entry)


def _recovery_value(td: m.TransportData, fault: runmodel.Fault) -> str:
    """A fault's recovery time in the report's table; void (with the reason on hover) when a
    stall inside its recovery window voided it."""
    why = _void_reason(td, fault)
    value = "never" if fault.recovery_ms is None else _ms(fault.recovery_ms)
    return (f"<span class='bad-text' title='{_esc(why)}'>{value} void</span>" if why else value)


def verdict_html(run: m.RunAnalysis, out_dir: Path) -> str:
    """The report's opening: did the run verify, what failed when, how long each transport took
    to recover, which faults did not take effect and why."""
    statuses = [transport_status(td) for td in run.transports.values()]
    not_effective = [(name, f) for name, td in run.transports.items()
                     for f in td.model.not_effective]
    verified = all(ok for ok, _ in statuses) and not not_effective
    unfaithful = [n for n, td in run.transports.items() if verdict_of(td.summary) != OK]
    all_ok = verified and not unfaithful
    schedule = _schedule(run)
    names = list(run.transports)
    headline = _headline(names, statuses, not_effective, schedule, unfaithful)
    parts = [f"<div class='verdict{'' if all_ok else ' bad'}'>",
             f"<p class='headline'>{_esc(headline)}</p>"]
    parts += [f"<p class='{'' if ok else 'bad-text'}'>{_esc(text)}</p>" for ok, text in statuses]
    for name, td in run.transports.items():
        for p in _strings((td.summary or {}).get("problems")) or []:
            if "did not take effect" not in p:
                parts.append(f"<p class='bad-text'>{_esc(name)}: {_esc(p)}</p>")
    parts += _cpu_lines(run)
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
                tds.append(f"<td>{_recovery_value(run.transports[n], mine)}{at}</td>")
            rows.append(f"<tr><td>{f.entry}</td><td class='text'>{_esc(f.label())}</td>"
                        f"<td class='text'>{_esc(f.when)}</td>{''.join(tds)}</tr>")
        parts.append("<div class='tablewrap'><table><tr><th>#</th><th class='text'>fault</th>"
                     f"<th class='text'>scheduled</th>{head}</tr>{''.join(rows)}</table></div>")
        parts.append("<p class='muted'>Recovery: time from the fault until the goodput of all "
                     "hosts stays at or above 90% of what the surviving capacity allows (pre-fault "
                     "steady goodput x the share of the collective's top rate the surviving "
                     "links allow, analysis/recovery.py), over windows of "
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
            rows[name] = {"iterations": len(times), "mean (ms)": times.mean(),
                          "median (ms)": times.median(),
                          "99th percentile (ms)": times.quantile(0.99),
                          "slowest (ms)": times.max()}
    return pd.DataFrame(rows).T


def _retransmissions(run: m.RunAnalysis) -> pd.DataFrame:
    frames = []
    for name, td in run.transports.items():
        rc = m.retransmission_causes(td.events)
        if len(rc):
            frames.append(rc.groupby("reason", observed=True)["count"].sum().rename(name))
    return pd.concat(frames, axis=1).fillna(0).astype(int) if frames else pd.DataFrame()


BUSIEST_PORTS = 3


def _busy_ports(name: str, ports: pd.DataFrame) -> str | None:
    """One sentence per transport for the switch-port counters, not a table per port: how
    many ports marked, trimmed or dropped, and the busiest few (the trimming figure has them
    all)."""
    if len(ports) == 0:
        return None
    busy = ports[(ports["marked"] > 0) | (ports["trimmed"] > 0) | (ports["dropped"] > 0)]
    if len(busy) == 0:
        return f"{name}: no switch port marked, trimmed or dropped a packet."
    top = busy.sort_values(["trimmed", "marked"], ascending=False).head(BUSIEST_PORTS)
    shown = "; ".join(f"{r.port} {int(r.marked):,} marked, {int(r.trimmed):,} trimmed"
                      + (f", {int(r.dropped):,} dropped" if r.dropped else "")
                      for r in top.itertuples(index=False))
    more = f" and {len(busy) - len(top)} more" if len(busy) > len(top) else ""
    return (f"{name}: {len(busy)} of {len(ports)} switch ports marked, trimmed or dropped; "
            f"the busiest: {shown}{more}.")


def details_html(run: m.RunAnalysis) -> str:
    parts = ["<h2>Transports side by side</h2>" + _table(_side_by_side(run)),
             "<h3>Iteration times</h3>" + _table(_iteration_summary(run)),
             "<h3>Retransmissions by cause</h3>" + _table(_retransmissions(run))]
    jain = [f"{name}: Jain index over planes {lb['plane_jain']:.3f}, over paths "
            f"{lb['path_jain']:.3f} ({len(td.packets)} {PACKET_KIND.get(name, name)} packets "
            f"captured)"
            for name, td in run.transports.items() if len(td.packets)
            for lb in [m.load_balance(td.packets)]]
    if jain:
        parts.append("<h3>Load balance</h3><ul>" + "".join(f"<li>{_esc(j)}</li>" for j in jain)
                     + "</ul>")
    trim_rows = tr.comparison_rows([{"transport": n, **(td.summary or {})}
                                    for n, td in run.transports.items()
                                    if (td.summary or {}).get("trimming") is not None])
    if len(trim_rows):
        table = trim_rows.astype(object).where(trim_rows.notna(), None).T
        parts.append("<h3>In-fabric trimming and queue-based ECN</h3><p>Switch-port counters "
                     "(trim_counters.json), NACKs and EV health from the endpoint logs; the "
                     "victim flow's goodput from its destination's worker log.</p>"
                     + _table(table))
        lines = [_busy_ports(name, tr.port_table(tr.load_trim_counters(td.directory)))
                 for name, td in run.transports.items()]
        parts.append("<ul>" + "".join(f"<li>{_esc(x)}</li>" for x in lines if x) + "</ul>")
    parts.append("<h3>Fault schedule per transport</h3>")
    for name, td in run.transports.items():
        rec = m.recovery_table(td.model)
        if len(rec):
            parts.append(f"<h4>{_esc(name)}</h4>" + _table(
                rec.drop(columns=["when"]).rename(columns={"entry": "#"}).reset_index(drop=True)))
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
    safe_write.ensure_dir(out_path.parent)
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
            parts.append(f"<figure><figcaption>{_esc(caption(name))}</figcaption>"
                         f"{_img(p, caption(name))}</figure>")
    parts.append(details_html(run))
    parts.append("</body></html>")
    safe_write.write_text(out_path, "\n".join(parts))
    return out_path
