"""`mrclab paper [--short] [--only NAME] [--page-only]`: every shipped sweep
(experiments/sweeps/*.toml with [[paper]] claims) run in full at the time scale each scenario
resolves (the calibrated one, "auto"), then the results page regenerated from their tables.

    results/paper[-short]/<name>/   each sweep's directory (emulation/run/sweep.py: resumable,
                                    sweep.csv, curves, figures, progress.json)
    docs/results/paper/             the kept tables: <name>.csv (the sweep's tidy table, copied
                                    when the sweep has finished), <name>.json (what the sweep
                                    is and its claims), <name>-<metric>.png (the page's figures)
    docs/results/paper.md           the page (analysis/paper_page.py), from the kept tables only

The short version (--short, for tests) keeps its tables and page under results/paper-short/,
never over the full ones. Running it again resumes: finished runs are not run again, and a
sweep whose runs are all done only has its tables and page written. Before each run one line
says where the whole command stands and how long the runs left should take at the mean wall
time of the runs finished so far (the runs' run.json duration_s, and this session's).
--page-only regenerates the page from the kept tables, running nothing (no root needed).

Exit codes: 0 every run verified; 1 a run did not verify; 2 a bad sweep file, an unknown
--only or an unusable directory; 130 interrupted (the page covers the finished sweeps).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from analysis import paper_page
from emulation.config import sweep_plan
from emulation.config.sweep_plan import SweepError
from emulation.run import sweep as sweep_run
from model.clip import clip_values
from emulation.cli_common import EXIT_INTERRUPTED

EXIT_OK, EXIT_NOT_VERIFIED, EXIT_BAD = 0, 1, 2
SWEEPS_DIR = Path(__file__).resolve().parents[2] / "experiments" / "sweeps"
FULL_TABLES, FULL_PAGE = Path("docs/results/paper"), Path("docs/results/paper.md")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--short", action="store_true",
                        help="every sweep's [short] version (tests); tables and page under "
                             "results/paper-short/")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only this sweep (a file name of experiments/sweeps/ without "
                             ".toml); repeatable. The page still lists every sweep")
    parser.add_argument("--page-only", action="store_true",
                        help="regenerate the page from the kept tables; run nothing")
    parser.add_argument("--results-dir", help="where the sweeps' directories go (default "
                                              "results/paper, results/paper-short)")
    parser.add_argument("--tables-dir", help=f"the kept tables (default {FULL_TABLES}, "
                                             f"results/paper-short/tables)")
    parser.add_argument("--page", help=f"the page (default {FULL_PAGE}, "
                                       f"results/paper-short/paper.md)")


def shipped(sweeps_dir: Path = SWEEPS_DIR) -> dict[str, Path]:
    """name -> file of every shipped sweep, in the page's order (by name)."""
    return {p.stem: p for p in sorted(sweeps_dir.glob("*.toml"))}


class Progress:
    """The one line printed before each run: the run's place among all runs of the command,
    the runs left and the time they should take at the mean wall time of the finished ones."""

    def __init__(self, total: int, done: int, walls: list[float], log=print):
        self.total, self.finished, self.walls, self.log = total, done, list(walls), log
        self.sweep, self.started = "", None

    def line(self, point_label: str, repeat: int, transport: str) -> str:
        left = self.total - self.finished
        if self.walls:
            mean = sum(self.walls) / len(self.walls)
            eta = (f"about {paper_page.duration(left * mean)} left "
                   f"({paper_page.duration(mean)} a run, mean of {len(self.walls)})")
        else:
            eta = "time left known after the first run"
        return (f"mrclab paper: run {self.finished + 1} of {self.total} ({self.sweep} "
                f"{point_label} repeat {repeat} {transport}); {left} to go, {eta}")

    def start(self, n, total, point, repeat, transport) -> None:
        self.started = time.monotonic()
        self.log(self.line(point.label, repeat, transport), file=sys.stderr, flush=True)

    def done(self, row: dict) -> None:
        self.done_one(row.get("wall_s") or (time.monotonic() - self.started
                                            if self.started is not None else None))

    def done_one(self, wall: float | None) -> None:
        self.finished += 1
        if wall:
            self.walls.append(float(wall))


def _finished_rows(out: Path) -> list[dict]:
    rows = []
    for marker in out.glob("points/*/*.json"):
        try:
            rows.append(json.loads(marker.read_text()))
        except (OSError, ValueError):
            continue
    return rows


def keep(sweep, name: str, source: Path, out: Path, tables: Path) -> None:
    """Copy a finished sweep's tidy table beside what the page needs to know of it."""
    tables.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(out / "sweep.csv", tables / f"{name}.csv")
    try:
        shown = source.resolve().relative_to(SWEEPS_DIR.parents[1])
    except ValueError:
        shown = source
    meta = {"name": name, "sweep": sweep.name, "description": sweep.description,
            "source": str(shown), "short": sweep.short, "x": sweep.x, "x_label": sweep.x_label,
            "repeats": sweep.repeats, "transports": sweep.transports,
            "series_keys": [k for k in sweep.grid if k != sweep.x],
            "claims": [c.to_json() for c in sweep.claims]}
    (tables / f"{name}.json").write_text(json.dumps(meta, indent=2) + "\n")


def _paths(args) -> tuple[Path, Path, Path]:
    base = Path("results") / ("paper-short" if args.short else "paper")
    results = Path(args.results_dir) if args.results_dir else base
    tables = Path(args.tables_dir) if args.tables_dir else (
        base / "tables" if args.short else FULL_TABLES)
    page = Path(args.page) if args.page else (base / "paper.md" if args.short else FULL_PAGE)
    return results, tables, page


def _load(files: dict[str, Path], chosen: list[str], short: bool) -> dict:
    """Every chosen sweep loaded (each point's scenario validated) before anything runs."""
    return {name: sweep_plan.load(files[name], short=short) for name in chosen}


def run_all(sweeps: dict, files: dict[str, Path], results: Path, tables: Path,
            log=print) -> int:
    """Run every sweep in turn, keeping each finished one's table; the exit code."""
    total = sum(len(s.points) * s.repeats * len(s.transports) for s in sweeps.values())
    done_rows = [r for name in sweeps for r in _finished_rows(results / name)]
    progress = Progress(total, len(done_rows), [r["wall_s"] for r in done_rows
                                                if r.get("wall_s")], log)
    verified = True
    for name, sweep in sweeps.items():
        out = results / name
        problem = sweep_run.claim_dir(sweep, out, files[name])
        if problem:
            log(f"mrclab paper: {problem}", file=sys.stderr)
            return EXIT_BAD
        progress.sweep = name
        rows, interrupted = sweep_run.run_sweep(sweep, out, log=lambda *a, **k: None,
                                                progress=progress)
        if interrupted:
            return EXIT_INTERRUPTED
        sweep_run.write_tables(sweep, rows, out)
        keep(sweep, name, files[name], out, tables)
        verified = verified and all(r.get("verified") for r in rows)
        log(f"mrclab paper: {name} done ({len(rows)} runs): {out}", file=sys.stderr,
            flush=True)
    return EXIT_OK if verified else EXIT_NOT_VERIFIED


def main(args=None) -> int:
    if not isinstance(args, argparse.Namespace):
        parser = argparse.ArgumentParser(prog="mrclab paper", description=__doc__.splitlines()[0])
        add_arguments(parser)
        args = parser.parse_args(sys.argv[1:] if args is None else args)
    files = shipped()
    unknown = [n for n in args.only or [] if n not in files]
    if unknown:
        print(f"mrclab paper: no shipped sweep {', '.join(map(repr, unknown))}; shipped: "
              f"{', '.join(files)}", file=sys.stderr)
        return EXIT_BAD
    results, tables, page = _paths(args)
    code = EXIT_OK
    if not args.page_only:
        try:
            sweeps = _load(files, list(dict.fromkeys(args.only or files)), args.short)
        except SweepError as exc:
            print(f"mrclab paper: {clip_values(str(exc))}", file=sys.stderr)
            return EXIT_BAD
        try:
            code = run_all(sweeps, files, results, tables)
        except SweepError as exc:
            print(f"mrclab paper: {exc}", file=sys.stderr)
            return EXIT_BAD
        except KeyboardInterrupt:           # between two runs: the finished ones are kept
            code = EXIT_INTERRUPTED
        if code == EXIT_INTERRUPTED:
            print("mrclab paper: interrupted; run it again to go on (finished runs are kept)",
                  file=sys.stderr)
    written = paper_page.write_page(tables, page, list(files))
    print(f"page:   {written}")
    print(f"tables: {tables}")
    return code


if __name__ == "__main__":
    sys.exit(main())
