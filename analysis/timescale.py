"""A run's time scale, read from its files: a run with time_scale k ran k times slower than the
scenario declares, so every time in its files (event logs, fault logs, captures) is the wall
world's. The conversion back to the emulated world is model/timescale.py's (its rule: times / k,
rates x k), applied once where a run's files are loaded: analysis/jsonl.read_jsonl to every
record by its names, analysis/pcap.py to packet times, analysis/flows.py to a saved wall-world
fabric's rates. A run's k is its worker.json's `time_scale` (1 when absent or not a valid time
scale: every run before the time scale, and every file outside a run directory).

Pure standard library.
"""
from __future__ import annotations

import json
from pathlib import Path

from model import timescale

_cache: dict[tuple[str, int], float] = {}


def _scale_in(config) -> float:
    try:
        return timescale.check(config.get("time_scale", 1.0) if isinstance(config, dict)
                               else 1.0)
    except timescale.TimeScaleError:
        return 1.0


def time_scale_of(directory) -> float:
    """The time scale of the run whose files are in `directory` (a transport directory or one
    below it, such as fabric/): its worker.json's `time_scale`; 1 when there is none."""
    d = Path(directory)
    for candidate in (d / "worker.json", d.parent / "worker.json"):
        try:
            stamp = candidate.stat().st_mtime_ns
        except OSError:
            continue
        key = (str(candidate), stamp)
        if key not in _cache:
            try:
                _cache[key] = _scale_in(json.loads(candidate.read_text()))
            except (OSError, ValueError, UnicodeDecodeError):
                _cache[key] = 1.0
        return _cache[key]
    return 1.0

