"""Samples the machine's CPU and each role's processes during a run (thin /proc reader; the
arithmetic is analysis/cpu_usage.py).

The runner names its processes by role (the workers it started, the switch daemons, the
captures, the controller, itself); every `interval_s` one sample reads /proc/stat and each
known pid's /proc/<pid>/stat. A process that exits keeps its last reading, so a role's ticks
never go backwards. Sampling costs a few small file reads; it never raises into the run: a pid
gone between listing and reading is skipped, and a /proc that cannot be parsed stops the meter
with the reason kept in `error`. `also`: other readers sampled at the same moments (the
scheduler meter, emulation/run/sched_meter.py); they keep their own errors.
"""
from __future__ import annotations

import csv
import os
import threading
import time
from pathlib import Path
from typing import Callable, Iterable

from analysis.cpu_usage import (CpuSample, ProcFormatError, parse_pid_stat, parse_proc_stat,
                                usage_between, usage_in_window)
from emulation.network.ovs_service import DB_PID_FILE, SWITCHD_PID_FILE

OVS_PID_FILES = (SWITCHD_PID_FILE, DB_PID_FILE)


def pids_from_files(paths: Iterable[str]) -> list[int]:
    """The pids written in these pid files (missing or unreadable files are skipped)."""
    pids = []
    for path in paths:
        try:
            pids.append(int(Path(path).read_text().split()[0]))
        except (OSError, ValueError, IndexError):
            continue
    return pids


class CpuMeter:
    """Background sampler. roles: role -> callable returning that role's pids now."""

    def __init__(self, roles: dict[str, Callable[[], Iterable[int]]], interval_s: float = 0.5,
                 proc: str = "/proc", also: Iterable[Callable[[], None]] = ()):
        self.roles = roles
        self.also = list(also)
        self.interval_s = interval_s
        self.proc = Path(proc)
        self.hz = os.sysconf("SC_CLK_TCK")
        self.ncpu = 1
        self.samples: list[CpuSample] = []
        self.error: str | None = None
        self._last: dict[int, tuple[str, int]] = {}     # pid -> (role, last ticks read)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def sample(self) -> CpuSample:
        """Take one sample now (also what the thread does every interval)."""
        total, idle, self.ncpu, steal = parse_proc_stat((self.proc / "stat").read_text())
        for role, pids in self.roles.items():
            for pid in pids():
                try:
                    ticks = parse_pid_stat((self.proc / str(pid) / "stat").read_text())
                except (FileNotFoundError, ProcessLookupError):
                    continue                 # exited: its last reading stays in _last
                self._last[pid] = (role, ticks)
        per_role = {role: 0 for role in self.roles}
        for role, ticks in self._last.values():
            per_role[role] += ticks
        s = CpuSample(time.monotonic_ns(), total, idle, per_role, steal)
        self.samples.append(s)
        for reader in self.also:
            reader()
        return s

    def start(self) -> "CpuMeter":
        try:
            self.sample()
        except (OSError, ProcFormatError) as err:     # no figures, but the run goes on
            self.error = f"{type(err).__name__}: {err}"
            return self
        self._thread = threading.Thread(target=self._run, name="cpu-meter", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sample()
            except (OSError, ProcFormatError) as err:
                self.error = f"{type(err).__name__}: {err}"
                return

    def stop(self) -> None:
        """Stop the thread and take a last sample (so a window can end at the stop); once."""
        if self._stopped:
            return
        self._stopped = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.error is None:
            try:
                self.sample()
            except (OSError, ProcFormatError) as err:
                self.error = f"{type(err).__name__}: {err}"

    def usage(self, start_ns: int | None, end_ns: int | None) -> dict | None:
        """analysis.cpu_usage figures for [start_ns, end_ns] (None without a window)."""
        if start_ns is None or end_ns is None:
            return None
        return usage_in_window(self.samples, start_ns, end_ns, hz=self.hz, ncpu=self.ncpu)

    def write_csv(self, path: Path) -> None:
        """One row per sampling interval: its end time, busy fraction and cores per role."""
        roles = list(self.roles) + ["steal", "other"]
        with open(path, "w", newline="") as out:
            w = csv.writer(out)
            w.writerow(["t_ns", "busy_fraction"] + [f"{r}_cores" for r in roles])
            for a, b in zip(self.samples, self.samples[1:]):
                if b.t_ns <= a.t_ns:
                    continue
                u = usage_between(a, b, hz=self.hz, ncpu=self.ncpu)
                w.writerow([b.t_ns, u["busy_fraction"]]
                           + [u["cores_by_role"].get(r, 0.0) for r in roles])
