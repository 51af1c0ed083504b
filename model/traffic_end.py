"""Where the timed iterations end when a scenario sets `[collective] iterations_after_faults`:
the runner's word to every rank, as a file in the transport's run directory.

A fault schedule that lands inside the traffic at any speed needs `iterations` to cover its
slowest transport: RoCE stalled 4.3 s at a link-down still has to see the link come back. The
faster transports then run on long after the last fault with nothing left to show, and at a
time scale k every surplus emulated second costs k wall seconds. So the runner, once the last
entry of the schedule is applied, names the iteration at which every rank stops: the one in
progress then plus `after` more. One file, written once (atomically), read by every worker at the
start of each timed iteration and by the analysis as the run's planned count.

Why every rank stops at the same iteration: a rank reads the file only at an iteration's start
and stops at the first one whose index is at least the named one. The runner names
(iterations the furthest rank has logged) + 1 + after, so a rank would have to be more than
`after` iterations ahead of the logs the runner reads every 10 ms to have started the named one
already; a rank can be ahead of its peers only by iterations that did not need them.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from model.safe_read import read_regular

STOP_FILE = "stop-iteration.json"
MAX_STOP_FILE_BYTES = 4096      # one small JSON object; anything larger is not the runner's


class TrafficEndError(ValueError):
    """A stop file that cannot be read as one; the message names the file."""


def stop_iteration(done: int, after: int, iterations: int) -> int:
    """The timed-iteration count every rank runs: the iteration in progress when the last fault
    was applied (`done` is how many the furthest rank had completed), plus `after` more, never
    more than the scenario's `iterations`."""
    if after < 1:
        raise ValueError(f"iterations_after_faults must be at least 1, got {after}")
    return min(iterations, done + 1 + after)


def write(run_dir: Path, iteration: int, reason: str) -> Path:
    """Write the stop file into `run_dir` in one rename, so no reader sees half of it."""
    path = Path(run_dir) / STOP_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"iterations": iteration, "reason": reason}) + "\n")
    os.replace(tmp, path)
    return path


def read(run_dir: Path) -> int | None:
    """The timed-iteration count the runner named in `run_dir`, or None when it named none."""
    path = Path(run_dir) / STOP_FILE
    try:
        data = json.loads(read_regular(path, MAX_STOP_FILE_BYTES))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise TrafficEndError(f"{path}: not a stop file ({exc})") from None
    count = data.get("iterations") if isinstance(data, dict) else None
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise TrafficEndError(f"{path}: \"iterations\" must be a positive integer, got {count!r}")
    return count


class StopWatch:
    """A worker's view of the stop file: looked for at each timed iteration's start (one stat
    while it is absent), read once when it appears."""

    def __init__(self, run_dir: str | Path):
        self.path = Path(run_dir) / STOP_FILE
        self.count: int | None = None

    def stops_at(self, index: int) -> bool:
        """Whether timed iteration `index` (0-based) is past the named end: the rank stops."""
        if self.count is None and self.path.exists():
            self.count = read(self.path.parent)
        return self.count is not None and index >= self.count
