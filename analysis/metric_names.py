"""Every headline metric of a run, defined once: its key (summary.json, `mrclab analyze --json`
and `--csv`), its column heading (the console and analyze's table), its name as a reader says it
with the unit and the aggregation (report.html, the notebook, `mrclab compare`), how it is
computed, and the function that computes it. Whatever shows one of these metrics takes its value
and its name from here, so one run reads the same number under the same name in every output.

Rules shared by every metric:
- Times are the emulated world's (a run at time_scale k reads as the scenario declared it), and
  t = 0 is the start of the timed phase (the first rank's warmup_done): seconds_from_timed_start.
- An iteration's time is the collective's: from its first rank's start to its last rank's end
  (analysis/runmodel.py), over the timed iterations that every rank completed.
- Bus bandwidth follows NCCL (nccl-tests doc/PERFORMANCE.md): algbw = S / t with S the
  collective's size in bytes, busbw = algbw x busbw_factor; it is a rate per rank, comparable
  to one host's line rate. Here t is the MEDIAN iteration time: a fault makes the mean a summary
  of the outage, not of the typical iteration (the mean stays in the nccl-tests row, named so).
- Rates are Mbit/s (10^6 bit/s), the unit of the scenario's link rates.

Pure: no pandas, no I/O.
"""
from __future__ import annotations

import numbers
import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    key: str            # summary.json / analyze --json / --csv key
    header: str         # column heading in the console and analyze's table (unit included)
    label: str          # what a reader calls it: quantity, unit, aggregation
    definition: str     # how it is computed


METRICS = (
    Metric("median_iteration_ms", "med iter ms", "median iteration time (ms)",
           "median over the timed iterations of the collective's time (first rank's start to "
           "last rank's end)"),
    Metric("p99_iteration_ms", "p99 iter ms", "99th-percentile iteration time (ms)",
           "99th percentile (linear interpolation) of the timed iterations' times"),
    Metric("slowest_iteration_ms", "max iter ms", "slowest iteration time (ms)",
           "the longest timed iteration"),
    Metric("mean_iteration_ms", "mean iter ms", "mean iteration time (ms)",
           "mean of the timed iterations' times (nccl-tests' time)"),
    Metric("busbw_mbit", "busbw Mbit/s", "bus bandwidth per rank (Mbit/s, median iteration)",
           "NCCL busbw of the median iteration: S / median time x the collective's factor"),
    Metric("line_rate_fraction", "line rate %", "bus bandwidth / host line rate",
           "busbw_mbit over planes x host link rate (a host has one link per plane)"),
    Metric("goodput_sum_mbit", "goodput Mbit/s", "goodput summed over all hosts (Mbit/s, "
           "timed phase)", "payload every host delivered between the timed start and the end of "
           "the traffic, summed over hosts, over that time (a sum: it exceeds one link's rate)"),
    Metric("retransmissions", "retx", "retransmitted packets (sum over hosts)",
           "each worker's final counters: MRC/RoCE endpoint retransmissions, TCP's "
           "tcpi_total_retrans, summed over hosts"),
    Metric("recovery_ms", "recovery ms", "recovery time per fault (ms)",
           "from the fault until the goodput stays at or above 90% of what the surviving paths "
           "allow (analysis/recovery.py); `never` if it does not come back"),
    Metric("evs_retired", "EVs retired", "EVs retired (ASSUMED_BAD, sum over QPs)",
           "MRC entropy values the loss policy retired (analysis/retirements.py)"),
    Metric("healthy_evs_retired", "healthy EVs retired", "healthy EVs retired (sum over QPs)",
           "retired EVs whose path no fault touched: false verdicts of the loss policy"),
    Metric("cpu_busy_percent", "CPU %", "machine CPU busy (% of all cores, timed phase)",
           "the cores' busy share over the timed iterations (emulation/run/cpu_meter.py)"),
)
BY_KEY = {m.key: m for m in METRICS}
LABELS = {m.key: m.label for m in METRICS}
HEADERS = {m.key: m.header for m in METRICS}

BUSBW_FACTORS = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
    # each flow's sender link carries S once, as in send/recv
    "bisection": lambda n: 1.0,
    # Not in nccl-tests; derived as PERFORMANCE.md derives Reduce's: all data goes to the
    # target, here straight from each of the n-1 senders, so the target's link carries
    # (n-1) S and at best t = (n-1) S / B.
    "incast": lambda n: float(n - 1),
}


def norm_collective(name: str) -> str:
    """'all_reduce', 'AllReduce', 'all-reduce' -> 'allreduce' (the keys of BUSBW_FACTORS)."""
    return str(name).lower().replace("_", "").replace("-", "").replace(" ", "")


def busbw_factor(collective: str, n: int) -> float:
    """NCCL's correction factor busbw / algbw for n ranks (nccl-tests doc/PERFORMANCE.md,
    "Summary"): what turns S / t into the rate each rank's link must carry, so it compares
    with the link speed whatever n."""
    key = norm_collective(collective)
    if key not in BUSBW_FACTORS:
        raise ValueError(f"unknown collective {collective!r}; known: {', '.join(BUSBW_FACTORS)}")
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"world size must be an integer >= 1, got {n!r}")
    return BUSBW_FACTORS[key](int(n))


def _times(times_ms) -> list[float]:
    return [float(t) for t in times_ms or [] if t is not None and t > 0]


def median_iteration_ms(times_ms) -> float | None:
    times = _times(times_ms)
    return statistics.median(times) if times else None


def p99_iteration_ms(times_ms) -> float | None:
    """The 99th percentile with linear interpolation between closest ranks (numpy's default)."""
    times = sorted(_times(times_ms))
    if not times:
        return None
    pos = 0.99 * (len(times) - 1)
    low = int(pos)
    high = min(low + 1, len(times) - 1)
    return times[low] + (times[high] - times[low]) * (pos - low)


def slowest_iteration_ms(times_ms) -> float | None:
    return max(_times(times_ms), default=None)


def mean_iteration_ms(times_ms) -> float | None:
    times = _times(times_ms)
    return statistics.fmean(times) if times else None


def busbw_mbit(collective: str, size_bytes, world_size: int, iteration_ms) -> float | None:
    """NCCL's busbw in Mbit/s per rank of one iteration time (ms); None without a time or for a
    collective without a factor."""
    if iteration_ms is None or not iteration_ms > 0 or size_bytes is None:
        return None
    if norm_collective(collective) not in BUSBW_FACTORS:
        return None
    algbw_Bps = float(size_bytes) / (iteration_ms / 1e3)
    return algbw_Bps * busbw_factor(collective, int(world_size)) * 8 / 1e6


def line_rate_fraction(busbw: float | None, planes: int, host_link_mbit: float) -> float | None:
    """busbw (Mbit/s per rank) over a host's line rate, planes x host link rate."""
    if busbw is None or not planes or not host_link_mbit:
        return None
    return busbw / (planes * host_link_mbit)


def _at(samples, t: float) -> float:
    """The cumulative byte count at time t, linear between samples, flat outside them."""
    if t <= samples[0][0]:
        return samples[0][1]
    for (t0, b0), (t1, b1) in zip(samples, samples[1:]):
        if t <= t1:
            return b0 if t1 == t0 else b0 + (b1 - b0) * (t - t0) / (t1 - t0)
    return samples[-1][1]


def goodput_sum_mbit(samples, start_ns, end_ns) -> float | None:
    """Payload delivered by all hosts in [start_ns, end_ns] over that time, Mbit/s. samples:
    (t_ns, cumulative bytes of every host summed), time-sorted (runmodel.TransportRun.samples)."""
    samples = list(samples or [])
    if not samples or start_ns is None or end_ns is None or end_ns <= start_ns:
        return None
    delivered = _at(samples, end_ns) - _at(samples, start_ns)
    return delivered * 8 / ((end_ns - start_ns) / 1e9) / 1e6


def seconds_from_timed_start(t_ns, timed_start_ns) -> float | None:
    """The one time origin of every table, text and figure: seconds (emulated) since the start
    of the timed phase."""
    if t_ns is None or timed_start_ns is None:
        return None
    return (t_ns - timed_start_ns) / 1e9


def of_summary(s: dict) -> dict:
    """Every metric of a transport's summary.json (keys of METRICS), computed from its raw
    fields the way the runner writes them; what the summary cannot give is None."""
    times = s.get("iteration_times_ms")
    median = median_iteration_ms(times)
    bus = None
    if isinstance(s.get("world_size"), int) and s.get("collective"):
        bus = busbw_mbit(s["collective"], s.get("message_bytes"), s["world_size"], median)
    cpu = s.get("cpu")
    out = {"median_iteration_ms": median, "p99_iteration_ms": p99_iteration_ms(times),
           # a summary without its times (written by hand) keeps the figures it states
           "slowest_iteration_ms": slowest_iteration_ms(times) if times
           else s.get("slowest_iteration_ms"),
           "mean_iteration_ms": mean_iteration_ms(times) if times else s.get("mean_iteration_ms"),
           "busbw_mbit": bus,
           "cpu_busy_percent": (100 * cpu["busy_fraction"] if isinstance(cpu, dict)
                                and isinstance(cpu.get("busy_fraction"), (int, float)) else None)}
    for key in ("line_rate_fraction", "goodput_sum_mbit", "retransmissions", "recovery_ms",
                "evs_retired", "healthy_evs_retired"):
        out[key] = s.get(key)
    return out


def takeaway(s: dict) -> str:
    """What happened to one transport, in words: each fault's recovery, at its time in seconds
    from the timed start (the one time origin), and MRC's EVs retired on healthy paths."""
    parts = [] if s.get("verified") else ["PARTIAL" if s.get("partial") else "NOT verified"]
    faults, voids = s.get("faults") or [], s.get("recovery_void") or []
    for i, rec in enumerate(s.get("recovery_ms") or []):
        f = faults[i] if i < len(faults) else {}
        at = seconds_from_timed_start(f.get("t_ns"), s.get("timed_start_ns"))
        what = "never recovered" if rec is None else f"recovered in {rec:.0f} ms"
        void = " (void)" if i < len(voids) and voids[i] else ""
        when = f" ({f['when']})" if f.get("when") else ""
        parts.append(f"{f.get('action') or f'fault {i + 1}'}"
                     + ("" if at is None else f" at {at:.2f} s") + f"{when}: {what}{void}")
    if not parts:
        median = of_summary(s)["median_iteration_ms"]
        parts.append("no fault" + ("" if median is None else f", median iteration {median:.1f} ms"))
    if s.get("healthy_evs_retired") is not None:
        parts.append(f"{s['healthy_evs_retired']} healthy EVs retired")
    return "; ".join(parts)
