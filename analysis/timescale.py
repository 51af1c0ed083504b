"""The way back from a dilated run (emulation/time_scale.py) to the emulated world: a run with
time_scale k ran k times slower than the scenario declares, so every time in its files (event
logs, fault logs, captures) is k times the emulated one, every rate 1/k of the declared one.

Analysis converts once, where a run's files are loaded: analysis/jsonl.read_jsonl divides every
`*_ns`, `*_ms` and `*_s` value of a record by k (absolute CLOCK_MONOTONIC times and durations
alike, so differences between them, and bytes over them, come out in the emulated world) and
multiplies every `*_mbit` rate (a fault command's) by k, the capture
loader (analysis/pcap.py) does the same to packet times, and `declared_fabric` multiplies a saved
wall-world fabric's rates back. A run's k is its worker.json's `time_scale` (1 when absent: every
run before the time scale, and every file outside a run directory).

Pure standard library.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

TIME_SUFFIXES = ("_ns", "_ms", "_s")
RATE_SUFFIXES = ("_mbit",)
RATE_KEYS = ("host_link_mbit", "fabric_link_mbit")
_cache: dict[tuple[str, int], float] = {}


def _scale_in(config) -> float:
    k = config.get("time_scale", 1.0) if isinstance(config, dict) else 1.0
    if isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k) or k < 1:
        return 1.0
    return float(k)


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


def is_time_key(key: str) -> bool:
    return key.endswith(TIME_SUFFIXES)


def emulated_record(record: dict, k: float) -> dict:
    """A record with every number under a time key divided by k (ints stay ints: int(t // k))
    and every number under a rate key multiplied by k."""
    if k == 1.0:
        return record
    out = dict(record)
    for key, value in record.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        if is_time_key(key):
            out[key] = int(value // k) if isinstance(value, int) else value / k
        elif key.endswith(RATE_SUFFIXES):
            out[key] = value * k
    return out


def declared_fabric(fabric: dict, k: float) -> dict:
    """A wall-world fabric table (worker.json's) with the link rates the scenario declared."""
    if k == 1.0 or not isinstance(fabric, dict):
        return fabric
    return {key: (value * k if key in RATE_KEYS and isinstance(value, (int, float))
                  and not isinstance(value, bool) else value) for key, value in fabric.items()}
