"""Reads every thread's scheduler counters of the run's processes by class (thin /proc reader; the
arithmetic and what the figures mean are analysis/sched_profile.py).

The runner names its processes by class, as it does for the CPU meter; each sample lists
/proc/<pid>/task/ of every pid of a class and reads each thread's schedstat and status. A class
may send its processes' other threads to a class of their own (`thread_classes`): a worker's
main thread runs the endpoint's packet loop, its other threads the bulk compute beside it.
The CPU meter's thread takes the samples (CpuMeter(also=...)), so both meters read at the same
moments. Reading never raises into the run: a task gone between listing and reading is skipped
(its last reading stays), and a file that cannot be parsed stops the meter with the reason kept
in `error`.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable, Iterable

from analysis.sched_profile import (SchedFormatError, SchedSample, class_totals,
                                    profile_in_window, task_stat)


class SchedMeter:
    """classes: class -> callable returning that class's pids now; thread_classes: class -> the
    class its processes' threads other than the main one count in."""

    def __init__(self, classes: dict[str, Callable[[], Iterable[int]]],
                 thread_classes: dict[str, str] | None = None, proc: str = "/proc"):
        self.classes = classes
        self.thread_classes = dict(thread_classes or {})
        self.proc = Path(proc)
        self.samples: list[SchedSample] = []
        self.error: str | None = None
        self._last: dict[tuple[int, int], tuple[str, object]] = {}
        self._names = tuple(dict.fromkeys([*classes, *self.thread_classes.values()]))

    def _read_pid(self, cls: str, pid: int) -> None:
        task_dir = self.proc / str(pid) / "task"
        try:
            tids = [int(t) for t in os.listdir(task_dir) if t.isdigit()]
        except OSError:
            return                     # exited: its threads' last readings stay
        for tid in tids:
            try:
                stat = task_stat((task_dir / str(tid) / "schedstat").read_text(),
                                 (task_dir / str(tid) / "status").read_text())
            except OSError:
                continue
            self._last[(pid, tid)] = (cls if tid == pid else self.thread_classes.get(cls, cls),
                                      stat)

    def sample(self) -> None:
        """Take one sample now; after an error, nothing (the error is kept)."""
        if self.error is not None:
            return
        try:
            for cls, pids in self.classes.items():
                for pid in pids():
                    self._read_pid(cls, pid)
        except SchedFormatError as err:
            self.error = f"{type(err).__name__}: {err}"
            return
        self.samples.append(class_totals(self._last, time.monotonic_ns(), self._names))

    def profile(self, start_ns: int | None, end_ns: int | None) -> dict | None:
        """analysis.sched_profile figures for [start_ns, end_ns] (None without a window)."""
        if start_ns is None or end_ns is None:
            return None
        return profile_in_window(self.samples, start_ns, end_ns)
