"""Another server's CPU during a run over several servers (emulation/cluster/run_servers.py),
sampled there and streamed back: the same readings as this machine's CPU meter
(emulation/run/cpu_meter.py), so the summary says, per server, how busy its cores were, how much
its switches (ovs-vswitchd, ovsdb-server) and its workers took, and the hypervisor's steal; and
with each, the scheduler meter's per-class counters of its processes there
(emulation/run/sched_meter.py: the endpoints' loops, the workers' other threads, ovs-vswitchd,
ovsdb-server), so each server gets the run's scheduling profile too.

`python -m emulation.cluster.server_meter --marker PATH` runs on the server as root and prints
one JSON line per sample every --interval seconds until it is stopped (SIGTERM or SIGINT; the
tie to its ssh connection sends SIGTERM when the connection's input ends, model/ssh.py, and
gives it /dev/null for its own input, so that input says nothing of when to stop): {"t_ns", "total", "idle", "steal", "roles":
{role: ticks}, "hz", "ncpu", "sched": {class: [on-CPU ns, run-queue wait ns, timeslices,
voluntary, nonvoluntary switches]}, "tasks": {class: count}}, t_ns on the server's
CLOCK_MONOTONIC. Its workers are the processes whose command line holds PATH (the run's staging
directory there: only that run's workers). parse_line() reads a line back into
analysis/cpu_usage.CpuSample, parse_sched() into analysis/sched_profile.SchedSample.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path

from analysis.cpu_usage import CpuSample, ProcFormatError
from analysis.sched_profile import SchedSample, TaskStat
from emulation.network.ovs_service import DB_PID_FILE, SWITCHD_PID_FILE
from emulation.run.cpu_meter import CpuMeter, pids_from_files
from emulation.run.sched_meter import SchedMeter

INTERVAL_S = 0.5


class MeterLineError(ValueError):
    """A line that is not one of the meter's samples."""


WORKER_MODULE = "traffic.workload.worker"


def pids_with(marker: str, proc: Path = Path("/proc"), own: int | None = None,
              module: str = WORKER_MODULE) -> list[int]:
    """The pids of the processes running `python -m module` whose command line holds `marker`,
    but `own` (the meter, which carries it). Only the interpreter itself: the shells and
    launchers around a remote worker (the ssh tie, mnexec) carry the same words in their
    arguments, and their threads would count as packet loops."""
    found = []
    needle = marker.encode()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == own:
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue                       # gone between the listing and the read
        argv = cmdline.split(b"\0")
        if needle in cmdline and argv[1:3] == [b"-m", module.encode()]:
            found.append(int(entry.name))
    return found


def sample_line(s: CpuSample, hz: int, ncpu: int, sched: SchedSample | None = None) -> str:
    line = {"t_ns": s.t_ns, "total": s.total_ticks, "idle": s.idle_ticks,
            "steal": s.steal_ticks, "roles": s.role_ticks, "hz": hz, "ncpu": ncpu}
    if sched is not None:
        line["sched"] = {c: [t.on_cpu_ns, t.wait_ns, t.slices, t.voluntary, t.nonvoluntary]
                         for c, t in sched.classes.items()}
        line["tasks"] = dict(sched.tasks)
    return json.dumps(line)


def parse_line(line: str) -> tuple[CpuSample, int, int]:
    """(the sample, ticks per second, cores) of one line; MeterLineError naming what is wrong."""
    try:
        data = json.loads(line)
        sample = CpuSample(int(data["t_ns"]), int(data["total"]), int(data["idle"]),
                           {str(r): int(t) for r, t in dict(data["roles"]).items()},
                           int(data["steal"]))
        return sample, int(data["hz"]), int(data["ncpu"])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise MeterLineError(f"not a CPU sample line ({exc}): {line.strip()[:120]!r}") from None


def parse_sched(line: str) -> SchedSample | None:
    """The scheduler counters of one sample line, at the line's t_ns (None when the line has
    none: the meter there could not read them); MeterLineError naming what is wrong."""
    try:
        data = json.loads(line)
        if "sched" not in data:
            return None
        classes = {str(c): TaskStat(*(int(v) for v in values))
                   for c, values in dict(data["sched"]).items()
                   if isinstance(values, list) and len(values) == 5}
        if len(classes) != len(data["sched"]):
            raise ValueError("a class's counters are not five integers")
        tasks = {str(c): int(n) for c, n in dict(data.get("tasks") or {}).items()}
        return SchedSample(int(data["t_ns"]), classes, tasks)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise MeterLineError(f"not a scheduler sample line ({exc}): {line.strip()[:120]!r}") \
            from None


def sched_meter(workers) -> SchedMeter:
    """The classes this machine's runner profiles (emulation/run/runner.py), of what runs on a
    server: a worker's main thread is the endpoint's packet loop, its other threads the input
    prefetch and the goodput sampler."""
    return SchedMeter({"endpoint_loops": workers,
                       "ovs_vswitchd": lambda: pids_from_files([SWITCHD_PID_FILE]),
                       "ovsdb_server": lambda: pids_from_files([DB_PID_FILE])},
                      thread_classes={"endpoint_loops": "worker_threads"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m emulation.cluster.server_meter")
    parser.add_argument("--marker", required=True,
                        help="a string in the command line of every worker of the run")
    parser.add_argument("--interval", type=float, default=INTERVAL_S)
    args = parser.parse_args(argv)
    workers = lambda: pids_with(args.marker, own=os.getpid())     # noqa: E731
    sched = sched_meter(workers)
    meter = CpuMeter({"switches": lambda: pids_from_files([SWITCHD_PID_FILE, DB_PID_FILE]),
                      "workers": workers}, interval_s=args.interval, also=[sched.sample])
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    while True:
        try:
            sample = meter.sample()
        except (OSError, ProcFormatError) as exc:
            print(f"server_meter: {exc}", file=sys.stderr)
            return 1
        try:
            print(sample_line(sample, meter.hz, meter.ncpu,
                              sched.samples[-1] if sched.samples else None), flush=True)
        except BrokenPipeError:
            return 0
        meter.samples.clear()              # the lines are the record; keep no history here
        sched.samples.clear()
        if stop.wait(args.interval):
            return 0


if __name__ == "__main__":
    sys.exit(main())
