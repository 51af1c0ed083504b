"""Readers of a run directory's files for the integration tests' own checks: written here from
the file formats (emulation/run/runner.py's docstring), not through the analysis code under test."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from model.events import ControllerLog, Event


def events(path: Path) -> list[dict]:
    """Records of a JSONL log."""
    return [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]


def iteration_spans(path: Path) -> dict[int, tuple[int, int]]:
    """{iteration: (first rank's start_ns, last rank's end_ns)} from a run's iterations.csv."""
    spans: dict[int, tuple[int, int]] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            i, a, b = int(row["iter"]), int(row["start_ns"]), int(row["end_ns"])
            lo, hi = spans.get(i, (a, b))
            spans[i] = (min(lo, a), max(hi, b))
    return spans


def first_reconverge_ns(faults_log: Path, after_ns: int) -> int:
    """Time of the controller's first ECMP reconvergence logged after `after_ns` (its
    faults.jsonl); fails the test if there is none."""
    times = [e["t_ns"] for e in events(faults_log)
             if e["action"] == ControllerLog.RECONVERGE and e["t_ns"] > after_ns]
    assert times, f"the controller never reconverged after {after_ns} ({faults_log})"
    return min(times)


def check_stalled_until_reconvergence(spans: dict[int, tuple[int, int]], t_fault: int,
                                      t_reconverge: int) -> None:
    """A ring collective whose hop crosses the failed link, on a single-path transport routed by
    ECMP, stalls until the fabric reconverges: every step sends on every hop, so only the
    iteration whose data on that hop was already delivered at the fault can still finish in
    (fault, reconvergence), and some iteration runs across the reconvergence."""
    done = sorted(i for i, (_a, b) in spans.items() if t_fault < b < t_reconverge)
    assert len(done) <= 1, f"iterations {done} completed between the fault and the reconvergence"
    assert any(a < t_reconverge <= b for a, b in spans.values()), \
        "no iteration was stalled across the reconvergence"


def longest_receive_pause_ns(worker_log: list[dict], start_ns: int, end_ns: int) -> int:
    """Longest time within [start_ns, end_ns] during which a rank's received bytes did not grow,
    from its worker's goodput events (cumulative rx_bytes, sampled every 10 ms)."""
    samples = sorted((e["t_ns"], e["rx_bytes"]) for e in worker_log if e["event"] == Event.GOODPUT)
    assert samples, "no goodput events in the worker log"
    last_growth, longest, previous = start_ns, 0, None
    for t, rx in samples:
        if previous is not None and rx > previous and start_ns < t <= end_ns:
            longest = max(longest, t - last_growth)
            last_growth = t
        previous = rx
    return max(longest, end_ns - last_growth)
