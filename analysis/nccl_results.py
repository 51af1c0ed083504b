"""A transport's result as nccl-tests prints it: one row of size, count, type, redop, time,
algbw, busbw and #wrong, so users read a run the way they read `all_reduce_perf`.

Definitions (nccl-tests doc/PERFORMANCE.md): algbw = S / t with S the operation's size in bytes
(the worker's `nccl_size_bytes`, the message of the scenario) and t the operation's time;
busbw = algbw x the collective's factor (analysis.metrics.busbw_factor). nccl-tests prints GB/s
with GB = 10^9 bytes and takes t as the mean over the timed iterations, so algbw and busbw here
come from the mean; the median time is shown beside it because a fault makes the mean a poor
summary of the typical iteration. #wrong: elements that failed verification, summed over the
timed iterations and ranks (the worker logs `wrong` with every iteration).

Pure (no pandas, no I/O) except transport_result, which reads a transport directory.
"""
from __future__ import annotations

import statistics
from pathlib import Path

from analysis.jsonl import parse_json
from analysis.metrics import BUSBW_FACTORS, _norm_collective, busbw_factor
from analysis.timescale import MAX_WORKER_JSON_BYTES
from model.safe_read import read_regular

ELEMENT_TYPE = "float"       # traffic/workload/collectives.py computes on float32 (nccl-tests' "float")
ELEMENT_BYTES = 4
# the reduction the collective performs; "none" where it moves data without reducing (nccl-tests
# prints "none" for all-gather, all-to-all and broadcast)
REDUCING = frozenset({"allreduce", "reducescatter", "reduce", "incast"})

ROW_KEYS = ("collective", "size_bytes", "count", "type", "redop", "time_median_ms",
            "time_mean_ms", "algbw_GBps", "busbw_GBps", "wrong")


def result_row(collective: str, size_bytes: int, world_size: int, times_ms, wrong) -> dict:
    """The nccl-tests row of one transport's timed iterations. times_ms: each iteration's time
    (None/non-positive entries are skipped); wrong: elements that failed verification (None if
    the logs do not say). Time and bandwidth fields are None without an iteration; busbw is
    None for a collective without a factor."""
    times = [float(t) for t in times_ms or [] if t is not None and t > 0]
    row = {"collective": collective, "size_bytes": int(size_bytes),
           "count": int(size_bytes) // ELEMENT_BYTES, "type": ELEMENT_TYPE,
           "redop": "sum" if _norm_collective(collective) in REDUCING else "none",
           "time_median_ms": None, "time_mean_ms": None, "algbw_GBps": None,
           "busbw_GBps": None, "wrong": wrong}
    if not times:
        return row
    mean_ms = statistics.fmean(times)
    algbw = size_bytes / (mean_ms / 1e3) / 1e9
    row.update(time_median_ms=statistics.median(times), time_mean_ms=mean_ms, algbw_GBps=algbw)
    if _norm_collective(collective) in BUSBW_FACTORS:
        row["busbw_GBps"] = algbw * busbw_factor(collective, int(world_size))
    return row


def _cell(value, digits) -> str:
    """digits: decimals (int) or a format such as "4g" (bandwidths here span 1e-4..1 GB/s)."""
    if value is None:
        return "N/A"
    spec = digits if isinstance(digits, str) else f"{digits}f"
    return f"{value:.{spec}}" if isinstance(value, float) else str(value)


def table(rows: dict[str, dict]) -> str:
    """nccl-tests' columns, one line per transport (fits 100 columns)."""
    head = ("transport", "size(B)", "count", "type", "redop", "median(ms)", "mean(ms)",
            "algbw(GB/s)", "busbw(GB/s)", "#wrong")
    lines = [head]
    for name, r in rows.items():
        lines.append((name, str(r["size_bytes"]), str(r["count"]), r["type"], r["redop"],
                      _cell(r["time_median_ms"], 1), _cell(r["time_mean_ms"], 1),
                      _cell(r["algbw_GBps"], "4g"), _cell(r["busbw_GBps"], "4g"),
                      _cell(r["wrong"], 0)))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(line, widths)))
           for line in lines]
    return "\n".join(line.rstrip() for line in out)


def transport_result(tdir, model) -> dict:
    """The row of one transport directory: the collective, its size and world size from the
    worker.json the runner wrote, the times and #wrong from its run model (analysis.runmodel).
    Raises OSError / ValueError when worker.json is missing or unreadable."""
    config = parse_json(read_regular(Path(tdir) / "worker.json", MAX_WORKER_JSON_BYTES))
    needed = {"collective", "message_bytes", "world_size"}
    if not isinstance(config, dict) or not needed <= set(config):
        raise ValueError(f"{tdir}/worker.json: no collective / message_bytes / world_size")
    return result_row(config["collective"], config["message_bytes"], config["world_size"],
                      model.iteration_times_ms, model.wrong_elements)
