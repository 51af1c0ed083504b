"""Where the machine's CPU went during a run, from /proc samples (pure: text in, figures out).

Every timing result of the emulator depends on the CPU: the switches are userspace Open vSwitch
and the MRC/RoCE endpoints are Python processes on the same few cores. When the cores are
saturated, an iteration time measures the machine, not the fabric or the transport. The runner
samples /proc/stat and the /proc/<pid>/stat of the processes it knows by role (emulation/
cpu_meter.py); this module turns two samples into what a reader needs: how busy the cores were
and how many cores each role used. "steal" is the time the hypervisor gave this virtual
machine's cores to something else while they had work: load from outside the machine, which no
process inside it shows. "other" is what neither accounts for: the kernel's softirq work done
outside those processes (e.g. TCP's), and any load from outside the experiment.

/proc formats (proc(5)): the first line of /proc/stat is `cpu user nice system idle iowait irq
softirq steal guest guest_nice` in clock ticks (guest time is already inside user and nice);
/proc/<pid>/stat has utime and stime as fields 14 and 15, counted after the ')' that closes the
command name (which may itself hold spaces and parentheses).
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Cores at least this busy (summed over all cores) are saturated: the emulator's processes may
# set the run's pace instead of the fabric's link rates. Whether they did is the fidelity
# verdict's to say (analysis/fidelity.py), never this meter's: describe() reads the load
# through the verdict, so the two never disagree.
SATURATED_BUSY_FRACTION = 0.9


class ProcFormatError(ValueError):
    """A /proc file did not have the layout proc(5) documents."""


def parse_proc_stat(text: str) -> tuple[int, int, int, int]:
    """(total ticks, idle ticks, number of CPUs, steal ticks) from the text of /proc/stat. Idle
    counts iowait too (a core waiting for I/O runs nothing); total leaves guest time out (it is
    already in user/nice); steal is 0 where the kernel does not give it (before Linux 2.6.11)."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("cpu "):
        raise ProcFormatError("/proc/stat does not start with the aggregate 'cpu' line")
    try:
        ticks = [int(v) for v in lines[0].split()[1:]]
    except ValueError as err:
        raise ProcFormatError(f"/proc/stat 'cpu' line: {err}") from None
    if len(ticks) < 5:
        raise ProcFormatError(f"/proc/stat 'cpu' line has {len(ticks)} counters, expected >= 5")
    total = sum(ticks[:8])
    idle = ticks[3] + ticks[4]
    steal = ticks[7] if len(ticks) > 7 else 0
    ncpu = sum(1 for line in lines[1:] if line.startswith("cpu") and line[3:4].isdigit())
    return total, idle, max(ncpu, 1), steal


def parse_pid_stat(text: str) -> int:
    """utime + stime (clock ticks, all threads) from the text of /proc/<pid>/stat."""
    close = text.rfind(")")
    if close < 0:
        raise ProcFormatError("/proc/<pid>/stat has no ')' closing the command name")
    fields = text[close + 2:].split()
    # fields[0] is field 3 (state): utime (14) and stime (15) are fields[11] and fields[12]
    if len(fields) < 13:
        raise ProcFormatError(f"/proc/<pid>/stat has {len(fields) + 2} fields, expected >= 15")
    try:
        return int(fields[11]) + int(fields[12])
    except ValueError as err:
        raise ProcFormatError(f"/proc/<pid>/stat utime/stime: {err}") from None


@dataclass(frozen=True)
class CpuSample:
    """One reading: when (CLOCK_MONOTONIC ns), the machine's tick counters, and the ticks each
    role's processes have used so far (a process that exited keeps its last reading)."""
    t_ns: int
    total_ticks: int
    idle_ticks: int
    role_ticks: dict[str, int] = field(default_factory=dict)
    steal_ticks: int = 0


def usage_between(a: CpuSample, b: CpuSample, *, hz: int, ncpu: int) -> dict:
    """What the CPU did from sample a to sample b: the cores' busy fraction, busy cores, cores
    used per role, taken by the hypervisor ("steal") and by nothing else the roles account for
    ("other")."""
    if b.t_ns <= a.t_ns:
        raise ValueError("usage_between: the second sample must be later than the first")
    machine = b.total_ticks - a.total_ticks
    wall_s = (b.t_ns - a.t_ns) / 1e9
    busy_fraction = 1.0 - (b.idle_ticks - a.idle_ticks) / machine if machine > 0 else 0.0
    busy_fraction = min(1.0, max(0.0, busy_fraction))
    roles = {role: max(0, b.role_ticks.get(role, 0) - a.role_ticks.get(role, 0)) / hz / wall_s
             for role in sorted(set(a.role_ticks) | set(b.role_ticks))}
    busy_cores = busy_fraction * ncpu
    roles["steal"] = max(0, b.steal_ticks - a.steal_ticks) / machine * ncpu if machine > 0 else 0.0
    roles["other"] = max(0.0, busy_cores - sum(roles.values()))
    return {"cores": ncpu, "window_s": round(wall_s, 3),
            "busy_fraction": round(busy_fraction, 3), "busy_cores": round(busy_cores, 3),
            "cores_by_role": {k: round(v, 3) for k, v in roles.items()},
            "saturated": busy_fraction >= SATURATED_BUSY_FRACTION}


def usage_in_window(samples: list[CpuSample], start_ns: int, end_ns: int, *, hz: int,
                    ncpu: int) -> dict | None:
    """usage_between the last sample at or before start_ns (else the first) and the first at or
    after end_ns (else the last); None when fewer than two samples span any time."""
    if len(samples) < 2 or end_ns <= start_ns:
        return None
    first = samples[0]
    for s in samples:
        if s.t_ns <= start_ns:
            first = s
        else:
            break
    last = samples[-1]
    for s in samples:
        if s.t_ns >= end_ns:
            last = s
            break
    if last.t_ns <= first.t_ns:
        return None
    return usage_between(first, last, hz=hz, ncpu=ncpu)


def load_words(usage: dict, verdict: str | None) -> str:
    """What the load means, read through the run's fidelity verdict (the one judgement):
    saturated cores under an "ok" verdict measured the fabric all the same; a verdict other than
    "ok" says the times measure this machine's CPU, whatever the busy share; without a verdict
    the meter says only what it saw."""
    if verdict is None:
        return ("; cores saturated (no fidelity verdict says whether its times held)"
                if usage.get("saturated") else "")
    if verdict == "ok":
        return ("; cores saturated, yet every fidelity invariant held: its times measure the "
                "fabric" if usage.get("saturated") else "")
    return f"; fidelity {verdict}: its times measure this machine's CPU, not the fabric's links"


def describe(transport: str, usage: dict, verdict: str | None = None) -> str:
    """One line for the run's printout; verdict: the transport's fidelity verdict."""
    roles = usage["cores_by_role"]
    parts = ", ".join(f"{role} {cores:.2f}" for role, cores in roles.items() if cores >= 0.005)
    return (f"{transport}: CPU {100 * usage['busy_fraction']:.0f}% of {usage['cores']} cores busy "
            f"during the collective (cores: {parts})" + load_words(usage, verdict))
