"""`mrclab top [RUN] [--once] [--interval S]`: attach to a running experiment and show, refreshed
every second, per-host goodput (total and per plane), EV states per path, retransmissions, trims,
faults as they fire, the machine's CPU and the fidelity monitor's state (emulation/run/live_state.py).

RUN: a run directory, default the newest under results/. The transport shown is the one whose
directory has a worker.json but no summary.json yet (the one running); top follows the run to
its next transport and exits when run.json says the run ended. --once prints one screen.
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
        run_dir = latest_run() if args.run == "latest" else Path(args.run)
        if not run_dir.is_dir():
            raise FileNotFoundError(f"run directory {run_dir} does not exist")
    except OSError as exc:
        print(f"mrclab top: {exc}", file=sys.stderr)
        return 2
    watcher = None
    tty = sys.stdout.isatty()
    try:
        while True:
            tdir = running_transport(run_dir)
            if tdir is None:
                if run_ended(run_dir) or args.once:
                    print(f"mrclab top: {run_dir} has no transport running"
                          f"{' (the run ended)' if run_ended(run_dir) else ''}")
                    return 0
            elif watcher is None or watcher.tdir != tdir:
                watcher = Watcher(tdir, tdir.name, _topology(tdir),
                                  controller_getter(args.api_port))
            if watcher is not None and tdir is not None:
                state = watcher.poll()
                if getattr(args, "json", False):
                    print(json.dumps({"run_dir": str(run_dir), **state.to_json()}), flush=True)
                else:
                    print(("\033[H\033[2J" if tty and not args.once else "")
                          + f"{run_dir}\n" + state.screen(), flush=True)
                if args.once:
                    return 0
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0
