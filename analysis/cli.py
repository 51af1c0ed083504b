"""`mrclab analyze <run-dir|latest>` and `mrclab notebook [run-dir|latest]`.

analyze: loads the run, writes figures/<name>.png and report.html into <run-dir>/analysis/,
prints the transport comparison and what could not be read. notebook: executes
analysis/notebooks/mrc_run.ipynb with nbclient on the run (its `parameters` cell, overridden
the way papermill does, `-p NAME VALUE`) and saves the executed copy as
<run-dir>/analysis/mrc_run.ipynb and mrc_run.html.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from analysis import fidelity_words, metric_names, metrics, nccl_results, plots, report
from analysis import safe_write
from analysis.logs import read_json, resolve_run
from model.argtypes import UsageError, add_renamed, positive_float

NOTEBOOK = Path(__file__).with_name("notebooks") / "mrc_run.ipynb"


def analyze(run_dir, out_dir=None, bin_ms: float = 10.0) -> dict:
    """Analyse one run; returns {"report": Path, "figures": {name: Path}, "comparison": DataFrame,
    "nccl", "problems", "summaries"}."""
    run_dir = resolve_run(run_dir)
    safe_write.check_run_dir(run_dir)
    out_dir = Path(out_dir) if out_dir else run_dir / "analysis"
    run = metrics.load_run(run_dir, bin_ms=bin_ms)
    if not run.transports:
        raise FileNotFoundError(f"{run_dir}: no transport data (pcaps or JSONL logs) found")
    figs = plots.save_all(run, out_dir / "figures")
    rep = report.write_report(run, figs, out_dir / "report.html")
    nccl = {}
    for name, td in run.transports.items():
        try:
            nccl[name] = nccl_results.transport_result(td.directory, td.model)
        except (OSError, ValueError):   # no worker.json (not written by the runner): no row
            continue
    return {"report": rep, "figures": figs, "comparison": with_verdicts(
                metrics.compare_transports(run), run),
            "nccl": nccl, "problems": {n: t.problems for n, t in run.transports.items()},
            "summaries": {n: t.summary or {"transport": n} for n, t in run.transports.items()}}


def with_verdicts(comparison, run):
    """The comparison with each transport's fidelity verdict, time scale and the number of
    recovery times a stall voided (analysis/fidelity_words.py): every output of analyze carries
    the verdict beside the numbers it judges."""
    out = comparison.copy()
    if not len(out):
        return out
    summaries = [run.transports[n].summary if n in run.transports else None for n in out.index]
    out["fidelity"] = [fidelity_words.verdict_of(s) for s in summaries]
    out["time_scale"] = [fidelity_words.time_scale_of(s) for s in summaries]
    out["recovery_void"] = [len(fidelity_words.void_faults(s)) for s in summaries]
    return out


# the comparison's columns the readable table shows (digits None: text), under the headings of
# analysis/metric_names.py, the console's
READABLE_COLUMNS = (("fidelity", "fidelity", None),
                    *((key, metric_names.HEADERS[key], 1) for key in (
                        "median_iteration_ms", "slowest_iteration_ms", "busbw_mbit",
                        "goodput_sum_mbit")),
                    ("retransmissions", metric_names.HEADERS["retransmissions"], 0),
                    ("recovery_max_ms", "max rec. ms", 0))


def readable_table(comparison) -> str:
    """The headline metrics, one line per transport, within 100 columns."""
    present = [c for c in READABLE_COLUMNS if c[0] in comparison.columns]
    lines = [["transport"] + [head for _, head, _ in present]]
    for name, row in comparison.iterrows():
        cells = [str(name)]
        for col, _, digits in present:
            v = row[col]
            cells.append("-" if v is None or v != v else str(v) if digits is None
                         else f"{float(v):g}" if col == "time_scale" else f"{float(v):.{digits}f}")
        lines.append(cells)
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(c.rjust(w) if i else c.ljust(w)
                                for i, (c, w) in enumerate(zip(line, widths))).rstrip()
                      for line in lines)


def machine_readable(res: dict) -> dict:
    """{transport: {comparison metrics..., "nccl": nccl-tests row}} with NaN as None (JSON)."""
    out = {}
    for name, row in res["comparison"].to_dict(orient="index").items():   # keeps column types
        values = {k: (None if isinstance(v, float) and v != v else
                      v.item() if hasattr(v, "item") else v) for k, v in row.items()}
        out[str(name)] = {**values, "nccl": res["nccl"].get(name)}
    return out


def csv_text(res: dict) -> str:
    """One CSV row per transport: the nccl-tests columns, then the comparison's."""
    import csv
    import io
    data = machine_readable(res)
    metric_cols = sorted({k for v in data.values() for k in v if k != "nccl"})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["transport"] + list(nccl_results.ROW_KEYS) + metric_cols)
    for name, values in data.items():
        row = values.get("nccl") or {}
        w.writerow([name] + ["" if row.get(k) is None else row[k] for k in nccl_results.ROW_KEYS]
                   + ["" if values.get(k) is None else values[k] for k in metric_cols])
    return buf.getvalue()


def add_analyze_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `mrclab analyze`, declared on the CLI's subparser (or a standalone one)."""
    parser.add_argument("run", nargs="?", default="latest",
                        help="run directory or 'latest' (default: the newest under results/)")
    parser.add_argument("--out-dir", metavar="DIR",
                        help="where figures/ and report.html go (default: <run>/analysis)")
    add_renamed(parser, "--out", "--out-dir")
    parser.add_argument("--bin-ms", type=positive_float, default=10.0,
                        help="time bin of the rate series in ms (default 10)")
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true",
                     help="print every transport's metrics and nccl-tests row as JSON")
    fmt.add_argument("--csv", action="store_true",
                     help="print one CSV row per transport (nccl-tests columns first)")
    parser.add_argument("--wide", action="store_true",
                        help="also print the nccl-tests row of each transport (as `mrclab run "
                             "--wide`)")
    fmt.add_argument("--brief", action="store_true",
                     help="print only where the figures and the report went (`make demo`: the "
                          "run has just printed the table)")


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
        res = analyze(args.run, args.out_dir, args.bin_ms)
    except OSError as exc:      # no run there, or the run / output directory is not usable
        print(f"mrclab analyze: {exc}", file=sys.stderr)
        return 2
    if getattr(args, "json", False):
        import json
        print(json.dumps(machine_readable(res), indent=2))
        return 0
    if getattr(args, "csv", False):
        print(csv_text(res), end="")
        return 0
    if not getattr(args, "brief", False):
        print(readable_table(res["comparison"]))
        for name, s in res["summaries"].items():    # the console's statement, once each
            print(fidelity_words.transport_line({"transport": name, **s},
                                                lead=metric_names.takeaway(s) if "verified" in s
                                                else None))
        if getattr(args, "wide", False):
            print(nccl_results.table(res["nccl"]))
    for name, probs in res["problems"].items():
        if probs:
            print(f"{name}: {len(probs)} unreadable input item(s), e.g. {probs[0]}")
    print(f"figures: {len(res['figures'])} in {Path(res['report']).parent / 'figures'}")
    print(f"report:  {res['report']}")
    return 0


def parameter_value(text: str):
    """A -p value as papermill's command line reads it: True/False/None, an integer, a float,
    else the string itself."""
    if text in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[text]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def check_parameter_kinds(source: str, parameters: dict) -> None:
    """UsageError when a -p value is not of its parameter's kind: a parameter whose default
    in the `parameters` cell is a number takes a number (BIN_MS abc would fail in a cell)."""
    import ast
    defaults = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            try:
                defaults[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    for name, value in parameters.items():
        default = defaults.get(name)
        numeric = isinstance(default, (int, float)) and not isinstance(default, bool)
        if numeric and (isinstance(value, bool) or not isinstance(value, (int, float))
                        or value != value or value in (float("inf"), float("-inf"))):
            raise UsageError(f"-p {name} {str(value)[:40]!r}: {name} is a number (default "
                             f"{default!r})")


ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def notebook_parameters(nb) -> tuple[int, list[str]]:
    """(index of the cell tagged `parameters`, the names it assigns)."""
    import ast
    for i, cell in enumerate(nb.cells):
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            tree = ast.parse(cell.source)
            names = [t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                     for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                     if isinstance(t, ast.Name)]
            return i, names
    raise ValueError(f"{NOTEBOOK}: no cell tagged `parameters`")


def notebook_title(run_dir: Path) -> str:
    """The executed notebook's page title: the scenario it read (summary.json) and the run."""
    scenario = (read_json(Path(run_dir) / "summary.json") or {}).get("scenario")
    name = Path(run_dir).name
    return f"MRC lab: {scenario} ({name})" if isinstance(scenario, str) else f"MRC lab: {name}"


def run_notebook(run_dir, out_dir=None, timeout_s: int = 600,
                 parameters: dict | None = None) -> Path:
    """Execute the analysis notebook on run_dir and save it executed, as mrc_run.ipynb in
    out_dir (default <run>/analysis) and as mrc_run.html beside it (readable without Jupyter).
    The run and `parameters` are passed the way papermill does: a cell tagged
    `injected-parameters` after the one tagged `parameters`; a name that cell does not assign is
    a UsageError. The kernel talks to nbclient over IPC sockets (no TCP port, so no unencrypted
    network transport). Raises nbclient's CellExecutionError on a failing cell."""
    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter
    run_dir = safe_write.check_run_dir(resolve_run(run_dir))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    at, known = notebook_parameters(nb)
    values = {"RUN": str(run_dir), **(parameters or {})}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise UsageError(f"-p {unknown[0]}: not a parameter of the notebook; its parameters: "
                         f"{', '.join(known)}")
    check_parameter_kinds(nb.cells[at].source, parameters or {})
    source = "\n".join(["# Injected by mrclab notebook"]
                       + [f"{name} = {value!r}" for name, value in values.items()])
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(
        source, metadata={"tags": ["injected-parameters"]}))
    out_dir = Path(out_dir) if out_dir else run_dir / "analysis"
    safe_write.ensure_dir(out_dir)
    import tempfile
    with tempfile.TemporaryDirectory(prefix="mrclab-kernel-") as sockets:
        km = KernelManager(kernel_name="python3", transport="ipc",
                           ip=str(Path(sockets) / "kernel"))
        # the kernel's working directory is on its sys.path: never the run directory (a
        # planted matplotlib.py there would run as the caller), but an empty one of ours
        cwd = Path(sockets) / "cwd"
        cwd.mkdir(mode=0o700)
        try:
            NotebookClient(nb, km=km, timeout=timeout_s, kernel_name="python3",
                           resources={"metadata": {"path": str(cwd)}}).execute()
        finally:                # a kernel manager we pass in is ours to shut down
            if km.has_kernel:
                km.shutdown_kernel(now=True)
    out_path = out_dir / "mrc_run.ipynb"
    safe_write.write_text(out_path, nbformat.writes(nb))
    html, _ = HTMLExporter().from_notebook_node(
        nb, resources={"metadata": {"name": notebook_title(run_dir)}})
    safe_write.write_text(out_path.with_suffix(".html"), html)
    return out_path


def add_notebook_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `mrclab notebook`."""
    parser.add_argument("run", nargs="?", default="latest",
                        help="run directory or 'latest' (default: the newest under results/)")
    parser.add_argument("--out-dir", metavar="DIR",
                        help="where mrc_run.ipynb and mrc_run.html go (default: <run>/analysis)")
    add_renamed(parser, "--out", "--out-dir")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                        metavar=("NAME", "VALUE"),
                        help="set a parameter of the notebook's `parameters` cell, as papermill "
                             "does (e.g. -p BIN_MS 20); repeatable")


def notebook_main(args=None) -> int:
    """`mrclab notebook`."""
    args = _parsed(args, "mrclab notebook", "execute the analysis notebook on a run",
                   add_notebook_arguments)
    try:
        out = run_notebook(args.run, args.out_dir, parameters={
            name: parameter_value(value) for name, value in args.parameter})
    except (FileNotFoundError, UsageError, safe_write.UnsafePath) as exc:
        print(f"mrclab notebook: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:   # a failing cell: name it, exit non-zero
        text = ANSI_ESCAPE.sub("", str(exc))    # cut after stripping: never inside an escape
        print(f"mrclab notebook: a cell failed: {text[-2000:]}", file=sys.stderr)
        return 1
    print(f"executed notebook: {out}")
    print(f"as HTML:           {Path(out).with_suffix('.html')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
