"""The fidelity monitor in time: when this machine stalled during a run, the share of the timed
phase it spent stalled, and which faults' recovery windows a stall touched.

A whole-run percentile can hide one stall that lands on a fault, exactly where `recovery_ms` is
measured; so each fault's recovery window (from the fault to the end of its recovery, or to the
next fault or the end of the traffic when it never recovered) is judged on its own, with the
same bounds as the whole run. A stall inside it voids that fault's recovery time.

The per-time evidence a run leaves:
  worker goodput samples  each worker samples on a fixed grid (every goodput interval): a sample
                          late by L says the collective's process did not run for L just before
                          it, the stall [t - L, t];
  endpoint lateness       cumulative histograms of the QPs' deadlines and received frames, one
                          snapshot every second or so and at exit: they place lateness only
                          between two snapshots, so a window is judged on the snapshots that
                          enclose it (never narrower than the window: a stall near it counts,
                          which errs towards void, never towards a clean window);
  ovs_stalls.json         each "Unreasonably long N ms poll interval" of ovs-vswitchd, logged
                          when the interval ends: the stall [t - N ms, t], on the wall clock
                          (clock.json maps it onto the logs' monotonic clock);
  cpu.csv                 the CPU meter's busy share every half second: evidence of load, not of
                          a stall (a busy machine can still serve every deadline in time).

Every time here is the emulated world's (the logs through analysis/jsonl.read_jsonl; the wall
clock's OVS and CPU times divided by k here). Pure: reads files, imports no Mininet or sockets.
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from analysis.jsonl import read_jsonl
from analysis.timescale import time_scale_of
from model import timescale
from model.events import Event
from model.lateness import lateness_bucket_floor_ns

# A deadline, frame or worker sample later than this many base RTTs is a stall: the whole-run
# bound of the lateness invariants (analysis/fidelity.py), applied locally.
STALL_LATENESS_RTTS = 0.5
# A window's worker samples are judged on the whole run's statistic, their p99 (inverted CDF,
# as analysis/fidelity.py's worker_lateness): under 100 samples that is the latest one, so one
# stall that lands on a short recovery is caught; over a long window it is not the length of the
# window that decides (the maximum of more samples only grows), and a stall short against the
# window lengthens the recovery inside it by at most its own duration.
WINDOW_WORKER_PERCENTILE = 99.0
# An endpoint's lateness in a window counts as a stall at the fault only when it passes what the
# endpoint's own snapshot intervals elsewhere in the timed phase pass this share of the time
# (split over the endpoints and the two kinds). A snapshot holds about a second of wall time,
# some tens of samples per endpoint, so its p99 is its latest sample, and a machine's ordinary
# jitter comes in bursts: judged alone against the whole run's p99 bound, windows are voided at
# the rate the machine jitters anywhere (docs/results/2026-11-29-recovery-window-jitter.md). A
# window no later than the run is elsewhere measures its recovery as well as any moment of the
# run does, and the whole-run checks judge those.
WINDOW_STALL_SHARE = 0.01
# Fewer snapshot intervals than this in the timed phase give no distribution to compare with:
# the window is then judged on its p99 alone.
WINDOW_MIN_INTERVALS = 20
# An ovs-vswitchd poll interval of this many base RTTs or more: the OVS invariant's bound.
OVS_STALL_RTTS = 1.0
DEFAULT_GOODPUT_INTERVAL_MS = 10.0  # the workers' sampling grid when worker.json has none
OVS_STALLS_FILE = "ovs_stalls.json"
OVS_LOG = Path("/var/log/openvswitch/ovs-vswitchd.log")   # on every server
# In a run over servers each other server's stall lines are kept under this name, so the OVS
# check judges every server's switches; their stamps must be on this machine's wall clock first,
# since the check's window is read on it (emulation/cluster/run_servers.py does both)
OTHER_OVS_LOG_PREFIX = "ovs-vswitchd@"
OTHER_OVS_LOG_SUFFIX = ".log"


def other_ovs_log(server: str) -> str:
    """The run directory's file of a server's ovs-vswitchd stall lines."""
    return f"{OTHER_OVS_LOG_PREFIX}{server}{OTHER_OVS_LOG_SUFFIX}"


def server_of_other_ovs_log(name: str) -> str:
    """other_ovs_log's inverse: the server a stall-line file's name names."""
    if not (name.startswith(OTHER_OVS_LOG_PREFIX) and name.endswith(OTHER_OVS_LOG_SUFFIX)):
        raise ValueError(f"{name!r} is not a server's stall-line file "
                         f"({other_ovs_log('<server>')})")
    return name[len(OTHER_OVS_LOG_PREFIX):-len(OTHER_OVS_LOG_SUFFIX)]


CPU_CSV = "cpu.csv"


# ---------------------------------------------------------------- lateness histograms


def histogram_counts(sparse) -> np.ndarray:
    """[[bucket, count], ...] (an endpoint's lateness event) -> dense counts."""
    out = np.zeros(0, dtype=np.int64)
    for bucket, count in sparse or []:
        b, c = int(bucket), int(count)
        if b < 0 or c < 0:
            raise ValueError(f"lateness bucket {bucket!r} count {count!r}")
        if b >= len(out):
            out = np.pad(out, (0, b + 1 - len(out)))
        out[b] += c
    return out


def _subtract(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    n = max(len(a), len(b))
    return np.clip(np.pad(a, (0, n - len(a))) - np.pad(b, (0, n - len(b))), 0, None)


def histogram_percentile_ns(counts: np.ndarray, percentile: float) -> int | None:
    """Nearest-rank percentile of a lateness histogram, as the upper edge of the bucket that
    holds it (never understates the lateness; within a quarter octave of it). None: empty."""
    total = int(counts.sum())
    if total == 0:
        return None
    rank = max(1, math.ceil(round(percentile * total / 100, 9)))
    bucket = int(np.searchsorted(np.cumsum(counts), rank))
    return lateness_bucket_floor_ns(bucket + 1)


def window_histograms(records: list[dict], start_ns: int | None, end_ns: int | None) -> dict:
    """{"timer": counts, "rx": counts} of one endpoint over [start_ns, end_ns], from its
    cumulative lateness events: the first snapshot at or after end_ns (else the last) minus the
    last one at or before start_ns (else nothing)."""
    snaps = sorted((r for r in records if isinstance(r.get("t_ns"), int)), key=lambda r: r["t_ns"])
    if not snaps:
        return {}
    end = next((r for r in snaps if end_ns is not None and r["t_ns"] >= end_ns), snaps[-1])
    before = [r for r in snaps if start_ns is not None and r["t_ns"] <= start_ns]
    start = before[-1] if before else {}
    return {kind: _subtract(histogram_counts(end.get(kind)), histogram_counts(start.get(kind)))
            for kind in ("timer", "rx")}


# ---------------------------------------------------------------- stalls in time


def goodput_interval_ns(tdir: Path) -> int:
    """The workers' sampling grid in emulated ns (worker.json's interval is the wall world's)."""
    interval_ms = DEFAULT_GOODPUT_INTERVAL_MS
    try:
        interval_ms = float(json.loads((Path(tdir) / "worker.json").read_text())
                            .get("goodput_interval_ms") or interval_ms)
    except (OSError, ValueError, TypeError, AttributeError):
        pass
    return int(timescale.emulated_time(interval_ms, time_scale_of(tdir)) * 1e6)


def worker_lateness(tdir: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{host: (sample times, each sample's lateness behind its grid)}, in emulated ns: sample k
    is due at the first sample's time + k intervals (traffic/workload/worker.py GoodputSampler);
    the last sample (taken at exit) is off the grid and left out."""
    step = goodput_interval_ns(tdir)
    out = {}
    for path in sorted(Path(tdir).glob("worker-h*.jsonl")):
        times = np.array([r["t_ns"] for r in read_jsonl(path, [], events=(Event.GOODPUT,))
                          if isinstance(r.get("t_ns"), int)], dtype=np.int64)[:-1]
        if len(times) < 2:
            continue
        late = np.clip(times - (times[0] + np.arange(len(times)) * step), 0, None)
        out[path.stem.removeprefix("worker-")] = (times, late)
    return out


def ovs_stall_spans(tdir: Path) -> list[tuple[int, int, float]]:
    """[(start_ns, end_ns, wall ms)] of the ovs-vswitchd stalls in ovs_stalls.json, on the logs'
    clock in the emulated world; [] when the file or clock.json is missing or unreadable (the
    OVS invariant then says why it was not measured)."""
    try:
        stalls = json.loads((Path(tdir) / OVS_STALLS_FILE).read_text())["stalls"]
        clock = json.loads((Path(tdir) / "clock.json").read_text())
        offset = int(clock["realtime_ns"]) - int(clock["monotonic_ns"])
    except (OSError, ValueError, KeyError, TypeError):
        return []
    k = time_scale_of(tdir)
    out = []
    for s in stalls:
        try:
            end_wall, ms = int(s["t_realtime_ns"]) - offset, float(s["ms"])
        except (KeyError, TypeError, ValueError):
            continue
        out.append((timescale.emulated_ns(end_wall - int(ms * 1e6), k),
                    timescale.emulated_ns(end_wall, k), ms))
    return out


def stall_spans(workers: dict, ovs: list, rtt_ns: int) -> list[tuple[int, int, str]]:
    """[(start_ns, end_ns, source)]: every worker sample later than STALL_LATENESS_RTTS base
    RTTs (its stall ends at the sample) and every OVS stall."""
    bound = STALL_LATENESS_RTTS * rtt_ns
    out = [(int(t - late), int(t), f"worker {host}")
           for host, (times, lates) in workers.items()
           for t, late in zip(times, lates) if late > bound]
    return out + [(lo, hi, "ovs-vswitchd") for lo, hi, _ in ovs]


def _covered_ns(spans, start_ns: int, end_ns: int) -> int:
    """Length of the union of spans clipped to [start_ns, end_ns]."""
    clipped = sorted((max(lo, start_ns), min(hi, end_ns)) for lo, hi in spans
                     if hi > start_ns and lo < end_ns)
    total, cur_lo, cur_hi = 0, None, None
    for lo, hi in clipped:
        if cur_hi is None or lo > cur_hi:
            total += 0 if cur_hi is None else cur_hi - cur_lo
            cur_lo, cur_hi = lo, hi
        else:
            cur_hi = max(cur_hi, hi)
    return total + (0 if cur_hi is None else cur_hi - cur_lo)


def stall_fraction(spans, start_ns, end_ns) -> dict | None:
    """The share of the timed phase [start_ns, end_ns] spent in a stall (the union of every
    source's stalls), and each source's own share; None without a timed phase."""
    if start_ns is None or end_ns is None or end_ns <= start_ns:
        return None
    length = end_ns - start_ns
    sources = sorted({"workers" if s.startswith("worker") else s for _, _, s in spans})
    return {"fraction": round(_covered_ns([(a, b) for a, b, _ in spans], start_ns, end_ns)
                              / length, 4),
            "by_source": {src: round(_covered_ns(
                [(a, b) for a, b, s in spans
                 if (s.startswith("worker") and src == "workers") or s == src],
                start_ns, end_ns) / length, 4) for src in sources},
            "timed_phase_ms": round(length / 1e6, 3),
            "what": "the share of the timed phase inside a stall: a worker sample later than "
                    f"{STALL_LATENESS_RTTS} base RTT (its process did not run for that long) "
                    "or an ovs-vswitchd poll interval logged as unreasonably long; the "
                    "endpoints' lateness histograms have no per-stall times and are judged "
                    "per window instead"}


def cpu_saturated_fraction(tdir: Path, start_ns, end_ns, threshold: float) -> float | None:
    """The share of [start_ns, end_ns] (emulated ns) in CPU-meter intervals whose busy share was
    at least `threshold` (cpu.csv: one row per interval, stamped at its end, wall ns)."""
    if start_ns is None or end_ns is None or end_ns <= start_ns:
        return None
    k = time_scale_of(tdir)
    try:
        with open(Path(tdir) / CPU_CSV, newline="") as f:
            rows = [(timescale.emulated_ns(int(r["t_ns"]), k), float(r["busy_fraction"]))
                    for r in csv.DictReader(f)]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    spans = [(prev_t, t) for (prev_t, _), (t, busy) in zip(rows, rows[1:]) if busy >= threshold]
    return round(_covered_ns(spans, start_ns, end_ns) / (end_ns - start_ns), 4)


# ---------------------------------------------------------------- recovery windows


def interval_p99s_ns(records, kind: str, start_ns, end_ns) -> list[tuple[int, int, int]]:
    """(start, end, p99 in wall ns) of each interval between consecutive lateness snapshots
    inside [start_ns, end_ns] (None: unbounded) that holds samples of `kind`."""
    snaps = sorted((r for r in records if isinstance(r.get("t_ns"), int)), key=lambda r: r["t_ns"])
    out = []
    for a, b in zip(snaps, snaps[1:]):
        if (start_ns is not None and a["t_ns"] < start_ns) or \
                (end_ns is not None and b["t_ns"] > end_ns):
            continue
        counts = _subtract(histogram_counts(b.get(kind)), histogram_counts(a.get(kind)))
        if counts.sum():
            out.append((a["t_ns"], b["t_ns"], histogram_percentile_ns(counts, 99.0)))
    return out


def ordinary_lateness(logs: dict, run: tuple) -> dict:
    """{"tests": endpoints x kinds, (host, kind): interval_p99s_ns over the timed phase `run`}:
    what ordinary_late_ns compares a window with."""
    out: dict = {"tests": 2 * len(logs)}
    for host, h in logs.items():
        for kind in ("timer", "rx"):
            out[(host, kind)] = interval_p99s_ns(h["lateness"], kind, *run)
    return out


def ordinary_late_ns(ordinary: dict, host: str, kind: str, lo: int, hi: int) -> int | None:
    """The p99 lateness (wall ns) that the endpoint's snapshot intervals outside [lo, hi] pass
    only WINDOW_STALL_SHARE (split over every endpoint and kind) of the time; None with fewer
    than WINDOW_MIN_INTERVALS of them."""
    others = [p99 for a, b, p99 in ordinary.get((host, kind), ()) if b < lo or a > hi]
    if len(others) < WINDOW_MIN_INTERVALS:
        return None
    share = WINDOW_STALL_SHARE / max(ordinary.get("tests", 1), 1)
    return int(np.quantile(others, 1.0 - share, method="higher"))


def _window_lateness(logs: dict, workers: dict, ovs: list, lo: int, hi: int, rtt_ns: int,
                     k: float, packet_rtt_ns: int, ordinary: dict | None = None
                     ) -> dict[str, tuple[float, str]]:
    """{source: (ratio to its stall bound, words)} of every source with evidence of a stall in
    [lo, hi]. The endpoints and OVS are judged against packet_rtt_ns (the base RTT without the
    propagation), the workers against rtt_ns (analysis/fidelity.py). An endpoint's p99 past
    the bound counts only when it is also past what the endpoint's snapshot intervals over the
    timed phase reach but rarely (`ordinary`: ordinary_lateness; None: p99 alone)."""
    out = {}
    for kind, what in (("timer", "served a QP deadline"), ("rx", "read a received frame")):
        for host, h in logs.items():
            hist = window_histograms(h["lateness"], lo, hi).get(kind)
            if hist is None or not hist.sum():
                continue
            p99 = timescale.emulated_time(histogram_percentile_ns(hist, 99.0), k)
            ratio = p99 / packet_rtt_ns / STALL_LATENESS_RTTS
            words = f"endpoint {host} {what} {p99 / 1e6:.2f} ms late (p99 over the snapshots " \
                    "around it)"
            usual = None if ordinary is None or ratio <= 1.0 else \
                ordinary_late_ns(ordinary, host, kind, lo, hi)
            if usual is not None and histogram_percentile_ns(hist, 99.0) <= usual:
                # no later than this endpoint is elsewhere in the run, which the whole-run
                # checks judge: at most the bound here
                ratio = 1.0
                words += (f", no later than the run's other snapshot intervals of it reach "
                          f"({timescale.emulated_time(usual, k) / 1e6:.2f} ms)")
            if ratio > out.get(f"{kind} lateness", (-1.0, ""))[0]:
                out[f"{kind} lateness"] = (ratio, words)
    for host, (times, lates) in workers.items():
        inside = (times - lates <= hi) & (times >= lo)
        if inside.any():
            n = int(inside.sum())
            late = float(np.percentile(lates[inside], WINDOW_WORKER_PERCENTILE,
                                       method="inverted_cdf"))
            ratio = late / rtt_ns / STALL_LATENESS_RTTS
            if ratio > out.get("worker lateness", (-1.0, ""))[0]:
                how = "" if n < 100 else f" (p99 of its {n} samples in the window)"
                out["worker lateness"] = (ratio, f"worker {host} ran {late / 1e6:.2f} ms late{how}")
    for s_lo, s_hi, ms in ovs:
        if s_hi >= lo and s_lo <= hi:
            ratio = (s_hi - s_lo) / packet_rtt_ns / OVS_STALL_RTTS
            if ratio > out.get("ovs stall", (-1.0, ""))[0]:
                out["ovs stall"] = (ratio, f"ovs-vswitchd did not poll for {ms:.0f} ms "
                                           "(wall clock)")
    return out


def recovery_windows(tdir: Path, logs: dict, rtt_ns: int, faults, traffic_end_ns,
                     workers=None, ovs=None, packet_rtt_ns: int | None = None,
                     timed_start_ns: int | None = None) -> list[dict]:
    """One judgement per fault that took effect, in order. faults: [(t_ns, recovery_ms)] as in
    summary.json (fault_times_ns, recovery_ms). The window runs from the fault to the end of its
    recovery, else to the next fault or the end of the traffic, and is at least one worker
    sampling interval long. `void`: some source's lateness inside it beyond its stall bound.
    packet_rtt_ns: the base RTT without the propagation (None: rtt_ns)."""
    workers = worker_lateness(tdir) if workers is None else workers
    ovs = ovs_stall_spans(tdir) if ovs is None else ovs
    k = time_scale_of(tdir)
    step = goodput_interval_ns(tdir)
    times = [t for t, _ in faults]
    ordinary = ordinary_lateness(logs, (timed_start_ns, traffic_end_ns))
    out = []
    for i, (t, rec) in enumerate(faults):
        if t is None:
            out.append({"t_ns": None, "void": False, "reason": None, "ratio": None})
            continue
        if rec is not None:
            hi = t + int(rec * 1e6)
        else:
            later = [x for x in times[i + 1:] if x is not None and x > t]
            hi = later[0] if later else (traffic_end_ns if traffic_end_ns is not None else t)
        hi = max(hi, t + step)
        found = _window_lateness(logs, workers, ovs, t, hi, rtt_ns, k, packet_rtt_ns or rtt_ns,
                                 ordinary)
        worst = max(found.items(), key=lambda kv: kv[1][0], default=None)
        void = worst is not None and worst[1][0] > 1.0
        out.append({"t_ns": t, "end_ns": hi, "recovery_ms": rec, "void": void,
                    "ratio": None if worst is None else round(worst[1][0], 4),
                    "evidence": {src: round(r, 4) for src, (r, _) in found.items()},
                    "reason": (f"a stall inside its recovery window: {worst[1][1]}, "
                               f"{worst[1][0]:.1f}x the bound" if void else None)})
    return out
