"""Where each process class's wake-ups waited during a run: the kernel's per-task scheduler
statistics summed per class over the timed phase (pure: /proc texts in, figures out).

Every deadline of the emulated world (a timer, a frame to read, a chunk to reduce) is met late
by the time the task waits for a CPU once it is runnable (run-queue wait) plus the time its own
work takes before it gets there. The kernel counts both per task (Linux's
Documentation/scheduler/sched-stats.rst; the runner reads them, emulation/run/sched_meter.py):

    /proc/<pid>/task/<tid>/schedstat  three numbers: time on a CPU (ns), time runnable but
                                      waiting on a run queue (ns), timeslices run
    /proc/<pid>/task/<tid>/status     voluntary_ctxt_switches (the task blocked: each such switch
                                      ends in a wake-up) and nonvoluntary_ctxt_switches (it was
                                      preempted while it still had work)

Summed per class between two readings, divided by the wall time between them:

    cores              CPU time per wall second
    wait_cores         run-queue wait per wall second: how many of the class's tasks stood
                       waiting for a CPU at any moment, on average
    wakeups_per_s      voluntary switches per second (each is one wake-up)
    wait_per_wakeup_us run-queue wait per wake-up (a preempted task's wait to get back on is
                       included: it delays the same work); null without a wake-up
    wait_per_slice_us  run-queue wait per timeslice; run_per_slice_us: CPU time per timeslice
    bound              "cpu" when a timeslice waits at least as long as it runs: the class's
                       lateness is mostly waiting for a CPU, which scheduling can shorten;
                       "work" when its own turn is longer: fewer or cheaper wake-ups help;
                       "idle" without a timeslice in the window

A task keeps its last reading after it exits (its counters stop growing), so a class's sums
never go backwards; a task first seen later counts from zero, which is when it was born.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from analysis.fidelity_words import CONSOLE_COLUMNS


class SchedFormatError(ValueError):
    """A /proc scheduler file did not have the layout the kernel documents."""


@dataclass(frozen=True)
class TaskStat:
    """One task's (or a sum of tasks') scheduler counters."""
    on_cpu_ns: int = 0
    wait_ns: int = 0
    slices: int = 0
    voluntary: int = 0
    nonvoluntary: int = 0

    def __add__(self, other: "TaskStat") -> "TaskStat":
        return TaskStat(self.on_cpu_ns + other.on_cpu_ns, self.wait_ns + other.wait_ns,
                        self.slices + other.slices, self.voluntary + other.voluntary,
                        self.nonvoluntary + other.nonvoluntary)

    def minus(self, earlier: "TaskStat") -> "TaskStat":
        """The counts since `earlier`, never below zero (a counter cannot shrink)."""
        return TaskStat(*(max(0, a - b) for a, b in zip(
            (self.on_cpu_ns, self.wait_ns, self.slices, self.voluntary, self.nonvoluntary),
            (earlier.on_cpu_ns, earlier.wait_ns, earlier.slices, earlier.voluntary,
             earlier.nonvoluntary))))


def parse_schedstat(text: str) -> tuple[int, int, int]:
    """(on-CPU ns, run-queue wait ns, timeslices) from the text of a schedstat file."""
    parts = text.split()
    if len(parts) != 3:
        raise SchedFormatError(f"schedstat holds {len(parts)} numbers, expected 3: {text[:60]!r}")
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        raise SchedFormatError(f"schedstat is not three integers: {text[:60]!r}") from None
    return values        # type: ignore[return-value]


def parse_ctxt_switches(text: str) -> tuple[int, int]:
    """(voluntary, nonvoluntary) context switches from the text of a status file."""
    found = {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
            try:
                found[name] = int(value)
            except ValueError:
                raise SchedFormatError(f"status {name}: not an integer: "
                                       f"{value.strip()!r}") from None
    missing = [n for n in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")
               if n not in found]
    if missing:
        raise SchedFormatError(f"status has no {' or '.join(missing)} line")
    return found["voluntary_ctxt_switches"], found["nonvoluntary_ctxt_switches"]


def task_stat(schedstat_text: str, status_text: str) -> TaskStat:
    """One task's counters from its schedstat and status texts."""
    return TaskStat(*parse_schedstat(schedstat_text), *parse_ctxt_switches(status_text))


@dataclass(frozen=True)
class SchedSample:
    """One reading: when (CLOCK_MONOTONIC ns), each class's summed counters and task count."""
    t_ns: int
    classes: dict[str, TaskStat] = field(default_factory=dict)
    tasks: dict[str, int] = field(default_factory=dict)


def class_totals(last: dict, t_ns: int, classes: tuple[str, ...] = ()) -> SchedSample:
    """A sample from every task's last reading: `last` maps any task key to (class, TaskStat);
    `classes` are listed even when they have no task yet."""
    totals = {c: TaskStat() for c in classes}
    tasks = {c: 0 for c in classes}
    for cls, stat in last.values():
        totals[cls] = totals.get(cls, TaskStat()) + stat
        tasks[cls] = tasks.get(cls, 0) + 1
    return SchedSample(t_ns, totals, tasks)


def _class_figures(d: TaskStat, wall_s: float, tasks: int) -> dict:
    if d.slices:
        wait_slice, run_slice = d.wait_ns / d.slices / 1e3, d.on_cpu_ns / d.slices / 1e3
        bound = "cpu" if wait_slice >= run_slice else "work"
    else:
        wait_slice = run_slice = 0.0
        bound = "idle"
    per_wakeup = round(d.wait_ns / d.voluntary / 1e3, 1) if d.voluntary else None
    return {"tasks": tasks,
            "cores": round(d.on_cpu_ns / 1e9 / wall_s, 3),
            "wait_cores": round(d.wait_ns / 1e9 / wall_s, 3),
            "wakeups_per_s": round(d.voluntary / wall_s, 1),
            "preemptions_per_s": round(d.nonvoluntary / wall_s, 1),
            "wait_per_wakeup_us": per_wakeup,
            "wait_per_slice_us": round(wait_slice, 1),
            "run_per_slice_us": round(run_slice, 1),
            "bound": bound}


def profile_between(a: SchedSample, b: SchedSample) -> dict:
    """The lateness profile from sample a to sample b (see the module docstring)."""
    if b.t_ns <= a.t_ns:
        raise ValueError("profile_between: the second sample must be later than the first")
    wall_s = (b.t_ns - a.t_ns) / 1e9
    names = sorted(set(a.classes) | set(b.classes))
    return {"window_s": round(wall_s, 3),
            "classes": {c: _class_figures(b.classes.get(c, TaskStat()).minus(
                                              a.classes.get(c, TaskStat())),
                                          wall_s, b.tasks.get(c, 0))
                        for c in names}}


def profile_in_window(samples: list[SchedSample], start_ns: int, end_ns: int) -> dict | None:
    """profile_between the last sample at or before start_ns (else the first) and the first at
    or after end_ns (else the last); None when fewer than two samples span any time."""
    if len(samples) < 2 or end_ns <= start_ns:
        return None
    first = samples[0]
    for s in samples:
        if s.t_ns > start_ns:
            break
        first = s
    last = next((s for s in samples if s.t_ns >= end_ns), samples[-1])
    if last.t_ns <= first.t_ns:
        return None
    return profile_between(first, last)


def describe(transport: str, profile: dict, scheduling: str | None = None) -> str:
    """The console's statement, wrapped to CONSOLE_COLUMNS: per class with work in the window,
    run-queue wait per timeslice, wait per second and what bounds it. Per timeslice rather than
    per wake-up: a poll loop that seldom blocks (ovs-vswitchd's) has few wake-ups and many
    preemptions, and every timeslice, whichever began it, starts with its wait."""
    parts = []
    for cls, f in profile["classes"].items():
        if f["bound"] == "idle":
            continue
        parts.append(f"{cls} {f['wait_per_slice_us']:.0f} us/slice, "
                     f"{1000 * f['wait_cores']:.0f} ms/s ({f['bound']})")
    setting = f" (scheduling {scheduling})" if scheduling else ""
    return textwrap.fill(f"{transport}: run-queue wait{setting}: " + ("; ".join(parts) or
                                                                     "no task ran"),
                         CONSOLE_COLUMNS, subsequent_indent="    ", break_on_hyphens=False)
