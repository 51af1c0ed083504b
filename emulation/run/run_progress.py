"""Following a run while it goes: the workers' JSONL logs tailed for iteration and warm-up
progress (LogTail, which the fault scheduler also times its entries by), and the stderr progress
bar (Progress)."""
from __future__ import annotations

import statistics
import sys
import threading
import time
from pathlib import Path

from analysis.jsonl import parse_record
from model.events import Event, Phase


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class LogTail:
    """Follows the workers' JSONL logs (complete lines only) and keeps what the runner needs."""

    def __init__(self, paths: list[Path]):
        self.paths = paths
        self.offsets = {p: 0 for p in paths}
        self.partial = {p: b"" for p in paths}
        self.done_iters = {p: -1 for p in paths}
        self.finished = {p: False for p in paths}      # the worker logged phase "done"
        self.timed_start_ns: int | None = None
        self.lock = threading.Lock()

    def poll(self) -> None:
        with self.lock:
            for p in self.paths:
                try:
                    with open(p, "rb") as f:
                        f.seek(self.offsets[p])
                        chunk = f.read()
                except FileNotFoundError:
                    continue
                self.offsets[p] += len(chunk)
                data = self.partial[p] + chunk
                *lines, self.partial[p] = data.split(b"\n")
                for line in lines:
                    ev, _ = parse_record(line)     # a damaged line is the analysis' to report
                    if ev is None:
                        continue
                    if ev.get("event") == Event.ITERATION and _is_int(ev.get("iter")):
                        self.done_iters[p] = max(self.done_iters[p], ev["iter"])
                    elif ev.get("event") == Event.PHASE and ev.get("phase") == Phase.DONE:
                        self.finished[p] = True
                    elif (ev.get("event") == Event.PHASE and ev.get("phase") == Phase.WARMUP_DONE
                          and _is_int(ev.get("t_ns"))):
                        t = ev["t_ns"]
                        if self.timed_start_ns is None or t < self.timed_start_ns:
                            self.timed_start_ns = t

    def finished_ranks(self) -> list[bool]:
        """Per worker (in the order of `paths`): it logged its last iteration and phase done."""
        return [self.finished[p] for p in self.paths]

    def min_done(self) -> int:
        return min(self.done_iters.values()) + 1

    def max_done(self) -> int:
        return max(self.done_iters.values()) + 1


# Iterations whose duration must be known before the bar estimates the time left.
ESTIMATE_AFTER_ITERATIONS = 2


def seconds_left(durations: list[float], done: int, total: int) -> float | None:
    """Wall seconds until `total` iterations, at the median duration of those seen so far
    (`durations`, one per iteration), or None while too few are known or all are done. The
    median, not the mean: a transport waiting out a timeout stalls one iteration for many, and
    the iterations after it run at the usual pace again."""
    if len(durations) < ESTIMATE_AFTER_ITERATIONS or done >= total:
        return None
    return (total - done) * statistics.median(durations)


class Progress:
    """Plain stderr progress bar (rewritten in place on a terminal, a line per 5 s otherwise),
    with the wall time left once a few iterations have finished: at a large time scale a run
    takes many minutes, and its user should know how many."""

    def __init__(self, label: str, total: int):
        self.label, self.total = label, total
        self.tty = sys.stderr.isatty()
        self.last_line = 0.0
        self.started = time.monotonic()
        self._seen: tuple[int, float] | None = None    # (iterations done, when first seen)
        self.durations: list[float] = []                 # one per iteration finished since

    def update(self, done: int, faults_done: int, faults_total: int) -> None:
        now = time.monotonic()
        if done > 0 and (self._seen is None or done > self._seen[0]):
            if self._seen is not None:    # the iterations since the last change share its time
                step = (now - self._seen[1]) / (done - self._seen[0])
                self.durations += [step] * (done - self._seen[0])
            self._seen = (done, now)
        if not self.tty and now - self.last_line < 5:
            return
        self.last_line = now
        width = 30
        filled = int(width * min(done, self.total) / max(1, self.total))
        left = seconds_left(self.durations, done, self.total)
        line = (f"[{self.label}] [{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} "
                f"iterations, faults {faults_done}/{faults_total}, {now - self.started:5.1f} s"
                + ("" if left is None else f", about {left:.0f} s left"))
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n",
              file=sys.stderr, flush=True)

    def finish(self) -> None:
        if self.tty:
            print(file=sys.stderr, flush=True)
