"""`mrclab sweep FILE [--short] [--out-dir DIR]`: run every point of a sweep (emulation/config/sweep_plan.py)
for every transport and repeat, one `mrclab run` each, and write the tidy table and the curves.

    <DIR>/                      default results/sweeps/<name>[-short]/ (no time stamp: running
        sweep.toml              the same sweep again resumes it); a copy of the sweep file
        points/p000-r1/
            scenario.toml       the point's scenario (base + [set] + the point's values)
            <transport>/<run>/  the run directory of `mrclab run --transport <transport>`
            <transport>.json    done marker: the run's tidy row, written when the run ended
        sweep.csv, sweep.parquet  one row per point x transport x repeat
        curves.csv              mean and 95% interval per point and transport
        figures/<metric>.png    each metric against the swept parameter

Resuming: a (point, repeat, transport) with its done marker is not run again; one without (an
interrupted run) is run anew. A directory holding a different sweep file is refused.
Every file is written through analysis/safe_write.py (never through a link planted at its name or
on its directory's path) and read back only if it is a regular file of bounded size.
Exit codes: 0 every run verified; 1 some run did not verify (its row says so); 2 a bad sweep
file or output directory; 130 interrupted (the tables cover the finished runs).
"""
from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

from analysis import safe_write, sweep_stats
from emulation.config import sweep_plan
from emulation.config.sweep_plan import SweepError
from model.argtypes import add_renamed
from model.results import results_dir
from model.clip import clip_values
from model.safe_read import read_regular
from emulation.cli_common import EXIT_INTERRUPTED

MAX_ROW_BYTES = 1 << 20      # a done marker is one row of a few hundred bytes

EXIT_OK, EXIT_NOT_VERIFIED, EXIT_BAD_SWEEP = 0, 1, 2
RUN_EXIT_BAD_SCENARIO = 2   # emulation/run/run_summary.py's


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="sweep file (TOML), e.g. experiments/sweeps/random-loss.toml")
    parser.add_argument("--short", action="store_true",
                        help="the sweep's [short] version over the scenario's short version")
    parser.add_argument("--out-dir", help="sweep directory (default results/sweeps/<name>[-short]); "
                                      "an existing one of the same sweep is resumed")
    add_renamed(parser, "--out", "--out-dir")
    parser.add_argument("--validate-only", action="store_true",
                        help="check the sweep file and every point's scenario, print what would "
                             "run, and exit (no fabric, no root needed)")


def _param_columns(sweep, point) -> dict:
    """The point's identity in its rows: index, x and every grid key's value (non-scalars as
    JSON text, so the tables keep one type per column)."""
    out = {"point": point.index, "x": point.x}
    for k, v in point.values.items():
        out[k] = v if isinstance(v, (int, float, str, bool)) else json.dumps(v)
    return out


def run_point(sweep, point, repeat: int, transport: str, pdir: Path) -> dict:
    """Run one (point, repeat, transport) and return its row; raises SweepError when the
    runner refuses the scenario and KeyboardInterrupt when the run was interrupted."""
    from emulation.run import runner  # deferred: the run's machinery, only when a run starts
    out = safe_write.ensure_dir(pdir / transport)
    before = set(out.iterdir())
    argv = [str(pdir / "scenario.toml"), "--transport", transport, "--out-dir", str(out)]
    if sweep.short:
        argv.append("--short")
    code = runner.main(argv)
    if code == RUN_EXIT_BAD_SCENARIO:
        raise SweepError(f"{pdir / 'scenario.toml'}: the runner refused the scenario (see above)")
    if code == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    new = sorted(p for p in out.iterdir() if p not in before and p.is_dir())
    run_dir = new[-1] if new else None
    if run_dir is None:
        return {**_param_columns(sweep, point), "repeat": repeat, "transport": transport,
                "verified": False, "fidelity": "unknown", "run_dir": None}
    rows = sweep_stats.rows_of_run(run_dir, [transport], _param_columns(sweep, point), repeat)
    return {**rows[0], "run_exit_code": code}


def run_sweep(sweep, out: Path, log=print, progress=None) -> tuple[list[dict], bool]:
    """Every (point, repeat, transport) not done yet, in turn. Returns (all rows done,
    interrupted). Before each run its place is written to <out>/progress.json (what `mrclab
    top` shows of a sweep) and, with `progress`, progress.start(run, total, point, repeat,
    transport) is called; after it progress.done(row)."""
    rows: list[dict] = []
    total = len(sweep.points) * sweep.repeats * len(sweep.transports)
    n = 0
    for point in sweep.points:
        for repeat in range(1, sweep.repeats + 1):
            pdir = safe_write.ensure_dir(out / "points" / f"{point.label}-r{repeat}")
            safe_write.write_text(pdir / "scenario.toml", sweep.scenario_text(point))
            for transport in sweep.transports:
                n += 1
                marker = pdir / f"{transport}.json"
                if marker.exists():
                    rows.append(json.loads(read_regular(marker, MAX_ROW_BYTES)))
                    continue
                values = ", ".join(f"{k} = {v!r}" for k, v in point.values.items())
                log(f"mrclab sweep: [{n}/{total}] {point.label} ({values}) repeat {repeat} "
                    f"{transport}", file=sys.stderr, flush=True)
                write_progress(out, sweep, {"run": n, "total": total, "done": len(rows),
                                            "point": point.label, "values": values,
                                            "repeat": repeat, "transport": transport,
                                            "run_parent": str(pdir / transport)})
                if progress is not None:
                    progress.start(n, total, point, repeat, transport)
                try:
                    row = run_point(sweep, point, repeat, transport, pdir)
                except KeyboardInterrupt:
                    write_progress(out, sweep, {"status": "interrupted", "total": total,
                                                "done": len(rows)})
                    return rows, True
                safe_write.write_text(marker, json.dumps(row, indent=2))
                rows.append(row)
                if progress is not None:
                    progress.done(row)
    write_progress(out, sweep, {"status": "finished", "total": total, "done": len(rows)})
    return rows, False


def write_progress(out: Path, sweep, fields: dict) -> None:
    """<out>/progress.json: the sweep's name and where it stands (status "running" with the
    run under way, or "finished" / "interrupted"), replaced whole so a reader never sees half."""
    record = {"sweep": sweep.name, "short": sweep.short, "status": "running", **fields}
    tmp = out / "progress.json.tmp"
    try:
        tmp.write_text(json.dumps(record))
        tmp.replace(out / "progress.json")
    except OSError:
        pass          # the live view's file: a sweep runs on without it


def _columns(rows: list[dict]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    return cols


def _uniform(rows: list[dict], cols: list[str]) -> list[dict]:
    """Rows with one type per column (Parquet's rule): ints beside floats become floats, any
    other mix becomes text."""
    out = [dict(r) for r in rows]
    for c in cols:
        kinds = {type(r.get(c)) for r in out if r.get(c) is not None}
        if kinds <= {int, float} and float in kinds:
            for r in out:
                if r.get(c) is not None:
                    r[c] = float(r[c])
        elif len(kinds - {bool}) > 1 or (bool in kinds and len(kinds) > 1):
            for r in out:
                if r.get(c) is not None:
                    r[c] = str(r[c])
    return out


def write_tables(sweep, rows: list[dict], out: Path) -> dict:
    """sweep.csv, sweep.parquet, curves.csv and the figures; returns their paths."""
    import csv
    sweep_stats.add_slowdown(rows, sweep.baseline)
    cols = _columns(rows)
    rows = _uniform(rows, cols)
    text = io.StringIO(newline="")
    w = csv.DictWriter(text, fieldnames=cols)
    w.writeheader()
    w.writerows({c: r.get(c) for c in cols} for r in rows)
    safe_write.write_text(out / "sweep.csv", text.getvalue())
    import pyarrow as pa
    import pyarrow.parquet as pq
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist([{c: r.get(c) for c in cols} for r in rows]), sink)
    safe_write.write_bytes(out / "sweep.parquet", sink.getvalue().to_pybytes())
    curves = sweep_stats.aggregate(rows, [k for k in sweep.grid if k != sweep.x])
    text = io.StringIO(newline="")
    w = csv.DictWriter(text, fieldnames=_columns(curves))
    w.writeheader()
    w.writerows(curves)
    safe_write.write_text(out / "curves.csv", text.getvalue())
    figures = {}
    for metric in sweep_stats.FIGURE_METRICS:
        path = sweep_stats.plot(curves, metric, sweep.x_label, f"{sweep.name}: "
                                f"{sweep_stats.LABELS[metric]}", out / "figures" / f"{metric}.png")
        if path is not None:
            figures[metric] = path
    return {"csv": out / "sweep.csv", "parquet": out / "sweep.parquet",
            "curves": out / "curves.csv", "figures": figures, "aggregated": curves}


def curve_table(curves: list[dict]) -> str:
    """x, transport, repeats, trusted, mean iteration, busbw and slowdown: within 100 columns."""
    def cell(v, digits):
        return "-" if v is None else f"{v:.{digits}f}"
    lines = [("series", "x", "runs", "fidelity ok", "mean iter ms", "busbw GB/s", "slowdown",
              "recovery ms")]
    for a in curves:
        lines.append((a["series"], f"{a['x']:g}", str(a["n"]), "yes" if a["trusted"] else "no",
                      cell(a["time_mean_ms"], 1), cell(a["busbw_GBps"], 4),
                      cell(a["slowdown"], 2), cell(a["recovery_max_ms"], 0)))
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip()
                     for line in lines)


def claim_dir(sweep, out: Path, source) -> str | None:
    """Make `out` this sweep's directory (a copy of the sweep file in it); what is wrong
    instead: it holds another sweep, or it cannot be written."""
    copy = out / "sweep.toml"
    try:
        safe_write.ensure_dir(out)
        old = read_regular(copy, MAX_ROW_BYTES).decode(errors="replace") if copy.exists() else None
        if old is not None and old != sweep.text:
            return (f"{out} holds another sweep (its sweep.toml differs from {source}); give "
                    f"another --out-dir or remove it")
        safe_write.write_text(copy, sweep.text)
    except OSError as exc:
        return f"cannot use {out}: {exc}"
    return None


def main(args=None) -> int:
    if not isinstance(args, argparse.Namespace):
        parser = argparse.ArgumentParser(prog="mrclab sweep", description=__doc__.splitlines()[0])
        add_arguments(parser)
        args = parser.parse_args(sys.argv[1:] if args is None else args)
    try:
        sweep = sweep_plan.load(args.file, short=args.short)
    except SweepError as exc:
        print(f"mrclab sweep: {clip_values(str(exc))}", file=sys.stderr)
        return EXIT_BAD_SWEEP
    if getattr(args, "validate_only", False):
        runs = len(sweep.points) * sweep.repeats * len(sweep.transports)
        print(f"{args.file}: valid sweep {sweep.name!r}: {len(sweep.points)} point(s) x "
              f"{sweep.repeats} repeat(s) x {len(sweep.transports)} transport(s) "
              f"({', '.join(sweep.transports)}) = {runs} run(s)")
        return EXIT_OK
    out = Path(args.out_dir) if args.out_dir else (results_dir() / "sweeps"
                                           / (sweep.name + ("-short" if sweep.short else "")))
    problem = claim_dir(sweep, out, args.file)
    if problem:
        print(f"mrclab sweep: {problem}", file=sys.stderr)
        return EXIT_BAD_SWEEP
    try:
        rows, interrupted = run_sweep(sweep, out)
        if not rows:
            print("mrclab sweep: interrupted before any run finished", file=sys.stderr)
            return EXIT_INTERRUPTED
        written = write_tables(sweep, rows, out)
    except SweepError as exc:
        print(f"mrclab sweep: {exc}", file=sys.stderr)
        return EXIT_BAD_SWEEP
    except OSError as exc:      # safe_write's refusals (a planted link) and the disk's errors
        print(f"mrclab sweep: cannot write into {out}: {clip_values(str(exc))}", file=sys.stderr)
        return EXIT_BAD_SWEEP
    print(curve_table(written["aggregated"]))
    print(f"table:   {written['csv']} (and sweep.parquet, curves.csv)")
    print(f"figures: {len(written['figures'])} in {out / 'figures'}")
    if interrupted:
        print("mrclab sweep: interrupted; run it again to finish (finished runs are kept)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK if all(r.get("verified") for r in rows) else EXIT_NOT_VERIFIED


if __name__ == "__main__":
    sys.exit(main())
