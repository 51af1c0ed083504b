"""What a run prints and writes as tables: iterations.csv and goodput.csv of one transport, and
the comparison table of the transports run."""
from __future__ import annotations

import csv
from pathlib import Path

from analysis import metric_names   # pure: the one definition of each metric
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
    return "-" if value is None or value != value else f"{value:.{digits}f}"


def _faults_cell(s: dict, _m: dict) -> str:
    """'2/2' when every scheduled fault took effect, '1/2 !' when one did not, '-' for none."""
    scheduled = s.get("faults_scheduled")
    if not scheduled:
        return "-"
    applied = s.get("faults_applied") or 0
    return f"{applied}/{scheduled}" + ("" if s.get("faults_ok", applied == scheduled) else " !")


def _fidelity_cell(s: dict, _m: dict) -> str:
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


def _verified_cell(s: dict, _m: dict) -> str:
    return "yes" if s.get("verified") else ("PARTIAL" if s.get("partial") else "NO")


def _recovery_cell(s: dict, m: dict) -> str:
    rec, void = m.get("recovery_ms") or [], s.get("recovery_void") or []
    return ", ".join(recovery_cell(r, void[i] if i < len(void) else None)
                     for i, r in enumerate(rec)) or "-"


def _metric(key: str, digits: int = 1, scale: float = 1.0):
    """A column of the metric `key` (analysis/metric_names.py): its heading and its value."""
    def cell(_s: dict, m: dict) -> str:
        value = m.get(key)
        return _fmt(None if value is None else value * scale, digits)
    return (metric_names.HEADERS[key], cell)


def _summary_count(key: str, heading: str):
    return (heading, lambda s, _m: "-" if s.get(key) is None else str(s[key]))


# The console's columns: (heading, cell of a transport's summary and its metrics). The default
# ones fit CONSOLE_COLUMNS; --wide adds the rest. A column no transport has a value in is left out.
COLUMNS = (("transport", lambda s, _m: s["transport"]), ("verified", _verified_cell),
           ("fidelity", _fidelity_cell), ("faults", _faults_cell),
           _metric("median_iteration_ms"), _metric("slowest_iteration_ms"),
           _metric("busbw_mbit"), ("recovery ms", _recovery_cell),
           _metric("cpu_busy_percent", 0))
WIDE_COLUMNS = (_metric("mean_iteration_ms"), _metric("p99_iteration_ms"),
                _metric("line_rate_fraction", 0, 100.0), _metric("goodput_sum_mbit"),
                _metric("retransmissions", 0), _metric("evs_retired", 0),
                _metric("healthy_evs_retired", 0),
                _summary_count("marked", "marked"), _summary_count("trimmed", "trimmed"),
                _summary_count("queue_drops", "queue drops"),
                _summary_count("nacks_sent", "NACKs"),
                _summary_count("ev_assumed_bad", "ASSUMED_BAD"),
                ("victim Mbit/s", lambda s, _m: _fmt(s.get("victim_goodput_mbit"))))


def comparison_table(summaries: list[dict], wide: bool = False) -> str:
    """The terminal table (the metrics of analysis/metric_names.py under their headings), then
    one line per problem a user must know (faults that did not take effect, errors)."""
    metrics = [metric_names.of_summary(s) for s in summaries]
    columns = [c for c in COLUMNS + (WIDE_COLUMNS if wide else ())
               if c[0] == "transport" or any(c[1](s, m) != "-" for s, m in zip(summaries, metrics))]
    rows = [tuple(head for head, _ in columns)]
    rows += [tuple(cell(s, m) for _, cell in columns) for s, m in zip(summaries, metrics)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(columns))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for s in summaries:
        lines += [f"{s['transport']}: {p}" for p in s.get("problems") or []]
    for s in summaries:
        lines += denial_lines(s)
    scales = sorted({s.get("time_scale") or 1.0 for s in summaries})
    if scales != [1.0]:
        shown = ", ".join(f"{k:g}" for k in scales)
        lines.append(f"time_scale {shown}: times are the emulated world's, rates the declared ones "
                     f"(the fabric ran {shown}x slower)")
    return "\n".join(lines)
