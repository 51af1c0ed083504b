"""`mrclab analyze <run-dir|latest>` and `mrclab notebook [run-dir|latest]`.

analyze: loads the run, writes figures/<name>.png and report.html into <run-dir>/analysis/,
prints the transport comparison and what could not be read. notebook: executes
analysis/notebooks/mrc_run.ipynb with nbclient on the run (MRCLAB_RUN env var) and saves the
executed copy as <run-dir>/analysis/mrc_run.ipynb.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

NOTEBOOK = Path(__file__).with_name("notebooks") / "mrc_run.ipynb"


def analyze(run_dir, out_dir=None, bin_ms: float = 10.0) -> dict:
    """Analyse one run; returns {"report": Path, "figures": {name: Path}, "comparison": DataFrame}."""
    from analysis import metrics, plots, report
    from analysis.logs import resolve_run
    run_dir = resolve_run(run_dir)
    out_dir = Path(out_dir) if out_dir else run_dir / "analysis"
    run = metrics.load_run(run_dir, bin_ms=bin_ms)
    if not run.transports:
        raise FileNotFoundError(f"{run_dir}: no transport data (pcaps or JSONL logs) found")
    figs = plots.save_all(run, out_dir / "figures")
    rep = report.write_report(run, figs, out_dir / "report.html")
    return {"report": rep, "figures": figs, "comparison": metrics.compare_transports(run),
            "problems": {n: t.problems for n, t in run.transports.items()}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="mrclab analyze", description="figures + HTML report of a run")
    p.add_argument("run", nargs="?", default="latest", help="run directory or 'latest' (default)")
    p.add_argument("--out", help="output directory (default: <run>/analysis)")
    p.add_argument("--bin-ms", type=float, default=10.0, help="time bin of rate series (ms)")
    args = p.parse_args(argv)
    try:
        res = analyze(args.run, args.out, args.bin_ms)
    except OSError as exc:      # no run there, or the run / output directory is not usable
        print(f"mrclab analyze: {exc}", file=sys.stderr)
        return 2
    import pandas as pd
    with pd.option_context("display.width", 160, "display.max_columns", 30):
        print(res["comparison"].to_string())
    for name, probs in res["problems"].items():
        if probs:
            print(f"{name}: {len(probs)} unreadable input item(s), e.g. {probs[0]}")
    print(f"figures: {len(res['figures'])} in {Path(res['report']).parent / 'figures'}")
    print(f"report:  {res['report']}")
    return 0


def run_notebook(run_dir, out_path=None, timeout_s: int = 600) -> Path:
    """Execute the analysis notebook on run_dir; raises nbclient's CellExecutionError on a failing cell."""
    import nbformat
    from nbclient import NotebookClient
    from analysis.logs import resolve_run
    run_dir = resolve_run(run_dir).resolve()
    nb = nbformat.read(NOTEBOOK, as_version=4)
    old = os.environ.get("MRCLAB_RUN")
    os.environ["MRCLAB_RUN"] = str(run_dir)      # the kernel inherits it
    try:
        NotebookClient(nb, timeout=timeout_s, kernel_name="python3",
                       resources={"metadata": {"path": str(run_dir)}}).execute()
    finally:
        if old is None:
            os.environ.pop("MRCLAB_RUN", None)
        else:
            os.environ["MRCLAB_RUN"] = old
    out_path = Path(out_path) if out_path else run_dir / "analysis" / "mrc_run.ipynb"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out_path)
    return out_path


def notebook_main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="mrclab notebook", description="execute the analysis notebook on a run")
    p.add_argument("run", nargs="?", default="latest")
    p.add_argument("--out", help="where to save the executed notebook")
    args = p.parse_args(argv)
    try:
        out = run_notebook(args.run, args.out)
    except FileNotFoundError as exc:
        print(f"mrclab notebook: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:   # a failing cell: name it, exit non-zero
        print(f"mrclab notebook: a cell failed: {str(exc)[-2000:]}", file=sys.stderr)
        return 1
    print(f"executed notebook: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
