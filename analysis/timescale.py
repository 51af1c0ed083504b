"""A run's time scale, read from its files: a run with time_scale k ran k times slower than the
scenario declares, so every time in its files (event logs, fault logs, captures) is the wall
world's. The conversion back to the emulated world is model/timescale.py's (its rule: times / k,
rates x k), applied once where a run's files are loaded: analysis/jsonl.read_jsonl to every
record by its names, analysis/pcap.py to packet times, analysis/flows.py to a saved wall-world
fabric's rates. A run's k is its worker.json's `time_scale` (1 when absent or not a valid time
scale: every run before the time scale, and every file outside a run directory; the analysis
names an invalid one as a problem of the run, time_scale_problem()).

Pure standard library.
"""
from __future__ import annotations

import json
from pathlib import Path

from model import timescale
from model.safe_read import read_regular

MAX_WORKER_JSON_BYTES = 1 << 20     # a worker configuration is a few kB
_cache: dict[tuple[str, int], tuple[float, str | None]] = {}


def _scale_in(config) -> tuple[float, str | None]:
    try:
        return timescale.check(config.get("time_scale", 1.0) if isinstance(config, dict)
                               else 1.0), None
    except timescale.TimeScaleError as exc:
        return 1.0, f"worker.json: {exc}; the run's times are read as they are (k = 1)"


def _read(path: Path) -> tuple[float, str | None]:
    try:
        return _scale_in(json.loads(read_regular(path, MAX_WORKER_JSON_BYTES)))
    except (OSError, ValueError, RecursionError):
        return 1.0, None        # unreadable: the run model names it (it reads the file too)


def _lookup(directory) -> tuple[float, str | None]:
    d = Path(directory)
    for candidate in (d / "worker.json", d.parent / "worker.json"):
        try:
            stamp = candidate.stat().st_mtime_ns
        except OSError:
            continue
        key = (str(candidate), stamp)
        if key not in _cache:
            _cache[key] = _read(candidate)
        return _cache[key]
    return 1.0, None


def time_scale_problem(directory) -> str | None:
    """Why the worker.json time_scale of the run in `directory` was not used, or None."""
    return _lookup(directory)[1]


def time_scale_of(directory) -> float:
    """The time scale of the run whose files are in `directory` (a transport directory or one
    below it, such as fabric/): its worker.json's `time_scale`; 1 when there is none."""
    return _lookup(directory)[0]
