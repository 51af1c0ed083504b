"""Whether a run measured the emulated fabric or this machine's CPU: the fidelity monitor.

An emulator's figure is worth something only when the emulated fabric, not the host's CPU, set
it (Mininet-HiFi: Handigol et al., "Reproducible network experiments using container-based
emulation", CoNEXT 2012, checks network invariants on every run and calls a run invalid when
they break). Every invariant here is a ratio to a time constant of the protocol or the link
(base RTT, serialization time, the queues' drain time), so its bound holds at any link rate:

  timer_lateness    how late the endpoint served its QPs' deadlines (p99), in base RTTs
                    without the propagation (below)
  receive_lateness  how long received frames waited in the ring before the endpoint read them
                    (p99), in base RTTs without the propagation
  worker_lateness   how late each worker's goodput sampler (a thread on a fixed grid, in the
                    process that runs the collective, every transport) ran (p99), in base RTTs
  held_beyond_queue_bound
                    data packets whose one-way fabric delay (host port to host port) exceeds
                    what the queues of their path can hold (p99.9 of delay / path bound): such a
                    packet waited for a CPU, not in a queue
  link_pacing       at host ports, departures later than PACING_GAP_SERIALIZATIONS
                    serialization times after the previous one while a packet was provably
                    waiting for the link (fraction of such gaps)
  ovs_stalls        ovs-vswitchd's "Unreasonably long N ms poll interval" during the timed
                    iterations, in base RTTs without the propagation
  recovery_window_stalls
                    each fault's recovery window judged on its own (analysis/fidelity_windows.py):
                    the worst lateness inside it over its bound; a window above 1 voids that
                    fault's recovery_ms
  clock_alignment   a run over servers: the least certain server clock's alignment bound
                    (model/clockalign.py), in base RTTs
  fabric_link_pacing  never measured (T0-T1 links have no captures and no timed counters):
                    listed under `unmeasured` with what can and cannot be checked there

The per-packet invariants (the endpoints' timers and reads, the switches' polls) are judged
against the base RTT without the fabric's propagation delay (FabricFacts.propagation_rtt_ns):
the endpoints add that delay in emulated time at no CPU cost, and what a late wake-up disturbs
is sized by serialization and queues (ECN marks from two frames, trims at a few ms of drain),
as the QPs' own timer margins are (traffic/core/rtt.py). With no propagation both are the base
RTT. The worker acts per message, on the scale of the whole round trip.

Verdict of one invariant: ratio = measured / bound; "ok" at ratio <= 1, "degraded" up to
DEGRADED_MAX_RATIO, "invalid" above. The transport's verdict is its worst invariant's; an
invariant that could not be measured (no captures, kernel TCP has no endpoint loop, the OVS log
unreadable) is listed in `unmeasured` with the reason and does not vote; with nothing measured
at all the verdict is "degraded" (nothing vouches for the run). docs/fidelity.md explains each
bound for users.

Pure: reads a transport's run directory (endpoint logs, captures, ovs_stalls.json), imports no
Mininet or sockets. emulation/run/run_summary.py calls `transport_fidelity` for every transport.
The verdict rules are analysis/fidelity_verdict.py; the invariants read from captures are
analysis/fidelity_captures.py; the evidence in time (recovery windows, stall fraction) is
analysis/fidelity_windows.py; the verdict's words in every output are
analysis/fidelity_words.py; the lateness and OVS invariants and the report's paragraph are here.
"""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np

from analysis import fidelity_windows as windows
from analysis import fidelity_words
from analysis.cpu_usage import SATURATED_BUSY_FRACTION
from analysis.fidelity_captures import FabricFacts, capture_checks
from analysis.fidelity_verdict import (CLOCK_ALIGNMENT, DEGRADED, FABRIC_PACING,
                                       HELD_BEYOND_QUEUE, LINK_PACING, OK, OVS_STALLS,
                                       RECEIVE_LATENESS, RECOVERY_WINDOWS, TIMER_LATENESS,
                                       WORKER_LATENESS, Check, assemble, worst)
from analysis.fidelity_windows import histogram_percentile_ns, window_histograms
from analysis.jsonl import read_jsonl
from analysis.timescale import time_scale_of
from model import clockalign, timescale
from model.events import Event
from model.propagation import variable_rtt_ns
from model.transport_defaults import MIN_BASE_RTT_NS

# Timer and receive lateness: p99 at most half a base RTT (without the propagation). Above it,
# the endpoint's reaction time (a timeout firing, a SACK sent, a paced packet leaving) is a
# measurable part of the RTT the protocol sees, so RTT samples, RTOs and the pacing the protocol
# computes carry the CPU's delay.
LATENESS_P99_BOUND_RTTS = 0.5
LATENESS_PERCENTILES = (50.0, 99.0, 99.9)
LATENESS_MIN_SAMPLES = 100          # fewer samples than this say nothing about a p99
# OVS stalls: a switch that does not poll for one base RTT holds every packet through it longer
# than the protocol's RTT. ovs-vswitchd logs only poll intervals of 1000 ms and more
# (lib/timeval.c), so any logged stall during the timed iterations breaks this bound ~100x.
OVS_STALL_BOUND_RTTS = 1.0
OVS_LOG = windows.OVS_LOG
OVS_STALLS_FILE = windows.OVS_STALLS_FILE     # in a transport's run directory
_OVS_STALL = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z\|\d+\|timeval[^|]*\|WARN\|"
                        r"Unreasonably long (\d+)ms poll interval")

# What a broken invariant voids, in words (report.html, the notebook, the run's table notes).
VOIDS = {
    WORKER_LATENESS: "the processes that run the collective were scheduled late, so iteration "
                     "times measure this machine's CPU, not the fabric",
    TIMER_LATENESS: "the endpoints' timers fired late, so iteration times and recovery times "
                    "measure this machine's CPU, not the fabric",
    RECEIVE_LATENESS: "received packets waited for the endpoint's CPU, so RTTs, ACK timing and "
                      "iteration times measure this machine's CPU, not the fabric",
    HELD_BEYOND_QUEUE: "packets waited in the switches longer than any queue can hold them, so "
                       "one-way delays, congestion signals and loss verdicts measure this "
                       "machine's CPU, not the fabric's queues",
    LINK_PACING: "links sat idle while packets waited for them, so goodput and line-rate "
                 "fractions understate the fabric",
    OVS_STALLS: "a switch stopped forwarding for a second or more, so losses, timeouts and "
                "recovery times in that window are the machine's, not the scenario's faults'",
    RECOVERY_WINDOWS: "this machine stalled inside a fault's recovery window, so that fault's "
                      "recovery time measures the stall, not the transport (void in the tables)",
    CLOCK_ALIGNMENT: "a server's clock may be off by more than a quarter of a base RTT, so the "
                     "merged logs and captures may order events across servers wrongly: "
                     "one-way delays and recovery times that span servers are uncertain",
}
# What the per-port evidence cannot show on the fabric's own links (docs/fidelity.md, Limits).
FABRIC_PACING_UNMEASURED = (
    "fabric links (T0-T1) have no captures and their queue counters are one snapshot at "
    "teardown, without times, so a gap at a backlogged fabric port cannot be measured; a fabric "
    "port stalled longer than its queue drains shows up in held_beyond_queue_bound (its path "
    "bound counts the T0 uplink's and the T1 downlink's queues), and a whole switch's stall in "
    "ovs_stalls")


def default_min_base_rtt_ns() -> int:
    """The endpoints' floor of a QP's base RTT (the RTT their timers start from)."""
    return MIN_BASE_RTT_NS


# ---------------------------------------------------------------- lateness (endpoint logs)


def endpoint_logs(tdir: Path, problems: list[str]) -> dict[str, dict]:
    """{host: {"lateness": [...], "qp": [...]}} from a transport directory's endpoint logs."""
    out = {}
    for path in sorted(Path(tdir).glob("endpoint-h*.jsonl")):
        host = path.stem.removeprefix("endpoint-")
        records = read_jsonl(path, problems, events=(Event.LATENESS, Event.QP))
        out[host] = {"lateness": [r for r in records if r.get("event") == Event.LATENESS],
                     "qp": [r for r in records if r.get("event") == Event.QP]}
    return out


def base_rtt_ns(logs: dict[str, dict], frame_rtt_ns: int | None = None) -> tuple[int, str]:
    """(the base RTT the protocol's timers use, where it came from): the smallest of the QPs'
    base RTTs (their `qp` events), else the fabric's unloaded full-frame round trip on its
    shortest path (FabricFacts.frame_rtt_ns: kernel TCP logs no QP), else, with the fabric
    unknown, MIN_BASE_RTT_NS."""
    values = [r["base_rtt_ns"] for h in logs.values() for r in h["qp"]
              if isinstance(r.get("base_rtt_ns"), int) and r["base_rtt_ns"] > 0]
    if values:
        return min(values), "the QPs' base RTT (smallest)"
    if frame_rtt_ns:
        return frame_rtt_ns, "the fabric's unloaded full-frame round trip (no QP logged one)"
    return default_min_base_rtt_ns(), "the endpoints' base RTT floor (no QP logged one)"


def lateness_checks(logs: dict[str, dict], rtt_ns: int, start_ns, end_ns,
                    measurements: dict, unmeasured: dict, k: float = 1.0) -> list[Check]:
    """timer_lateness and receive_lateness: each endpoint's p50/p99/p999 over the timed window
    into `measurements`; the check is on the worst endpoint's p99 over rtt_ns (the base RTT
    without the propagation). k: the run's time scale (the histograms count wall-clock ns;
    model/timescale.py)."""
    checks = []
    for kind, name, what in (("timer", TIMER_LATENESS, "QP deadlines served"),
                             ("rx", RECEIVE_LATENESS, "received frames read")):
        per_host, worst_p99 = {}, None
        for host, h in logs.items():
            hist = window_histograms(h["lateness"], start_ns, end_ns).get(kind)
            if hist is None or hist.sum() < LATENESS_MIN_SAMPLES:
                continue
            ps = [timescale.emulated_time(histogram_percentile_ns(hist, p), k)
                  for p in LATENESS_PERCENTILES]
            per_host[host] = {"samples": int(hist.sum()),
                              **{f"p{p:g}_ms".replace(".", ""): round(v / 1e6, 3)
                                 for p, v in zip(LATENESS_PERCENTILES, ps)}}
            worst_p99 = ps[1] if worst_p99 is None else max(worst_p99, ps[1])
        if worst_p99 is None:
            unmeasured[name] = ("no endpoint logged lateness (kernel TCP has no endpoint loop)"
                                if not logs else
                                f"no endpoint logged {LATENESS_MIN_SAMPLES}+ lateness samples "
                                f"of {what} in the timed window")
            continue
        measurements[name] = per_host
        checks.append(Check(name, worst_p99 / rtt_ns, LATENESS_P99_BOUND_RTTS,
                            "base RTTs without propagation (p99)",
                            f"p99 lateness of {what} above {LATENESS_P99_BOUND_RTTS} base RTT "
                            "makes the endpoint's reaction time a measurable part of the RTT "
                            "the protocol sees"))
    return checks


def worker_lateness_check(tdir: Path, rtt_ns: int, start_ns, end_ns, measurements: dict,
                          unmeasured: dict) -> Check | None:
    """worker_lateness: every worker samples its goodput on a fixed grid (traffic/workload/worker.py
    GoodputSampler: sample k is due at the first sample's time + k intervals); a sample's
    lateness is its time minus its grid time. The last sample (taken at exit) is off the grid."""
    per_host, worst_p99 = {}, None
    for host, (times, late) in windows.worker_lateness(tdir).items():
        keep = np.ones(len(times), dtype=bool)
        if start_ns is not None:
            keep &= times >= start_ns
        if end_ns is not None:
            keep &= times <= end_ns
        late = late[keep]
        if len(late) < LATENESS_MIN_SAMPLES:
            continue
        ps = [float(np.percentile(late, p, method="inverted_cdf")) for p in LATENESS_PERCENTILES]
        per_host[host] = {
            "samples": int(len(late)), **{f"p{p:g}_ms".replace(".", ""): round(v / 1e6, 3)
                                          for p, v in zip(LATENESS_PERCENTILES, ps)}}
        worst_p99 = ps[1] if worst_p99 is None else max(worst_p99, ps[1])
    if worst_p99 is None:
        unmeasured[WORKER_LATENESS] = (f"no worker logged {LATENESS_MIN_SAMPLES}+ goodput "
                                       "samples in the timed window")
        return None
    measurements[WORKER_LATENESS] = per_host
    return Check(WORKER_LATENESS, worst_p99 / rtt_ns, LATENESS_P99_BOUND_RTTS, "base RTTs (p99)",
                 f"p99 lateness of the collective's process above {LATENESS_P99_BOUND_RTTS} base "
                 "RTT makes its reaction time (posting work, moving kernel TCP's data) a "
                 "measurable part of the RTT")


# ---------------------------------------------------------------- ovs-vswitchd


def ovs_stalls_in(text: str, start_realtime_ns: int, end_realtime_ns: int) -> list[dict]:
    """ovs-vswitchd's "Unreasonably long N ms poll interval" lines stamped within the window
    (CLOCK_REALTIME ns): [{"t_realtime_ns", "ms", "line"}]."""
    from datetime import datetime, timezone
    out = []
    for line in text.splitlines():
        m = _OVS_STALL.match(line)
        if not m:
            continue
        stamp = datetime.fromisoformat(m.group(1)).replace(tzinfo=timezone.utc)
        t = int(stamp.timestamp()) * 1_000_000_000 + stamp.microsecond * 1000
        if start_realtime_ns <= t <= end_realtime_ns:
            out.append({"t_realtime_ns": t, "ms": int(m.group(2)), "line": line.strip()[:240]})
    return out


def record_ovs_stalls(tdir: Path, start_realtime_ns: int | None, end_realtime_ns: int | None,
                      log_path: Path = OVS_LOG) -> dict:
    """Write the transport's ovs_stalls.json: the stalls ovs-vswitchd logged in the window, or
    why they could not be read (the analysis then says the invariant was not measured); in a
    run over servers also each other server's, from its stall lines in the run directory (each
    stall then names its server)."""
    record: dict = {"log": str(log_path), "window_realtime_ns": [start_realtime_ns,
                                                                 end_realtime_ns],
                    "stalls": [], "error": None}
    others = sorted(Path(tdir).glob(windows.other_ovs_log("*")))
    if others:
        record["other_logs"] = [p.name for p in others]
    if start_realtime_ns is None or end_realtime_ns is None:
        record["error"] = "the run has no timed window (no iteration logged)"
    else:
        try:
            text = Path(log_path).read_text(errors="replace")
        except OSError as exc:
            record["error"] = f"cannot read {log_path}: {exc.strerror or exc}"
        else:
            record["stalls"] = ovs_stalls_in(text, start_realtime_ns, end_realtime_ns)
        for path in others:
            server = windows.server_of_other_ovs_log(path.name)
            record["stalls"] += [{**stall, "server": server} for stall in ovs_stalls_in(
                path.read_text(errors="replace"), start_realtime_ns, end_realtime_ns)]
    (Path(tdir) / OVS_STALLS_FILE).write_text(json.dumps(record, indent=1))
    return record


def ovs_check(tdir: Path, rtt_ns: int, measurements: dict, unmeasured: dict,
              k: float = 1.0) -> Check | None:
    """k: the run's time scale (the log's poll intervals are wall-clock ms)."""
    path = Path(tdir) / OVS_STALLS_FILE
    try:
        record = json.loads(path.read_text())
        stalls = record["stalls"]
        error = record.get("error")
        longest = max((int(s["ms"]) for s in stalls), default=0)
    except FileNotFoundError:
        unmeasured[OVS_STALLS] = f"no {OVS_STALLS_FILE} in the run directory"
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        unmeasured[OVS_STALLS] = f"{OVS_STALLS_FILE} unreadable ({exc.__class__.__name__}: {exc})"
        return None
    if error:
        unmeasured[OVS_STALLS] = error
        return None
    measurements[OVS_STALLS] = {"stalls": len(stalls), "longest_ms": longest}
    return Check(OVS_STALLS, timescale.emulated_time(longest * 1e6, k) / rtt_ns,
                 OVS_STALL_BOUND_RTTS,
                 "longest poll interval, base RTTs without propagation",
                 "a switch that does not poll for a base RTT holds every packet through it "
                 "longer than the protocol's RTT (ovs-vswitchd logs only stalls >= 1 s)")


# ---------------------------------------------------------------- clocks (a run over servers)


def clock_check(tdir: Path, rtt_ns: int, measurements: dict, unmeasured: dict,
                k: float = 1.0) -> Check | None:
    """clock_alignment: every other server's logs and captures were moved onto this machine's
    clock by its alignment (clockalign.CLOCKS_FILE, written when the run's files were fetched);
    the least certain one's bound (start and end error plus drift, wall ns) over the base RTT
    (wall ns at time scale k). Past CLOCK_BOUND_RTTS a packet could seem to arrive on one
    server before it left another (model/clockalign.py)."""
    path = Path(tdir) / clockalign.CLOCKS_FILE
    try:
        alignments = clockalign.alignments_from_dict(json.loads(path.read_text()))
    except FileNotFoundError:
        unmeasured[CLOCK_ALIGNMENT] = "a run on one machine: one clock, nothing to align"
        return None
    except (OSError, ValueError) as exc:          # clockalign.ClockError is a ValueError
        unmeasured[CLOCK_ALIGNMENT] = f"{clockalign.CLOCKS_FILE} unreadable: {exc}"
        return None
    if not alignments:
        unmeasured[CLOCK_ALIGNMENT] = "no other server's clock was measured"
        return None
    server, rtts = clockalign.worst_bound_rtts(alignments, timescale.wall_time(rtt_ns, k))
    measurements[CLOCK_ALIGNMENT] = {
        "worst_server": server,
        "servers": {s: {"bound_ms": round(a.bound_ns / 1e6, 4), "drift_ppm": round(a.drift_ppm, 3)}
                    for s, a in alignments.items()}}
    return Check(CLOCK_ALIGNMENT, rtts, clockalign.CLOCK_BOUND_RTTS,
                 "least certain server clock's alignment bound (wall), base RTTs (wall)",
                 "two servers' clocks each known to within a quarter of a base RTT are within "
                 "half of one of each other, less than any packet's one-way trip, so the merged "
                 "timeline keeps every packet's departure before its arrival")


# ---------------------------------------------------------------- one transport


def recovery_window_check(tdir: Path, logs: dict, rtt_ns: int, faults, end_ns,
                          measurements: dict, unmeasured: dict, workers, ovs,
                          packet_rtt_ns: int, start_ns: int | None = None) -> Check | None:
    """recovery_window_stalls: each fault's recovery window judged on its own
    (analysis/fidelity_windows.py); the worst window's lateness over its stall bound
    (packet_rtt_ns: the base RTT without the propagation)."""
    if not faults:
        unmeasured[RECOVERY_WINDOWS] = "no fault took effect: no recovery window to judge"
        return None
    judged = windows.recovery_windows(tdir, logs, rtt_ns, faults, end_ns, workers, ovs,
                                      packet_rtt_ns, start_ns)
    measurements[RECOVERY_WINDOWS] = judged
    ratios = [w["ratio"] for w in judged if w.get("ratio") is not None]
    if not ratios:
        unmeasured[RECOVERY_WINDOWS] = "no lateness evidence inside any fault's recovery window"
        return None
    return Check(RECOVERY_WINDOWS, max(ratios), 1.0,
                 "worst lateness in a fault's recovery window, over its bound",
                 "a stall inside a fault's recovery window lengthens exactly the recovery time "
                 "measured there, however short it is against the whole run")


def transport_fidelity(tdir, facts: FabricFacts, start_ns: int | None, end_ns: int | None,
                       packets=None, faults=None) -> dict:
    """summary.json's `fidelity` of one transport run directory (start_ns..end_ns: the timed
    iterations, CLOCK_MONOTONIC). packets: its captures (analysis.pcap), loaded here when None.
    faults: [(t_ns, recovery_ms)] of the faults that took effect (summary.json's fault_times_ns
    and recovery_ms), each judged in its recovery window. Never raises on a partial run: what
    cannot be measured is listed with the reason."""
    tdir = Path(tdir)
    problems: list[str] = []
    measurements: dict = {}
    unmeasured: dict = {}
    logs = endpoint_logs(tdir, problems)
    rtt_ns, rtt_source = base_rtt_ns(logs, facts.frame_rtt_ns)
    measurements["base_rtt_ms"] = round(rtt_ns / 1e6, 3)
    measurements["base_rtt_source"] = rtt_source
    packet_rtt_ns = variable_rtt_ns(rtt_ns, facts.propagation_rtt_ns)
    if packet_rtt_ns != rtt_ns:
        measurements["packet_rtt_ms"] = round(packet_rtt_ns / 1e6, 3)
        measurements["packet_rtt_source"] = (
            f"the base RTT without the {facts.propagation_rtt_ns / 1e6:g} ms of propagation "
            "the endpoints add: what timer, receive and OVS lateness are judged against")
    k = time_scale_of(tdir)
    measurements["time_scale"] = k
    checks = lateness_checks(logs, packet_rtt_ns, start_ns, end_ns, measurements, unmeasured, k)
    worker = worker_lateness_check(tdir, rtt_ns, start_ns, end_ns, measurements, unmeasured)
    checks += capture_checks(tdir, facts, start_ns, end_ns, packets, measurements, unmeasured,
                             problems)
    unmeasured[FABRIC_PACING] = FABRIC_PACING_UNMEASURED
    ovs = ovs_check(tdir, packet_rtt_ns, measurements, unmeasured, k)
    workers, spans = windows.worker_lateness(tdir), windows.ovs_stall_spans(tdir)
    stalls = windows.stall_fraction(windows.stall_spans(workers, spans, rtt_ns), start_ns, end_ns)
    if stalls is not None:
        measurements["stall_fraction"] = stalls
    recovery = recovery_window_check(tdir, logs, rtt_ns, faults, end_ns, measurements,
                                     unmeasured, workers, spans, packet_rtt_ns, start_ns)
    clocks = clock_check(tdir, rtt_ns, measurements, unmeasured, k)
    checks += [c for c in (worker, ovs, recovery, clocks) if c is not None]
    return assemble(checks, measurements, unmeasured, problems)


def add_cpu_evidence(fidelity: dict, cpu: dict | None, tdir=None, start_ns=None,
                     end_ns=None) -> None:
    """The CPU meter's evidence beside the invariants (not a vote: the invariants say whether
    the load cost the run its times): the busy share over the timed phase and, from cpu.csv in
    tdir, the share of the timed phase (start_ns..end_ns, emulated) the cores were saturated."""
    if fidelity is None or not cpu or "busy_fraction" not in cpu:
        return
    m = fidelity.setdefault("measurements", {})
    m["cpu_busy_fraction"] = cpu["busy_fraction"]
    if tdir is not None:
        share = windows.cpu_saturated_fraction(Path(tdir), start_ns, end_ns,
                                               SATURATED_BUSY_FRACTION)
        if share is not None:
            m["cpu_saturated_fraction"] = share


# ---------------------------------------------------------------- words


def voided(fidelity: dict | None) -> list[str]:
    """What each broken invariant voids, one sentence each (empty when ok)."""
    if not fidelity or fidelity.get("verdict") == OK:
        return []
    out = []
    for v in fidelity.get("violations") or []:
        text = VOIDS.get(v.get("invariant"))
        if text is None:
            text = v.get("reason") or "the run's figures cannot be trusted"
        if text not in out:
            out.append(text)
    return out


def run_verdicts(run_dir) -> dict[str, dict]:
    """{transport: fidelity} of a run directory: the top summary.json's, else each transport
    directory's summary.json ({} when neither has one)."""
    run_dir = Path(run_dir)
    out = {}
    try:
        top = json.loads((run_dir / "summary.json").read_text())
        for name, t in (top.get("transports") or {}).items():
            if isinstance(t, dict) and isinstance(t.get("fidelity"), dict):
                out[name] = t["fidelity"]
        if not top.get("transports") and isinstance(top.get("fidelity"), dict):
            out[top.get("transport") or run_dir.name] = top["fidelity"]
    except (OSError, ValueError, AttributeError):
        pass
    if not out:
        for path in sorted(run_dir.glob("*/summary.json")):
            try:
                s = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(s, dict) and isinstance(s.get("fidelity"), dict):
                out[s.get("transport") or path.parent.name] = s["fidelity"]
    return out


def _sentences(run_dir) -> tuple[str, list[str]]:
    verdicts = run_verdicts(run_dir)
    if not verdicts:
        return "unknown", ["Fidelity: not assessed (this run has no fidelity verdict)."]
    overall = worst(f.get("verdict", DEGRADED) for f in verdicts.values())
    scales = sorted({time_scale_of(Path(run_dir) / t) for t in verdicts})
    lines = ["Fidelity: " + ", ".join(f"{t} {f.get('verdict', '?')}" for t, f in verdicts.items())
             + f"; time_scale {', '.join(f'{k:g}' for k in scales)}."]
    if overall == OK:
        lines.append("Every invariant measured held: the figures measure the emulated fabric.")
    for t, f in verdicts.items():
        for text in voided(f):
            lines.append(f"{t}: {text}.")
    if overall != OK:
        lines.append("For a valid run: " + fidelity_words.next_step(
            str(Path(run_dir) / "scenario.toml"), scales[-1]) + ".")
    return overall, lines


def paragraph_html(run_dir) -> str:
    """The report's opening paragraph: each transport's fidelity verdict and, when not ok, which
    comparison it voids."""
    overall, lines = _sentences(run_dir)
    cls = "verdict" if overall == OK else "verdict bad"
    return (f"<div class='{cls}'>" + "".join(f"<p>{html.escape(s)}</p>" for s in lines)
            + "</div>")


def paragraph_markdown(run_dir) -> str:
    """The notebook's opening paragraph (paragraph_html's content as Markdown)."""
    overall, lines = _sentences(run_dir)
    return ("**" + lines[0] + "**" + ("" if len(lines) == 1 else "\n\n" + "\n".join(
        f"- {s}" for s in lines[1:])))
