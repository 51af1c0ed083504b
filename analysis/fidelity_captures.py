"""The fidelity monitor's invariants measured from a run's captures: held_beyond_queue_bound
(a packet's one-way fabric delay against what the queues of its path can hold) and link_pacing
(gaps at a busy host port), with the fabric facts they need (FabricFacts).

Apart from analysis/fidelity.py because these read packets (analysis.pcap, matched between
the two ends of the fabric), where the other invariants read the endpoints' logs and
ovs-vswitchd's. Pure: reads files, imports no Mininet or sockets.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import pcap
from analysis.delay import MATCH_KEY, pair_arrivals
from analysis.fidelity_verdict import HELD_BEYOND_QUEUE, LINK_PACING, Check
from model.propagation import bdp_bytes
from model.switchport import default_port_config


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
    # The unloaded round trip of a full frame on the fabric's shortest host-to-host path, as this
    # transport sees it (model/propagation.py path_rtt_ns): the base RTT of a run whose
    # transport logs none (kernel TCP). None: unknown.
    frame_rtt_ns: int | None = None
    # That path's propagation both ways (model/propagation.py), 0 when the transport bypasses the
    # delay line: the endpoints hold frames for it in emulated time, at no CPU cost.
    propagation_rtt_ns: int = 0
    # The round trip the switch ports' thresholds are sized on (model/propagation.py
    # port_bdp_bytes: the longest path's, propagation included); 0: no BDP term.
    ports_rtt_ns: int = 0

    def port_queue_bytes(self, mbit: float, last_hop: bool) -> int:
        """The most a switch egress port's queue holds of this transport's packets: its trim
        threshold when it trims them, else its drop-tail limit (switch_buffer_kb, or the
        HTB leaf FIFO of DEFAULT_TXQUEUELEN frames)."""
        if self.trimmed:
            return default_port_config(mbit, last_hop, mtu=self.mtu,
                                       bdp_bytes=bdp_bytes(mbit, self.ports_rtt_ns)).trim_bytes
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


def matched_data(packets, start_ns, end_ns, facts: FabricFacts):
    """One row per data packet seen leaving one host port and arriving at another, sent in
    [start_ns, end_ns]: sent_ns, received_ns, size, sender, receiver, plane, cross_group.
    (Matched as analysis/delay.py matches: pair_arrivals; here the hosts and sizes are kept.)"""
    is_data = (packets["is_data"] if "is_data" in packets.columns
               else packets["opcode"].isin(pcap.DATA_OPCODES))
    data = packets[is_data]
    keys = data[MATCH_KEY]
    frame = keys.astype({c: str for c in MATCH_KEY if keys[c].dtype.kind not in "iub"}).assign(
        time_ns=data["time_ns"].astype("int64"), host=data["host"].astype(str),
        plane=data["plane"].astype(int), size=data["size"].astype("int64"),
        direction=data["direction"].astype(str))
    sent = frame[frame["direction"] == "tx"][[*MATCH_KEY, "time_ns", "host", "plane", "size"]]
    recv = frame[frame["direction"] == "rx"][[*MATCH_KEY, "time_ns", "host"]]
    both = pair_arrivals(
        sent.rename(columns={"time_ns": "sent_ns", "host": "sender"}),
        recv.rename(columns={"time_ns": "received_ns", "host": "receiver"}))
    both = both.astype({"plane": "int64", "size": "int64"})[
        ["sent_ns", "sender", "plane", "size", "received_ns", "receiver"]]
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
