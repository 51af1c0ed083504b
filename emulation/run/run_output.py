"""What a run prints and writes as tables: iterations.csv and goodput.csv of one transport, and
the comparison table of the transports run."""
from __future__ import annotations

import csv
from pathlib import Path

from analysis.fidelity_words import recovery_cell   # pure: the one way a recovery is shown


def write_csvs(tdir: Path, model) -> None:
    with open(tdir / "iterations.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["iter", "host", "start_ns", "end_ns", "bytes", "verified"])
        for row in model.rank_iterations:
            w.writerow(row)
    with open(tdir / "goodput.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_ns", "rx_bytes_all_hosts"])
        for t, b in model.samples:
            w.writerow([int(t), int(b)])


def _fmt(value, digits=1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _faults_cell(s: dict) -> str:
    """'2/2' when every scheduled fault took effect, '1/2 !' when one did not, '-' for none."""
    scheduled = s.get("faults_scheduled")
    if not scheduled:
        return "-"
    applied = s.get("faults_applied") or 0
    return f"{applied}/{scheduled}" + ("" if s.get("faults_ok", applied == scheduled) else " !")


def _fidelity_cell(s: dict) -> str:
    """The transport's fidelity verdict (analysis/fidelity.py), '-' when not assessed."""
    return (s.get("fidelity") or {}).get("verdict") or "-"


def denial_lines(s: dict) -> list[str]:
    """What the control plane denied in this transport's run, the first with the time from the
    first fault to it (summary.json `denied`, `detection_ms`)."""
    out = []
    for i, d in enumerate(s.get("denied") or []):
        what = ", ".join(f"{k} {d[k]}" for k in ("link", "plane", "t1", "ev") if k in d)
        when = (f", {s['detection_ms']:.0f} ms after the fault"
                if i == 0 and s.get("detection_ms") is not None else "")
        out.append(f"{s['transport']}: denied {what}{when} ({d.get('reason') or 'no reason'})")
    return out


def comparison_table(summaries: list[dict]) -> str:
    """The terminal table, then one line per problem a user must know (faults that did not take
    effect, errors), drawn from the summaries (which come from analysis.runmodel). The fidelity
    verdict's own statement, once per transport, is analysis/fidelity_words.transport_line."""
    trim_cols = any("trimming" in s for s in summaries)
    rows = [("transport", "verified", "fidelity", "faults", "mean iter ms", "slowest iter ms",
             "recovery ms", "CPU busy %")
            + (("marked", "trimmed", "queue drops", "NACKs", "ASSUMED_BAD", "victim_Mbit/s")
               if trim_cols else ())]
    for s in summaries:
        rec, void = s.get("recovery_ms") or [], s.get("recovery_void") or []
        rec_text = ", ".join(recovery_cell(r, void[i] if i < len(void) else None)
                             for i, r in enumerate(rec)) or "-"
        verified = "yes" if s.get("verified") else ("PARTIAL" if s.get("partial") else "NO")
        trim = (tuple("-" if s.get(k) is None else str(s[k])
                      for k in ("marked", "trimmed", "queue_drops", "nacks_sent", "ev_assumed_bad"))
                + (_fmt(s.get("victim_goodput_mbit")),)) if trim_cols else ()
        cpu = s.get("cpu")
        cpu_text = "-" if not cpu else f"{100 * cpu['busy_fraction']:.0f}"
        rows.append((s["transport"], verified, _fidelity_cell(s), _faults_cell(s),
                     _fmt(s.get("mean_iteration_ms")),
                     _fmt(s.get("slowest_iteration_ms")), rec_text, cpu_text) + trim)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for s in summaries:
        lines += [f"{s['transport']}: {p}" for p in s.get("problems") or []]
    for s in summaries:
        lines += denial_lines(s)
    scales = sorted({s.get("time_scale") or 1.0 for s in summaries})
    if scales != [1.0]:
        lines.append(f"time_scale {', '.join(f'{k:g}' for k in scales)}: the fabric ran that many "
                     "times slower than the wall clock; times are the emulated world's, rates "
                     "the declared ones (emulation/calibration/time_scale.py)")
    return "\n".join(lines)
