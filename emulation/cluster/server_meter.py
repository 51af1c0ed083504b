"""Another server's CPU during a run over several servers (emulation/cluster/run_servers.py),
sampled there and streamed back: the same readings as this machine's CPU meter
(emulation/run/cpu_meter.py), so the summary says, per server, how busy its cores were, how much
its switches (ovs-vswitchd, ovsdb-server) and its workers took, and the hypervisor's steal.

`python -m emulation.cluster.server_meter --marker PATH` runs on the server as root and prints
one JSON line per sample every --interval seconds until its input ends (it runs tied to its
ssh connection, model/ssh.py) or it is stopped: {"t_ns", "total", "idle", "steal", "roles":
{role: ticks}, "hz", "ncpu"}, t_ns on the server's CLOCK_MONOTONIC. Its workers are the processes
whose command line holds PATH (the run's staging directory there: only that run's workers).
parse_line() reads a line back into analysis/cpu_usage.CpuSample.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path

from analysis.cpu_usage import CpuSample, ProcFormatError
from emulation.network.ovs_service import DB_PID_FILE, SWITCHD_PID_FILE
from emulation.run.cpu_meter import CpuMeter, pids_from_files

INTERVAL_S = 0.5


class MeterLineError(ValueError):
    """A line that is not one of the meter's samples."""


def pids_with(marker: str, proc: Path = Path("/proc"), own: int | None = None) -> list[int]:
    """The pids whose command line holds `marker`, but `own` (the meter, which carries it)."""
    found = []
    needle = marker.encode()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == own:
            continue
        try:
            if needle in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue                       # gone between the listing and the read
    return found


def sample_line(s: CpuSample, hz: int, ncpu: int) -> str:
    return json.dumps({"t_ns": s.t_ns, "total": s.total_ticks, "idle": s.idle_ticks,
                       "steal": s.steal_ticks, "roles": s.role_ticks, "hz": hz, "ncpu": ncpu})


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m emulation.cluster.server_meter")
    parser.add_argument("--marker", required=True,
                        help="a string in the command line of every worker of the run")
    parser.add_argument("--interval", type=float, default=INTERVAL_S)
    args = parser.parse_args(argv)
    meter = CpuMeter({"switches": lambda: pids_from_files([SWITCHD_PID_FILE, DB_PID_FILE]),
                      "workers": lambda: pids_with(args.marker, own=os.getpid())},
                     interval_s=args.interval)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    while True:
        try:
            sample = meter.sample()
        except (OSError, ProcFormatError) as exc:
            print(f"server_meter: {exc}", file=sys.stderr)
            return 1
        try:
            print(sample_line(sample, meter.hz, meter.ncpu), flush=True)
        except BrokenPipeError:
            return 0
        meter.samples.clear()              # the lines are the record; keep no history here
        if stop.wait(args.interval):
            return 0


if __name__ == "__main__":
    sys.exit(main())
