"""Whether a run measured the emulated fabric or this machine's CPU: the fidelity monitor.

An emulator's figure is worth something only when the emulated fabric, not the host's CPU, set
it (Mininet-HiFi: Handigol et al., "Reproducible network experiments using container-based
emulation", CoNEXT 2012, checks network invariants on every run and calls a run invalid when
they break). Every invariant here is a ratio to a time constant of the protocol or the link
(base RTT, serialization time, the queues' drain time), so its bound holds at any link rate:

  timer_lateness    how late the endpoint served its QPs' deadlines (p99), in base RTTs
  receive_lateness  how long received frames waited in the ring before the endpoint read them
                    (p99), in base RTTs
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
                    iterations, in base RTTs

Verdict of one invariant: ratio = measured / bound; "ok" at ratio <= 1, "degraded" up to
DEGRADED_MAX_RATIO, "invalid" above. The transport's verdict is its worst invariant's; an
invariant that could not be measured (no captures, kernel TCP has no endpoint loop, the OVS log
unreadable) is listed in `unmeasured` with the reason and does not vote; with nothing measured
at all the verdict is "degraded" (nothing vouches for the run). docs/fidelity.md explains each
bound for users.

Pure: reads a transport's run directory (endpoint logs, captures, ovs_stalls.json), imports no
Mininet or sockets. emulation/run_summary.py calls `transport_fidelity` for every transport.
"""
from __future__ import annotations

import html
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import pcap
from analysis.jsonl import read_jsonl
from analysis.timescale import time_scale_of
from model import timescale
from model.events import Event
from model.switchport import default_port_config
from traffic.endpoint_support import EndpointConfig, lateness_bucket_floor_ns

OK, DEGRADED, INVALID = "ok", "degraded", "invalid"
VERDICTS = (OK, DEGRADED, INVALID)
# A bound exceeded by at most this factor leaves figures that are off, but in the right order of
# magnitude ("degraded": read with care); more, and the machine set them ("invalid").
DEGRADED_MAX_RATIO = 2.0
# margins (bound / measured) are capped here, so a measured 0 stays a finite JSON number.
MARGIN_CAP = 1000.0

TIMER_LATENESS = "timer_lateness"
RECEIVE_LATENESS = "receive_lateness"
WORKER_LATENESS = "worker_lateness"
HELD_BEYOND_QUEUE = "held_beyond_queue_bound"
LINK_PACING = "link_pacing"
OVS_STALLS = "ovs_stalls"
INVARIANTS = (TIMER_LATENESS, RECEIVE_LATENESS, WORKER_LATENESS, HELD_BEYOND_QUEUE, LINK_PACING,
              OVS_STALLS)

# Timer and receive lateness: p99 at most half a base RTT. Above it, the endpoint's reaction time
# (a timeout firing, a SACK sent, a paced packet leaving) is a measurable part of the RTT the
# protocol sees, so RTT samples, RTOs and the pacing the protocol computes carry the CPU's delay.
LATENESS_P99_BOUND_RTTS = 0.5
LATENESS_PERCENTILES = (50.0, 99.0, 99.9)
LATENESS_MIN_SAMPLES = 100          # fewer samples than this say nothing about a p99
DEFAULT_GOODPUT_INTERVAL_MS = 10.0  # the workers' sampling grid when worker.json has none
# Held beyond the queue bound: p99.9 of (one-way delay / the path's bound) at most 1. A queue
# cannot hold a packet longer than its size drains at the link rate; 0.1% of packets may exceed
# it (the first packet of a flow through userspace OVS takes the slow path, an upcall).
HELD_P999_BOUND = 1.0
# Linux's default transmit queue of a veth (packets): the HTB leaf's FIFO limit when a port
# neither trims the transport's packets nor has [fabric] switch_buffer_kb.
DEFAULT_TXQUEUELEN = 1000
# Link pacing: while a packet waits for it, a link sends back to back (one serialization time
# apart, Mininet-HiFi's invariant); a gap above 2 serialization times is the link's clock
# lost (the qdisc or the switch not run for that long). At most 1% of such gaps.
PACING_GAP_SERIALIZATIONS = 2.0
PACING_LATE_FRACTION_BOUND = 0.01
PACING_MIN_GAPS = 50                # fewer provably backlogged gaps: no busy port to judge
# OVS stalls: a switch that does not poll for one base RTT holds every packet through it longer
# than the protocol's RTT. ovs-vswitchd logs only poll intervals of 1000 ms and more
# (lib/timeval.c), so any logged stall during the timed iterations breaks this bound ~100x.
OVS_STALL_BOUND_RTTS = 1.0
OVS_LOG = Path("/var/log/openvswitch/ovs-vswitchd.log")
OVS_STALLS_FILE = "ovs_stalls.json"          # in a transport's run directory
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
}


def default_min_base_rtt_ns() -> int:
    """The endpoints' floor of a QP's base RTT (the RTT their timers start from)."""
    return EndpointConfig.__dataclass_fields__["min_base_rtt_ns"].default


# ---------------------------------------------------------------- one invariant's verdict


def severity(ratio: float) -> str:
    """ok / degraded / invalid of one invariant from measured / bound."""
    if ratio <= 1.0:
        return OK
    return DEGRADED if ratio <= DEGRADED_MAX_RATIO else INVALID


def worst(verdicts) -> str:
    verdicts = list(verdicts)
    return max(verdicts, key=VERDICTS.index) if verdicts else OK


@dataclass
class Check:
    """One invariant measured: `measured` and `bound` in `unit`; `reason` says why the bound."""

    invariant: str
    measured: float
    bound: float
    unit: str
    reason: str

    @property
    def ratio(self) -> float:
        return self.measured / self.bound

    @property
    def verdict(self) -> str:
        return severity(self.ratio)

    @property
    def margin(self) -> float:
        return MARGIN_CAP if self.measured <= 0 else min(MARGIN_CAP, self.bound / self.measured)

    def violation(self) -> dict:
        return {"invariant": self.invariant, "measured": _round(self.measured),
                "bound": self.bound, "unit": self.unit, "ratio": _round(self.ratio),
                "severity": self.verdict, "reason": self.reason}


def _round(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


# ---------------------------------------------------------------- lateness (endpoint logs)


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


def endpoint_logs(tdir: Path, problems: list[str]) -> dict[str, dict]:
    """{host: {"lateness": [...], "qp": [...]}} from a transport directory's endpoint logs."""
    out = {}
    for path in sorted(Path(tdir).glob("endpoint-h*.jsonl")):
        host = path.stem.removeprefix("endpoint-")
        records = read_jsonl(path, problems, events=(Event.LATENESS, Event.QP))
        out[host] = {"lateness": [r for r in records if r.get("event") == Event.LATENESS],
                     "qp": [r for r in records if r.get("event") == Event.QP]}
    return out


def base_rtt_ns(logs: dict[str, dict]) -> tuple[int, str]:
    """(the base RTT the protocol's timers use, where it came from): the smallest of the QPs'
    base RTTs (their `qp` events; the endpoints floor them at min_base_rtt_ns), else the
    endpoints' default floor (kernel TCP, or no QP logged)."""
    values = [r["base_rtt_ns"] for h in logs.values() for r in h["qp"]
              if isinstance(r.get("base_rtt_ns"), int) and r["base_rtt_ns"] > 0]
    if values:
        return min(values), "the QPs' base RTT (smallest)"
    return default_min_base_rtt_ns(), "the endpoints' base RTT floor (no QP logged one)"


def lateness_checks(logs: dict[str, dict], rtt_ns: int, start_ns, end_ns,
                    measurements: dict, unmeasured: dict, k: float = 1.0) -> list[Check]:
    """timer_lateness and receive_lateness: each endpoint's p50/p99/p999 over the timed window
    into `measurements`; the check is on the worst endpoint's p99. k: the run's time scale (the
    histograms count wall-clock ns; model/timescale.py)."""
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
        checks.append(Check(name, worst_p99 / rtt_ns, LATENESS_P99_BOUND_RTTS, "base RTTs (p99)",
                            f"p99 lateness of {what} above {LATENESS_P99_BOUND_RTTS} base RTT "
                            "makes the endpoint's reaction time a measurable part of the RTT "
                            "the protocol sees"))
    return checks


def worker_lateness_check(tdir: Path, rtt_ns: int, start_ns, end_ns, measurements: dict,
                          unmeasured: dict) -> Check | None:
    """worker_lateness: every worker samples its goodput on a fixed grid (traffic/worker.py
    GoodputSampler: sample k is due at the first sample's time + k intervals); a sample's
    lateness is its time minus its grid time. The last sample (taken at exit) is off the grid."""
    interval_ms = DEFAULT_GOODPUT_INTERVAL_MS
    try:
        interval_ms = float(json.loads((Path(tdir) / "worker.json").read_text())
                            .get("goodput_interval_ms") or interval_ms)
    except (OSError, ValueError, TypeError, AttributeError):
        pass
    # worker.json's interval is the wall world's
    interval_ms = timescale.emulated_time(interval_ms, time_scale_of(tdir))
    per_host, worst_p99 = {}, None
    for path in sorted(Path(tdir).glob("worker-h*.jsonl")):
        times = np.array([r["t_ns"] for r in read_jsonl(path, [], events=(Event.GOODPUT,))
                          if isinstance(r.get("t_ns"), int)], dtype=np.int64)[:-1]
        if len(times) < 2:
            continue
        late = times - (times[0] + np.arange(len(times)) * int(interval_ms * 1e6))
        keep = np.ones(len(times), dtype=bool)
        if start_ns is not None:
            keep &= times >= start_ns
        if end_ns is not None:
            keep &= times <= end_ns
        late = np.clip(late[keep], 0, None)
        if len(late) < LATENESS_MIN_SAMPLES:
            continue
        ps = [float(np.percentile(late, p, method="inverted_cdf")) for p in LATENESS_PERCENTILES]
        per_host[path.stem.removeprefix("worker-")] = {
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


# ---------------------------------------------------------------- captures


@dataclass(frozen=True)
class FabricFacts:
    """What the capture invariants need to know about the fabric of a run."""

    host_link_mbit: float
    fabric_link_mbit: float
    mtu: int
    trimmed: bool                       # the switch ports trim this transport's data packets
    switch_buffer_bytes: int | None     # [fabric] switch_buffer_kb, in bytes
    host_groups: dict | None = None     # host name -> T0 group (None: unknown, longest paths)
    port_addrs: dict | None = None      # (host name, plane) -> the port's IPv6 address

    def port_queue_bytes(self, mbit: float, last_hop: bool) -> int:
        """The most a switch egress port's queue holds of this transport's packets: its trim
        threshold when it trims them, else its drop-tail limit (switch_buffer_kb, or the
        HTB leaf FIFO of DEFAULT_TXQUEUELEN frames)."""
        if self.trimmed:
            return default_port_config(mbit, last_hop, mtu=self.mtu).trim_bytes
        if self.switch_buffer_bytes is not None:
            return self.switch_buffer_bytes
        return DEFAULT_TXQUEUELEN * (self.mtu + 14)

    def drain_ns(self, nbytes: float, mbit: float) -> float:
        return nbytes * 8 / (mbit * 1e6) * 1e9

    def upstream_queue_ns(self, cross_group: bool) -> float:
        """Drain time of the queues before the last hop: T0 uplink and T1 downlink."""
        if not cross_group:
            return 0.0
        q = self.port_queue_bytes(self.fabric_link_mbit, False)
        return 2 * self.drain_ns(q, self.fabric_link_mbit)

    def path_queue_ns(self, cross_group: bool) -> float:
        """Drain time of every queue on the path, the last hop (T0 to host) included."""
        last = self.drain_ns(self.port_queue_bytes(self.host_link_mbit, True), self.host_link_mbit)
        return last + self.upstream_queue_ns(cross_group)

    def path_serialization_ns(self, frame_bytes, cross_group) -> np.ndarray:
        """A frame's serialization on every link of its path (switches store and forward)."""
        ser = 2 * np.asarray(frame_bytes, dtype=float) * 8e3 / self.host_link_mbit
        return ser + np.where(cross_group, 2 * np.asarray(frame_bytes, float) * 8e3
                              / self.fabric_link_mbit, 0.0)


MATCH_KEY = ["src", "dst", "qp", "psn", "retx"]


def matched_data(packets, start_ns, end_ns, facts: FabricFacts):
    """One row per MRC data packet seen leaving one host port and arriving at another, sent in
    [start_ns, end_ns]: sent_ns, received_ns, size, sender, receiver, plane, cross_group.
    (analysis/delay.py matches the same way; here the hosts and sizes are kept.)"""
    is_data = (packets["is_data"] if "is_data" in packets.columns
               else packets["opcode"].isin(pcap.DATA_OPCODES))
    data = packets[is_data]
    keys = data[MATCH_KEY]
    frame = keys.astype({c: str for c in MATCH_KEY if keys[c].dtype.kind not in "iub"}).assign(
        time_ns=data["time_ns"].astype("int64"), host=data["host"].astype(str),
        plane=data["plane"].astype(int), size=data["size"].astype("int64"),
        direction=data["direction"].astype(str))
    sent = (frame[frame["direction"] == "tx"].sort_values("time_ns")
            .groupby(MATCH_KEY, sort=False, observed=True).first())
    recv = (frame[frame["direction"] == "rx"].sort_values("time_ns")
            .groupby(MATCH_KEY, sort=False, observed=True).first())
    both = sent[["time_ns", "host", "plane", "size"]].rename(
        columns={"time_ns": "sent_ns", "host": "sender"}).join(
        recv[["time_ns", "host"]].rename(columns={"time_ns": "received_ns", "host": "receiver"}),
        how="inner")
    if start_ns is not None:
        both = both[both["sent_ns"] >= start_ns]
    if end_ns is not None:
        both = both[both["sent_ns"] <= end_ns]
    groups = facts.host_groups
    if groups:
        cross = [groups.get(a) != groups.get(b) or groups.get(a) is None
                 for a, b in zip(both["sender"], both["receiver"])]
    else:
        cross = [True] * len(both)
    return both.assign(cross_group=np.asarray(cross, dtype=bool),
                       delay_ns=both["received_ns"] - both["sent_ns"]).reset_index(drop=True) \
        if len(both) else pd.DataFrame(columns=["sent_ns", "received_ns", "size", "sender",
                                                "receiver", "plane", "cross_group", "delay_ns"])


# Kernel TCP over IPv6 in the captures (Ethernet, no SRv6: TCP runs over ECMP routing).
ETHERTYPE_IPV6, NEXT_HEADER_TCP, ETH_LEN, IPV6_LEN, TCP_MIN_LEN = 0x86DD, 6, 14, 40, 20


def _addresses(buf: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The IPv6 addresses at byte offsets `starts` of buf, as strings (parsed once each)."""
    raw = np.ascontiguousarray(buf[starts[:, None] + np.arange(16)]).view("V16").ravel()
    uniq, inverse = np.unique(raw, return_inverse=True)
    names = np.array([str(pcap.ipaddress.IPv6Address(u.tobytes())) for u in uniq], dtype=object)
    return names[inverse.reshape(-1)]


def tcp_segments(tdir: Path, clock, local_addrs: dict) -> pd.DataFrame:
    """Kernel TCP segments of a transport's captures, in the columns the capture invariants
    read (analysis/pcap.py decodes only MRC/RoCE): a segment that carries payload is a data
    packet; its match key is (addresses, ports, sequence number, TCP options), and the options
    hold the timestamp (TSval), which a retransmission renews. local_addrs: {(host, plane):
    the port's address} (tx when the segment's source is the capturing port)."""
    frames = []
    for path in sorted(Path(tdir).glob("pcaps/*.pcap")):
        host, plane = pcap.capture_identity(path)
        report = pcap.PcapReport(path=str(path))
        raw = path.read_bytes()
        try:
            linktype, ts, offs, incl, orig = pcap._walk_records(raw, report)
        except pcap.PcapError:
            continue
        if linktype != pcap.LINKTYPE_ETHERNET or not len(offs):
            continue
        buf = np.frombuffer(raw, dtype=np.uint8)
        header = ETH_LEN + IPV6_LEN + TCP_MIN_LEN
        ok = incl >= header
        offs, ts, orig, incl = offs[ok], ts[ok], orig[ok], incl[ok]

        def u(rel, width):
            out = np.zeros(len(offs), dtype=np.int64)
            for i in range(width):
                out = (out << 8) | buf[offs + rel + i].astype(np.int64)
            return out

        ok = (u(12, 2) == ETHERTYPE_IPV6) & (u(ETH_LEN + 6, 1) == NEXT_HEADER_TCP)
        offs, ts, orig, incl = offs[ok], ts[ok], orig[ok], incl[ok]
        if not len(offs):
            continue
        tcp = ETH_LEN + IPV6_LEN
        data_off = (u(tcp + 12, 1) >> 4) * 4
        payload = u(ETH_LEN + 4, 2) - data_off
        src, dst = (_addresses(buf, offs + ETH_LEN + at) for at in (8, 24))
        # the first 12 option bytes (Linux: NOP, NOP, timestamps) as two integers
        has_options = data_off >= TCP_MIN_LEN + 12
        options = np.where(has_options, u(tcp + 20, 8), -1), np.where(has_options,
                                                                        u(tcp + 28, 4), -1)
        local = local_addrs.get((host, plane))
        local = None if local is None else str(pcap.ipaddress.IPv6Address(local))   # canonical
        frames.append(pd.DataFrame({
            "time_ns": clock.to_monotonic(ts) if clock is not None else ts,
            "host": host, "plane": plane, "size": orig,
            "direction": np.where(src == local, "tx", "rx"),
            "src": src, "dst": dst, "qp": u(tcp, 2) * 65536 + u(tcp + 2, 2),
            "psn": u(tcp + 4, 4), "retx": options[0] * 2**20 + options[1] % 2**20,
            "is_data": payload > 0,
            "opcode": 0}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def held_check(matched, facts: FabricFacts, measurements: dict, unmeasured: dict) -> Check | None:
    """held_beyond_queue_bound: each data packet's one-way delay over its path's bound (every
    queue on the path full, its serialization on every link, plus the fastest forwarding any
    packet of the run saw beyond its serialization: the switches' unloaded cost)."""
    if not len(matched):
        unmeasured[HELD_BEYOND_QUEUE] = "no data packet was captured at both ends in the timed window"
        return None
    cross = matched["cross_group"].to_numpy(bool)
    ser = facts.path_serialization_ns(matched["size"].to_numpy(), cross)
    delay = matched["delay_ns"].to_numpy(float)
    forwarding = max(0.0, float(np.min(delay - ser)))
    queues = np.where(cross, facts.path_queue_ns(True), facts.path_queue_ns(False))
    ratio = delay / (queues + ser + forwarding)
    p999 = float(np.sort(ratio)[max(1, math.ceil(round(0.999 * len(ratio), 9))) - 1])
    measurements[HELD_BEYOND_QUEUE] = {
        "packets": int(len(ratio)), "beyond_bound": int((ratio > 1).sum()),
        "p999_delay_ms": round(float(np.percentile(delay, 99.9)) / 1e6, 3),
        "path_queue_ms": {"same_group": round(facts.path_queue_ns(False) / 1e6, 3),
                          "cross_group": round(facts.path_queue_ns(True) / 1e6, 3)},
        "unloaded_forwarding_ms": round(forwarding / 1e6, 3)}
    return Check(HELD_BEYOND_QUEUE, p999, HELD_P999_BOUND, "delay / path queue bound (p99.9)",
                 "a queue cannot hold a packet longer than its size drains at the link rate: a "
                 "packet delayed beyond every queue of its path waited for a CPU")


def pacing_check(packets, matched, facts: FabricFacts, start_ns, end_ns,
                 measurements: dict, unmeasured: dict) -> Check | None:
    """link_pacing at the host ports' receive side (the last hop, T0 to host: its departures
    are what the host port captures). The gap before a matched data packet counts as backlogged
    when the packet was provably waiting for the link when the previous frame finished: sent
    early enough to have crossed the fabric unloaded (the fastest delay of its sender-receiver
    pair and plane) and every upstream queue at its bound. A backlogged gap above
    PACING_GAP_SERIALIZATIONS serialization times of the previous frame is late; of a full
    frame when the previous was smaller (an ACK's microseconds are below what the qdisc's
    per-packet work and the capture's timestamps resolve)."""
    if not len(matched):
        unmeasured[LINK_PACING] = "no data packet was captured at both ends in the timed window"
        return None
    rx = packets[packets["direction"] == "rx"]
    if start_ns is not None:
        rx = rx[rx["time_ns"] >= start_ns]
    if end_ns is not None:
        rx = rx[rx["time_ns"] <= end_ns]
    pair_min = matched.groupby(["sender", "receiver", "plane"])["delay_ns"].transform("min")
    due = pd.DataFrame({
        "host": matched["receiver"].astype(str), "plane": matched["plane"].astype(int),
        "time_ns": matched["received_ns"].astype("int64"),
        "due_ns": (matched["sent_ns"] + pair_min + np.where(
            matched["cross_group"], facts.upstream_queue_ns(True), 0.0)).astype(float)})
    due = due.drop_duplicates(["host", "plane", "time_ns"])
    ports = pd.DataFrame({"host": rx["host"].astype(str), "plane": rx["plane"].astype(int),
                          "time_ns": rx["time_ns"].astype("int64"),
                          "size": rx["size"].astype("int64")})
    ports = ports.merge(due, on=["host", "plane", "time_ns"], how="left")
    per_port, backlogged, late = {}, 0, 0
    bytes_per_ns = facts.host_link_mbit * 1e6 / 8e9
    full_frame_ns = (facts.mtu + ETH_LEN) / bytes_per_ns
    for (host, plane), port in ports.groupby(["host", "plane"], sort=True):
        port = port.sort_values("time_ns", kind="stable")
        times = port["time_ns"].to_numpy(np.int64)
        ser_prev = port["size"].to_numpy(float)[:-1] / bytes_per_ns
        due_ns = port["due_ns"].to_numpy(float)[1:]
        # NaN (no matched send time) compares False: not provably waiting
        waiting = due_ns <= times[:-1] + ser_prev
        slow = np.diff(times) > PACING_GAP_SERIALIZATIONS * np.maximum(ser_prev, full_frame_ns)
        n_back, n_late = int(waiting.sum()), int((waiting & slow).sum())
        if n_back:
            per_port[f"{host}-p{plane}"] = {"backlogged_gaps": n_back, "late_gaps": n_late}
        backlogged += n_back
        late += n_late
    if backlogged < PACING_MIN_GAPS:
        unmeasured[LINK_PACING] = (f"only {backlogged} departures at host ports were provably "
                                   f"backlogged (fewer than {PACING_MIN_GAPS}): no busy port "
                                   "to judge")
        return None
    worst_ports = sorted(per_port.items(), key=lambda kv: -kv[1]["late_gaps"])[:4]
    measurements[LINK_PACING] = {"backlogged_gaps": backlogged, "late_gaps": late,
                                 "worst_ports": dict(worst_ports)}
    return Check(LINK_PACING, late / backlogged, PACING_LATE_FRACTION_BOUND,
                 f"fraction of backlogged gaps > {PACING_GAP_SERIALIZATIONS:g} serialization times",
                 "a link with a packet waiting sends back to back (Mininet-HiFi's invariant); a "
                 "longer gap is time the emulated link lost to the CPU")


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
    why they could not be read (the analysis then says the invariant was not measured)."""
    record: dict = {"log": str(log_path), "window_realtime_ns": [start_realtime_ns,
                                                                 end_realtime_ns],
                    "stalls": [], "error": None}
    if start_realtime_ns is None or end_realtime_ns is None:
        record["error"] = "the run has no timed window (no iteration logged)"
    else:
        try:
            text = Path(log_path).read_text(errors="replace")
        except OSError as exc:
            record["error"] = f"cannot read {log_path}: {exc.strerror or exc}"
        else:
            record["stalls"] = ovs_stalls_in(text, start_realtime_ns, end_realtime_ns)
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
                 "longest poll interval, base RTTs",
                 "a switch that does not poll for a base RTT holds every packet through it "
                 "longer than the protocol's RTT (ovs-vswitchd logs only stalls >= 1 s)")


# ---------------------------------------------------------------- one transport


def transport_fidelity(tdir, facts: FabricFacts, start_ns: int | None, end_ns: int | None,
                       packets=None) -> dict:
    """summary.json's `fidelity` of one transport run directory (start_ns..end_ns: the timed
    iterations, CLOCK_MONOTONIC). packets: its captures (analysis.pcap), loaded here when None.
    Never raises on a partial run: what cannot be measured is listed with the reason."""
    tdir = Path(tdir)
    problems: list[str] = []
    measurements: dict = {}
    unmeasured: dict = {}
    logs = endpoint_logs(tdir, problems)
    rtt_ns, rtt_source = base_rtt_ns(logs)
    measurements["base_rtt_ms"] = round(rtt_ns / 1e6, 3)
    measurements["base_rtt_source"] = rtt_source
    k = time_scale_of(tdir)
    checks = lateness_checks(logs, rtt_ns, start_ns, end_ns, measurements, unmeasured, k)
    worker = worker_lateness_check(tdir, rtt_ns, start_ns, end_ns, measurements, unmeasured)
    if worker is not None:
        checks.append(worker)
    checks += capture_checks(tdir, facts, start_ns, end_ns, packets, measurements, unmeasured,
                             problems)
    ovs = ovs_check(tdir, rtt_ns, measurements, unmeasured, k)
    if ovs is not None:
        checks.append(ovs)
    return assemble(checks, measurements, unmeasured, problems)


def capture_checks(tdir, facts, start_ns, end_ns, packets, measurements, unmeasured,
                   problems) -> list[Check]:
    if packets is None:
        if not list(Path(tdir).glob("pcaps/*.pcap")):
            why = "no captures ([options] capture = false, or the run stopped before them)"
            unmeasured[HELD_BEYOND_QUEUE] = unmeasured[LINK_PACING] = why
            return []
        try:
            packets = pcap.load_captures(tdir, clock=pcap.find_clock(tdir))
        except Exception as exc:  # noqa: BLE001 - a bad capture must not cost the verdict
            why = f"captures unreadable ({exc.__class__.__name__}: {exc})"
            unmeasured[HELD_BEYOND_QUEUE] = unmeasured[LINK_PACING] = why
            return []
    if not len(packets):
        try:
            packets = tcp_segments(tdir, pcap.find_clock(tdir), facts.port_addrs or {})
        except (OSError, ValueError) as exc:
            problems.append(f"TCP segments unreadable ({exc.__class__.__name__}: {exc})")
            packets = pd.DataFrame()
    if not len(packets):
        why = "the captures hold no MRC, RoCE or TCP packet"
        unmeasured[HELD_BEYOND_QUEUE] = unmeasured[LINK_PACING] = why
        return []
    try:
        matched = matched_data(packets, start_ns, end_ns, facts)
        out = [c for c in (held_check(matched, facts, measurements, unmeasured),
                           pacing_check(packets, matched, facts, start_ns, end_ns,
                                        measurements, unmeasured)) if c is not None]
    except (KeyError, ValueError, TypeError) as exc:
        why = f"captures not usable ({exc.__class__.__name__}: {exc})"
        unmeasured.setdefault(HELD_BEYOND_QUEUE, why)
        unmeasured.setdefault(LINK_PACING, why)
        problems.append(why)
        return []
    return out


def assemble(checks: list[Check], measurements: dict, unmeasured: dict,
             problems: list[str] | None = None) -> dict:
    """The `fidelity` object from the checks made and the invariants left unmeasured."""
    violations = [c.violation() for c in checks if c.verdict != OK]
    if checks:
        verdict = worst(c.verdict for c in checks)
    else:
        verdict = DEGRADED
        violations.append({"invariant": "evidence", "reason": "no invariant could be measured: "
                           "nothing vouches for this run's figures"})
    out = {"verdict": verdict, "violations": violations, "measurements": measurements,
           "margins": {c.invariant: _round(c.margin) for c in checks},
           "unmeasured": unmeasured}
    if problems:
        out["problems"] = problems[:10]
    return out


def add_cpu_evidence(fidelity: dict, cpu: dict | None) -> None:
    """The CPU meter's busy share beside the invariants (evidence, not a vote)."""
    if fidelity is not None and cpu and "busy_fraction" in cpu:
        fidelity.setdefault("measurements", {})["cpu_busy_fraction"] = cpu["busy_fraction"]


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
    lines = ["Fidelity: " + ", ".join(f"{t} {f.get('verdict', '?')}" for t, f in verdicts.items())
             + "."]
    if overall == OK:
        lines.append("Every invariant measured held: the figures measure the emulated fabric.")
    for t, f in verdicts.items():
        for text in voided(f):
            lines.append(f"{t}: {text}.")
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
