"""`mrclab top [RUN] [--once] [--interval S]`: attach to a running experiment and show, refreshed
every second, per-host goodput (total and per plane), EV states per path, retransmissions, trims,
faults as they fire, the machine's CPU and the fidelity monitor's state (emulation/run/live_state.py).

RUN: a run directory, default the newest under results/. The transport shown is the one whose
directory has a worker.json but no summary.json yet (the one running); top follows the run to
its next transport and exits when run.json says the run ended. --once prints one screen.

RUN may also be a sweep's directory (`mrclab sweep`, with its progress.json) or a directory of
sweeps (`mrclab paper`'s results/paper/): top then heads the screen with the sweep, the run under
way (point, its values, repeat, transport) and how many runs are left, follows each run in turn,
and exits once no sweep there has been running for SWEEP_GRACE_S. The default, "latest", follows
a running sweep under results/ when there is one.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from emulation.run.live_state import Watcher
from emulation.run.metrics_server import controller_getter
from model.ports import API_PORT
from model.results import results_dir
from model.topology import FabricSpec, SpecError, Topology

DEFAULT_API_PORT = API_PORT     # the runner's controller (model/ports.py)
# Between two sweeps of `mrclab paper` no progress.json says "running" while the finished one's
# tables are written: long enough a wait to see the next one start.
SWEEP_GRACE_S = 30.0


def running_transport(run_dir: Path) -> Path | None:
    """The transport directory being run: a worker.json and no summary.json (newest first)."""
    live = [d for d in run_dir.iterdir()
            if d.is_dir() and (d / "worker.json").exists() and not (d / "summary.json").exists()]
    return max(live, key=lambda d: (d / "worker.json").stat().st_mtime) if live else None


def run_ended(run_dir: Path) -> bool:
    try:
        return json.loads((run_dir / "run.json").read_text()).get("status") != "running"
    except (OSError, ValueError, AttributeError):
        return (run_dir / "summary.json").exists()


def _topology(tdir: Path):
    try:
        config = json.loads((tdir / "worker.json").read_text())
        return Topology(FabricSpec.from_dict(config["fabric"]))
    except (OSError, ValueError, KeyError, TypeError, SpecError):
        return None


def latest_run(root: Path | None = None) -> Path:
    """The newest run directory under root (default: where `latest` is looked up,
    analysis/logs.results_dir), finished or not."""
    root = results_dir() if root is None else root
    runs = [d for d in root.iterdir() if d.is_dir() and (d / "scenario.toml").exists()] \
        if root.is_dir() else []
    if not runs:
        raise FileNotFoundError(f"no run directory under {root.resolve()}; start one with "
                                "mrclab run <name>")
    return max(runs, key=lambda d: d.stat().st_mtime)


def read_progress(sweep_dir: Path) -> dict | None:
    """A sweep directory's progress.json (emulation/run/sweep.py), or None."""
    try:
        record = json.loads((sweep_dir / "progress.json").read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def sweep_dirs(root: Path) -> list[Path]:
    """root when it is a sweep directory, else the sweep directories right under it."""
    if (root / "progress.json").exists():
        return [root]
    return [d for d in root.iterdir() if d.is_dir() and (d / "progress.json").exists()] \
        if root.is_dir() else []


def running_sweep(dirs: list[Path]) -> tuple[Path, dict] | None:
    """The sweep directory (and its progress) whose run is under way, the newest first."""
    live = [(d, p) for d in dirs if (p := read_progress(d)) and p.get("status") == "running"]
    return max(live, key=lambda dp: (dp[0] / "progress.json").stat().st_mtime) if live else None


def sweep_header(progress: dict) -> str:
    """One line: the sweep, the run under way and how many are left after it."""
    name, total, done = progress.get("sweep"), progress.get("total"), progress.get("done")
    if progress.get("status") != "running":
        return f"sweep {name}: {progress.get('status')}, {done} of {total} runs done"
    left = total - progress["run"] if isinstance(total, int) and isinstance(
        progress.get("run"), int) else "?"
    return (f"sweep {name}: run {progress.get('run')} of {total}, {left} left after it; point "
            f"{progress.get('point')} ({progress.get('values')}), repeat "
            f"{progress.get('repeat')}, {progress.get('transport')}")


def current_run(progress: dict) -> Path | None:
    """The newest run directory under the run under way's transport directory."""
    parent = Path(str(progress.get("run_parent") or ""))
    runs = [d for d in parent.iterdir() if d.is_dir()] if parent.is_dir() else []
    return max(runs, key=lambda d: d.stat().st_mtime) if runs else None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", nargs="?", default="latest",
                        help="run directory (default: the newest under results/)")
    parser.add_argument("--once", action="store_true", help="print one screen and exit")
    parser.add_argument("--json", action="store_true",
                        help="one JSON object per refresh on stdout, one a line (with --once: "
                             "one object), instead of the screen")
    parser.add_argument("--interval", type=float, default=1.0, help="refresh period, s (default 1)")
    parser.add_argument("--api-port", type=int, default=DEFAULT_API_PORT,
                        help=f"the run's controller API port (default {DEFAULT_API_PORT})")


def main(args=None) -> int:
    if not isinstance(args, argparse.Namespace):
        parser = argparse.ArgumentParser(prog="mrclab top", description=__doc__.splitlines()[0])
        add_arguments(parser)
        args = parser.parse_args(sys.argv[1:] if args is None else args)
    if not args.interval > 0:
        print(f"mrclab top: --interval must be > 0, got {args.interval}", file=sys.stderr)
        return 2
    try:
        if args.run == "latest":
            live = running_sweep(latest_sweeps())
            target = live[0] if live else latest_run()
        else:
            target = Path(args.run)
        if not target.is_dir():
            raise FileNotFoundError(f"run directory {target} does not exist")
    except OSError as exc:
        print(f"mrclab top: {exc}", file=sys.stderr)
        return 2
    try:
        return follow_sweeps(target, args) if sweep_dirs(target) else follow_run(target, args)
    except KeyboardInterrupt:
        return 0


def latest_sweeps(root: Path = Path("results")) -> list[Path]:
    """The sweep directories of `mrclab sweep` and `mrclab paper` under results/."""
    return [d for pattern in ("sweeps/*", "paper*/*") for d in root.glob(pattern)
            if (d / "progress.json").exists()]


def _watcher(watcher, tdir: Path, args):
    """The watcher of tdir: the one given when it already follows tdir, else a new one."""
    if watcher is not None and watcher.tdir == tdir:
        return watcher
    return Watcher(tdir, tdir.name, _topology(tdir), controller_getter(args.api_port))


def follow_run(run_dir: Path, args) -> int:
    watcher = None
    tty = sys.stdout.isatty()
    while True:
        tdir = running_transport(run_dir)
        if tdir is None:
            if run_ended(run_dir) or args.once:
                print(f"mrclab top: {run_dir} has no transport running"
                      f"{' (the run ended)' if run_ended(run_dir) else ''}")
                return 0
        else:
            watcher = _watcher(watcher, tdir, args)
            state = watcher.poll()
            if getattr(args, "json", False):
                print(json.dumps({"run_dir": str(run_dir), **state.to_json()}), flush=True)
            else:
                print(("\033[H\033[2J" if tty and not args.once else "")
                      + f"{run_dir}\n" + state.screen(), flush=True)
            if args.once:
                return 0
        time.sleep(args.interval)


def follow_sweeps(root: Path, args) -> int:
    """The sweep(s) under root: a header line over the screen of the run under way."""
    watcher, idle_since = None, None
    tty = sys.stdout.isatty()
    while True:
        live = running_sweep(sweep_dirs(root))
        if live is None:
            idle_since = idle_since if idle_since is not None else time.monotonic()
            if args.once or time.monotonic() - idle_since >= SWEEP_GRACE_S:
                states = [p for d in sorted(sweep_dirs(root)) if (p := read_progress(d))]
                print("\n".join(sweep_header(p) for p in states))
                return 0
        else:
            idle_since = None
            progress = live[1]
            run_dir = current_run(progress)
            tdir = running_transport(run_dir) if run_dir is not None else None
            body = "(the run is starting)"
            if tdir is not None:
                watcher = _watcher(watcher, tdir, args)
                body = watcher.poll().screen()
            print(("\033[H\033[2J" if tty and not args.once else "") + sweep_header(progress)
                  + f"\n{run_dir or ''}\n" + body, flush=True)
            if args.once:
                return 0
        time.sleep(args.interval)
