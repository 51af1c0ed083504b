"""A run's worker logs built by hand, for the tests of what reads them (the runner's summary, the
run model): every number in them is chosen, so expected results follow by arithmetic.

The run: `hosts` workers, each delivering 10,000 bytes every 10 ms (1e6 B/s each) from the timed
start t0 until `deliver_ms`, except during `outage` [start, end) ms; `warmup_ms` before t0 deliver
nothing; the workers keep sampling (flat) for `tail_ms` after `deliver_ms`. `iterations` of
100 ms each, all verified; host h ends each iteration h ns early.
"""
from __future__ import annotations

import json

from model.events import Event, Phase

MS = 1_000_000
BYTES_PER_SAMPLE = 10_000
SAMPLE_MS = 10
ITERATION_MS = 100

# The scenario these logs belong to (fabric, transport, collective; faults are each test's own).
TCP_RUN = """
[fabric]
planes = 2
[transport]
names = ["tcp"]
[collective]
message_bytes = 4000
iterations = 30
"""


def worker_log(host: int, t0: int, *, outage=(1000, 1400), iterations=30, deliver_ms=None,
               warmup_ms=0, tail_ms=0) -> list[dict]:
    """One worker's events, time-sorted."""
    deliver_ms = iterations * ITERATION_MS if deliver_ms is None else deliver_ms
    name = f"h{host}"
    lines = [{"t_ns": t0 + ms * MS, "host": name, "event": Event.GOODPUT, "rx_bytes": 0}
             for ms in range(-warmup_ms, 0, SAMPLE_MS)]
    lines.append({"t_ns": t0, "host": name, "event": Event.PHASE, "phase": Phase.WARMUP_DONE})
    delivered = 0
    for ms in range(0, deliver_ms + tail_ms, SAMPLE_MS):
        if ms < deliver_ms and not outage[0] <= ms < outage[1]:
            delivered += BYTES_PER_SAMPLE
        lines.append({"t_ns": t0 + ms * MS, "host": name, "event": Event.GOODPUT,
                      "rx_bytes": delivered})
    for i in range(iterations):
        start, end = t0 + i * ITERATION_MS * MS, t0 + (i + 1) * ITERATION_MS * MS
        lines.append({"t_ns": end, "host": name, "event": Event.ITERATION,
                      "collective": "allreduce", "transport": "tcp", "iter": i,
                      "start_ns": start, "end_ns": end - host, "bytes": 1, "verified": True})
    lines.sort(key=lambda e: e["t_ns"])
    return lines


def write_worker_logs(tdir, t0: int, *, hosts: int = 4, **run) -> None:
    """worker-h<n>.jsonl of every host into `tdir` (keyword arguments: worker_log's)."""
    for h in range(hosts):
        lines = worker_log(h, t0, **run)
        (tdir / f"worker-h{h}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
