"""`mrclab analyze <run-dir|latest>` and `mrclab notebook [run-dir|latest]`.

analyze: loads the run, writes figures/<name>.png and report.html into <run-dir>/analysis/,
prints the transport comparison and what could not be read. notebook: executes
analysis/notebooks/mrc_run.ipynb with nbclient on the run (its `parameters` cell, overridden
the way papermill does) and saves the executed copy as <run-dir>/analysis/mrc_run.ipynb and
mrc_run.html.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis import metrics, plots, report, safe_write
from analysis.logs import resolve_run
from model.argtypes import positive_float

NOTEBOOK = Path(__file__).with_name("notebooks") / "mrc_run.ipynb"


def analyze(run_dir, out_dir=None, bin_ms: float = 10.0) -> dict:
    """Analyse one run; returns {"report": Path, "figures": {name: Path}, "comparison": DataFrame}."""
    run_dir = resolve_run(run_dir)
    safe_write.check_run_dir(run_dir)
    out_dir = Path(out_dir) if out_dir else run_dir / "analysis"
    run = metrics.load_run(run_dir, bin_ms=bin_ms)
    if not run.transports:
        raise FileNotFoundError(f"{run_dir}: no transport data (pcaps or JSONL logs) found")
    figs = plots.save_all(run, out_dir / "figures")
    rep = report.write_report(run, figs, out_dir / "report.html")
    return {"report": rep, "figures": figs, "comparison": metrics.compare_transports(run),
            "problems": {n: t.problems for n, t in run.transports.items()}}


def add_analyze_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `mrclab analyze`, declared on the CLI's subparser (or a standalone one)."""
    parser.add_argument("run", nargs="?", default="latest",
                        help="run directory or 'latest' (default: the newest under results/)")
    parser.add_argument("--out", help="output directory (default: <run>/analysis)")
    parser.add_argument("--bin-ms", type=positive_float, default=10.0,
                        help="time bin of the rate series in ms (default 10)")


def _parsed(args, prog: str, description: str, add_arguments) -> argparse.Namespace:
    """args as parsed by the CLI's tree, or parse an argv list (None: sys.argv) here."""
    if isinstance(args, argparse.Namespace):
        return args
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_arguments(parser)
    return parser.parse_args(args)


def main(args=None) -> int:
    """`mrclab analyze`."""
    args = _parsed(args, "mrclab analyze", "figures + HTML report of a run", add_analyze_arguments)
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
    """Execute the analysis notebook on run_dir and save it executed, as .ipynb (out_path,
    default <run>/analysis/mrc_run.ipynb) and as .html beside it (readable without Jupyter).
    The run is passed the way papermill does: a cell tagged `injected-parameters` after the one
    tagged `parameters`. Raises nbclient's CellExecutionError on a failing cell."""
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter
    run_dir = safe_write.check_run_dir(resolve_run(run_dir))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    tagged = [i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", [])]
    injected = nbformat.v4.new_code_cell(f"# Injected by mrclab notebook\nRUN = {str(run_dir)!r}",
                                         metadata={"tags": ["injected-parameters"]})
    nb.cells.insert(tagged[0] + 1 if tagged else 0, injected)
    NotebookClient(nb, timeout=timeout_s, kernel_name="python3",
                   resources={"metadata": {"path": str(run_dir)}}).execute()
    out_path = Path(out_path) if out_path else run_dir / "analysis" / "mrc_run.ipynb"
    safe_write.write_text(out_path, nbformat.writes(nb))
    html, _ = HTMLExporter().from_notebook_node(nb)
    safe_write.write_text(out_path.with_suffix(".html"), html)
    return out_path


def add_notebook_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `mrclab notebook`."""
    parser.add_argument("run", nargs="?", default="latest",
                        help="run directory or 'latest' (default: the newest under results/)")
    parser.add_argument("--out", help="where to save the executed notebook "
                                      "(default: <run>/analysis/mrc_run.ipynb)")


def notebook_main(args=None) -> int:
    """`mrclab notebook`."""
    args = _parsed(args, "mrclab notebook", "execute the analysis notebook on a run",
                   add_notebook_arguments)
    try:
        out = run_notebook(args.run, args.out)
    except (FileNotFoundError, safe_write.UnsafePath) as exc:
        print(f"mrclab notebook: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:   # a failing cell: name it, exit non-zero
        print(f"mrclab notebook: a cell failed: {str(exc)[-2000:]}", file=sys.stderr)
        return 1
    print(f"executed notebook: {out}")
    print(f"as HTML:           {Path(out).with_suffix('.html')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
