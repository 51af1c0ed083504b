"""Pieces of the endpoint that hold no socket: configuration, JSONL event log, per-port pacer,
counters. Kept apart from traffic/nic/endpoint.py so they are unit-tested without root.
"""
from __future__ import annotations

import heapq
import json
import math
import os
import threading
import time
from dataclasses import dataclass, field, fields
from pathlib import Path

from model import propagation, timescale
from model.lateness import LATENESS_BUCKETS, lateness_bucket
from model.propagation import frame_rtt_ns  # noqa: F401 - the endpoint's name for it
from model.switchport import default_port_config
from model.topology import FabricSpec
from traffic.core.ev_events import EV_EVENT_RATE_PER_S
from traffic.core.path_prober import OTHER_PATH_MARGIN_NS
from traffic.core.reliability import MRCConfig
from traffic.core.rtt import RttEstimator

# Wire overhead of the largest data packet (SRv6 mode, TSETH and ImmDt present):
# Ethernet 14 + outer IPv6 40 + IPv6 40 + UDP 8 + BTH 12 + METH 4 + TSETH 8 + RETH 16 + ImmDt 4 + ICRC 4
MAX_DATA_OVERHEAD = 150


def payload_for_mtu(mtu: int) -> int:
    """Per-packet payload that fits the largest data packet's headers in one `mtu`-byte IP
    packet, rounded down to 64 bytes: 1344 at 1500, 4032 at 4200, 8832 at 9000."""
    return (mtu + 14 - MAX_DATA_OVERHEAD) // 64 * 64


class EndpointError(RuntimeError):
    """A request to the endpoint that cannot be served (unknown QP, bad region, ...)."""


class ConfigError(ValueError):
    """An endpoint config that cannot run; the message names the key."""


# Margin on the trimmers' queue bound: the BPF virtual queue drains at the nominal link rate,
# while HTB also counts framing and userspace OVS forwards in bursts after a CPU stall.
TRIM_BOUND_MARGIN = 1.25


def trimming_delay_bound_ns(spec: FabricSpec, time_scale: float = 1.0) -> int:
    """Most queueing a data packet that is NOT trimmed can meet on the longest path (T0 uplink,
    T1 downlink, T0 last hop) of a fabric whose switch ports use the default thresholds
    (emulation/vqueue.default_port_config): the sum of the ports' trim thresholds as drain
    times, with TRIM_BOUND_MARGIN. Above it the packet would have been trimmed (and NACKed).
    time_scale: the spec's rates are wall rates of a dilated run (model/switchport.py)."""
    return int(sum(_trim_drains_s(spec, time_scale)) * TRIM_BOUND_MARGIN * 1e9)


def _trim_drains_s(spec: FabricSpec, time_scale: float) -> list[float]:
    """The trim threshold of each switch port on the longest path, as its drain time."""
    drains = []
    for mbit, last_hop in ((spec.fabric_link_mbit, False), (spec.fabric_link_mbit, False),
                           (spec.host_link_mbit, True)):
        cfg = default_port_config(mbit, last_hop, mtu=spec.mtu, time_scale=time_scale,
                                  bdp_bytes=propagation.port_bdp_bytes(spec, mbit))
        drains.append(cfg.trim_bytes * 8 / (mbit * 1e6))
    return drains


def trimming_bounds(spec: FabricSpec, time_scale: float, trimming: bool) -> dict:
    """The QP settings a trimming fabric's thresholds give (0 without trimming):
    fabric_delay_bound_ns, the most queueing an untrimmed packet meets on a path
    (trimming_delay_bound_ns), and fabric_reorder_bound_ns, the largest one port's full
    trimming queue (with TRIM_BOUND_MARGIN): how far one path of a QP can lag another when a
    port on it is full and the other's ports are not."""
    if not trimming:
        return {"fabric_delay_bound_ns": 0, "fabric_reorder_bound_ns": 0}
    return {"fabric_delay_bound_ns": trimming_delay_bound_ns(spec, time_scale),
            "fabric_reorder_bound_ns": int(max(_trim_drains_s(spec, time_scale))
                                           * TRIM_BOUND_MARGIN * 1e9)}


# The QP settings (MRCConfig fields) every endpoint starts from on the emulated fabric, where
# they differ from the pure model's defaults; a config's `qp` table ([mrc.qp] of a scenario)
# overrides each under the same name. The margins in base RTTs (rto_rtts, reorder_rtts,
# probe_timeout_rtts, reverse_probe_rtts) multiply only the part of the base RTT that is not
# the path's propagation, which is added once (traffic/core/rtt.py wait_ns): a fabric with
# propagation delay does not multiply it. Why each value:
EMULATED_FABRIC_QP_DEFAULTS = {
    # The RTO also grows with srtt + 4 rttvar (from RTT samples, so queueing under load counts);
    # the QP's base RTT is its min RTT sample, a full data frame's round trip, so 16 x is tens
    # of ms on the emulated fabric (half that timed out spuriously under incast).
    "rto_rtts": 16.0,
    "probe_period_rtts": 20.0,
    "skip_rtts": 2.0,
    # SACK-gap loss needs a packet sent this many base RTTs later to have arrived: under load the
    # userspace switches add queueing of several base RTTs that differs per path, and a tighter
    # window retires healthy EVs.
    # The window also grows to srtt + 4 rttvar - base RTT when queues build (adaptive_reorder),
    # so the fixed part only has to cover the idle fabric's jitter.
    "reorder_rtts": 1.0,
    # Probe timers, same reason: a probe answer queues behind data in the userspace switches
    # and on the CPU, so 4 base RTTs (the pure default) fail most probes under load and the
    # resulting storm of re-probes of "bad" EVs eats the CPU.
    "probe_timeout_rtts": 16.0,
    "reverse_probe_rtts": 8.0,
    # SACK coalescing: one SACK per ack_every data packets (immediate on ECN, AckReq = last
    # packet of a message or a retransmission, or a bitmap half full), else after ack_delay_rtts.
    # Every SACK costs a packet through three userspace switches and Python work at each end;
    # at 1 the SACKs would be half the fabric's packets.
    "ack_every": 4,
    "ack_delay_rtts": 0.25,
    # A fresh EV's first packet meets OVS's slow path (upcall). (This and loss_verdict_ns are
    # the tolerant loss rule's; OCP's rule, the default, ignores both.)
    "first_packet_grace": True,
    # CPU-starved userspace switches hold packets before the egress trimmer, so a trimmed
    # header's NACK can reach the sender long after the SACK gap or timeout that declared it
    # lost, longer still with tcpdump loading the CPU; the window covers that tail. The EV is
    # out of use meanwhile, so the window only delays the retirement (and its replacement), not
    # the move off the path.
    "loss_verdict_ns": 300_000_000,
}

# QP settings the endpoint derives from its own: set them there, not in `qp`.
QP_SETTINGS_FROM_THE_ENDPOINT = {
    "base_rtt_ns": "measured per peer (fix it with the endpoint's base_rtt_ns)",
    "max_payload": "what fits the ports' MTU (cap it with the endpoint's max_payload)",
    "pacing_burst_packets": "the endpoint's pacing_burst_packets",
    "port_rate_Bps": "the endpoint's port_rate_mbit x pacing_fraction",
    "fabric_reorder_bound_ns": "one port's full trimming queue, from the fabric's trim "
                               "thresholds",
    "propagation_rtt_ns": "the path's propagation both ways, from [fabric] host_link_delay_ms "
                          "and fabric_link_delay_ms",
}


MIN_PATH_PROBE_MS = 1.0     # path prober interval / timeout floor (when on)


@dataclass
class EndpointConfig:
    """Everything an endpoint process needs; loaded from JSON (or TOML) by `load`.

    The endpoint's own settings are fields; the settings of its QPs are MRCConfig fields in
    `qp`, applied over EMULATED_FABRIC_QP_DEFAULTS, so each QP setting has one name (MRCConfig's)
    from the scenario's [mrc.qp] table to the code.
    """

    host: int
    fabric: dict = field(default_factory=dict)      # FabricSpec.to_dict()
    routing: str = "srv6"                           # srv6 | ecmp
    event_log: str | None = None
    control_socket: str | None = None
    planes: list | None = None                      # NIC ports to open; default all planes
    port_rate_mbit: float | None = None             # default: fabric host_link_mbit
    pacing_fraction: float = 0.96                   # pace a bit under line rate (HTB shaping)
    pacing_burst_packets: int = 4
    # True: frames arrive through a PACKET_MMAP ring (packet_io.RingPort), read in batches with
    # no system call per frame; False: the reference path, one recv() per frame (PacketPort).
    fast_path: bool = True
    max_payload: int | None = None                  # payload cap; None: payload_for_mtu(fabric mtu)
    base_rtt_ns: int | None = None                  # None: measure with probes at QP creation
    default_base_rtt_ns: int = 1_000_000            # used if probing gets no answer
    rtt_probe_count: int = 8
    # An optional floor of a QP's base RTT (and its nscc_min_base_rtt_ns unless `qp` sets that).
    # None: none. The timers start from what the probes measure plus a full frame's
    # serialization on the path (MRCConfig.nscc_frame_rtt_ns), both facts of the fabric.
    min_base_rtt_ns: int | None = None
    # The ports' link state is read at every link change the kernel announces (rtnetlink:
    # traffic/nic/link_events.py) and polled every port_poll_backstop_ms besides, for an
    # announcement lost; without the announcements (ports not opened by the endpoint, as a
    # test's) it is polled every port_poll_ms.
    port_poll_ms: float = 2.0
    port_poll_backstop_ms: float = 100.0
    goodput_interval_ms: float = 10.0
    seed: int | None = None                         # EV choice; None: from the clock
    qp: dict = field(default_factory=dict)          # MRCConfig fields, over the defaults above
    # Path prober (traffic/core/path_prober.py): one probe per path to every peer this often, ms
    # (0: off). Each host probes 2-10 paths per peer, so 20 ms is 100-500 probes/s per host.
    path_probe_interval_ms: float = 0.0
    # A probe unanswered this long is lost. Under load a probe answer waits behind data in the
    # userspace switches and on a busy CPU (EV probes need 16 base RTTs for the same reason).
    path_probe_timeout_ms: float = 250.0
    # A probe lost on a path that answers nothing is judged by answers over the peer's other
    # paths to probes sent at least this much later (traffic/core/path_prober.py): longer than
    # a starved switch holds a path's packets, with room for the pauses of a loaded machine.
    path_probe_margin_ms: float = OTHER_PATH_MARGIN_NS / 1e6
    # EV state-change events offered to the controller: at most this many per second
    # (traffic/core/ev_events.py), so a flapping path cannot flood it.
    ev_event_rate_per_s: float = EV_EVENT_RATE_PER_S
    # The run's time scale (emulation/calibration/time_scale.py): every other setting here is already in
    # the wall world; only the switches' thresholds, bytes of the declared rate, need it.
    time_scale: float = 1.0

    def __post_init__(self) -> None:
        if isinstance(self.host, bool) or not isinstance(self.host, int) or self.host < 0:
            raise ConfigError(f"host must be a non-negative integer, got {self.host!r}")
        try:
            self.spec = FabricSpec.from_dict(self.fabric) if self.fabric else FabricSpec()
        except (TypeError, ValueError) as e:
            raise ConfigError(f"fabric: {e}") from None
        if self.max_payload is None:
            self.max_payload = payload_for_mtu(self.spec.mtu)
        if not isinstance(self.fast_path, bool):
            raise ConfigError(f"fast_path must be true or false, got {self.fast_path!r}")
        if self.host >= self.spec.num_hosts:
            raise ConfigError(f"host {self.host} not in the fabric (hosts 0..{self.spec.num_hosts - 1})")
        if self.routing not in ("srv6", "ecmp"):
            raise ConfigError(f"routing must be 'srv6' or 'ecmp', got {self.routing!r}")
        if self.planes is None:
            self.planes = list(range(self.spec.planes))
        if not isinstance(self.planes, list) or not self.planes or any(
                isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < self.spec.planes
                for p in self.planes):
            raise ConfigError(f"planes must be a non-empty list of plane numbers "
                              f"0..{self.spec.planes - 1}, got {self.planes!r}")
        for name in ("pacing_fraction", "port_poll_ms", "port_poll_backstop_ms",
                     "goodput_interval_ms",
                     "path_probe_margin_ms", "ev_event_rate_per_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"{name} must be a positive number, got {value!r}")
        try:
            timescale.check(self.time_scale)
        except timescale.TimeScaleError as exc:
            raise ConfigError(str(exc)) from None
        if self.pacing_fraction > 1.5:
            raise ConfigError(f"pacing_fraction {self.pacing_fraction} is above 1.5x line rate")
        for name in ("pacing_burst_packets", "max_payload", "default_base_rtt_ns", "rtt_probe_count",
                     "min_base_rtt_ns"):
            value = getattr(self, name)
            if name == "min_base_rtt_ns" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if not 64 <= self.max_payload <= 9000:
            raise ConfigError(f"max_payload must be 64..9000 bytes, got {self.max_payload}")
        for name in ("path_probe_interval_ms", "path_probe_timeout_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    0 <= value <= 60_000) or (name == "path_probe_timeout_ms" and value == 0):
                raise ConfigError(f"{name} must be a number of ms in "
                                  f"{'(0' if name.endswith('timeout_ms') else '[0'}..60000], "
                                  f"got {value!r}")
            # the prober works in whole ns and one loop turn takes far longer than a
            # microsecond: below the minimum it would spin (or, at < 1 ns, not start at all)
            if value and value < MIN_PATH_PROBE_MS:
                raise ConfigError(f"{name} must be 0 (off) or at least {MIN_PATH_PROBE_MS:g} ms, "
                                  f"got {value!r}")
        if self.base_rtt_ns is not None and (isinstance(self.base_rtt_ns, bool)
                                             or not isinstance(self.base_rtt_ns, int)
                                             or self.base_rtt_ns <= 0):
            raise ConfigError(f"base_rtt_ns must be a positive integer (ns) or null, "
                              f"got {self.base_rtt_ns!r}")
        if self.port_rate_mbit is None:
            self.port_rate_mbit = float(self.spec.host_link_mbit)
        elif isinstance(self.port_rate_mbit, bool) or not isinstance(
                self.port_rate_mbit, (int, float)) or self.port_rate_mbit <= 0:
            raise ConfigError(f"port_rate_mbit must be a positive number, got {self.port_rate_mbit!r}")
        if not isinstance(self.qp, dict):
            raise ConfigError(f"qp must be a table of QP settings, got {self.qp!r}")
        self._check_qp_settings()

    def _check_qp_settings(self) -> None:
        """A QP setting the QP cannot take must fail here, at validation, not be accepted,
        logged as applied and then dropped (or fail at QP creation inside a worker)."""
        known = {f.name for f in fields(MRCConfig)}
        unknown = sorted(set(self.qp) - known)
        if unknown:
            raise ConfigError(f"qp: unknown QP setting(s) {', '.join(unknown)}; "
                              f"known: {', '.join(sorted(known - set(QP_SETTINGS_FROM_THE_ENDPOINT)))}")
        for name in sorted(set(self.qp) & set(QP_SETTINGS_FROM_THE_ENDPOINT)):
            raise ConfigError(f"qp: {name} is derived by the endpoint: "
                              f"{QP_SETTINGS_FROM_THE_ENDPOINT[name]}")
        try:
            MRCConfig(**{**EMULATED_FABRIC_QP_DEFAULTS, **self.qp})
        except (TypeError, ValueError) as e:
            raise ConfigError(f"qp: {e}") from None

    @classmethod
    def from_dict(cls, data: dict) -> "EndpointConfig":
        if not isinstance(data, dict):
            raise ConfigError(f"endpoint config must be a JSON object, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        moved = sorted(unknown & MOVED_TO_QP.keys())
        if moved:
            raise ConfigError(f"{', '.join(moved)}: QP settings go in the qp table, as "
                              + ", ".join(f"qp.{MOVED_TO_QP[k]}" for k in moved))
        if unknown:
            raise ConfigError(f"unknown endpoint config key(s): {', '.join(sorted(unknown))}; "
                              f"known: {', '.join(sorted(known))}")
        if "host" not in data:
            raise ConfigError("endpoint config needs 'host' (the host number)")
        return cls(**data)

    @classmethod
    def load(cls, path: str) -> "EndpointConfig":
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except OSError as e:
            raise ConfigError(f"cannot read endpoint config {path}: {e}") from None
        try:
            if path.endswith(".toml"):
                import tomllib
                data = tomllib.loads(raw.decode())
            else:
                data = json.loads(raw)
        except ValueError as e:
            raise ConfigError(f"endpoint config {path} is not valid: {e}") from None
        return cls.from_dict(data)


# Keys an endpoint config no longer takes because they are QP settings, and their name in `qp`.
MOVED_TO_QP = {**{name: name for name in (
    "rto_rtts", "probe_period_rtts", "skip_rtts", "reorder_rtts", "probe_timeout_rtts",
    "reverse_probe_rtts", "ev_count", "ack_every", "ack_delay_rtts", "rto_ns", "probe_period_ns",
    "skip_ns", "fabric_delay_bound_ns", "first_packet_grace")},
    "loss_verdict_ms": "loss_verdict_ns (in ns)"}


def qp_timers(qp: MRCConfig, transport: str = "mrc") -> dict:
    """Base RTT, RTO, probe period and skip time a QP starts with (its `qp` event), as its RTT
    estimator derives them (traffic/core/rtt.py): fixed values win over the multiples of its
    base RTT. A RoCE QP's RTO is its IB ACK timeout."""
    rtt = RttEstimator(qp)
    base = rtt.base_rtt_ns
    rto = qp.roce_ack_interval_ns if transport == "roce" else rtt.rto_base_ns()
    return {"base_rtt_ns": base, "rto_ns": rto,
            "probe_period_ns": qp.probe_period_ns or int(qp.probe_period_rtts * base),
            "skip_ns": qp.skip_ns or int(qp.skip_rtts * base)}


# A NIC port's receive buffer (RingPort's ring, PacketPort's SO_RCVBUF) when the BDP asks for
# no more, and the most any BDP gets (the hosts share the machine's memory).
DEFAULT_RX_BUFFER_BYTES = 4 << 20
MAX_RX_BUFFER_BYTES = 256 << 20


def rx_buffer_bytes(spec: FabricSpec, slot_bytes: int) -> int:
    """A NIC port's receive buffer, `slot_bytes` per frame: a BDP of full frames on this plane
    (model/propagation.py) from every peer, since each peer's window can arrive at once while
    the loop is held; at least the default, at most MAX_RX_BUFFER_BYTES."""
    frames = math.ceil(propagation.bdp_packets(spec)) * (spec.num_hosts - 1)
    return min(MAX_RX_BUFFER_BYTES, max(DEFAULT_RX_BUFFER_BYTES, frames * slot_bytes))


def path_timing(spec: FabricSpec, frame_bytes: int, across_groups: bool) -> dict:
    """The QP settings that are facts of the path to a peer (model/propagation.py): a full
    frame of `frame_bytes` stored and forwarded on every link (nscc_frame_rtt_ns) and the
    propagation both ways (propagation_rtt_ns), which the delay lines emulate."""
    return {"nscc_frame_rtt_ns": frame_rtt_ns(spec, frame_bytes, across_groups),
            "propagation_rtt_ns": 2 * propagation.one_way_delay_ns(spec, across_groups)}


def peer_delays_ns(spec: FabricSpec, host: int) -> dict[int, int]:
    """{peer host: one-way propagation delay of the path from it to `host`, ns}."""
    per = spec.hosts_per_group
    return {peer: propagation.one_way_delay_ns(spec, peer // per != host // per)
            for peer in range(spec.num_hosts) if peer != host}


class DelayLine:
    """The emulated propagation delay of an endpoint's receive path: a received message is held
    until its arrival time plus the one-way delay of its path (model/propagation.py), then
    handed on, in release order. One delay per peer keeps each path's order. What it costs a
    frame is a heap push and pop; next_release() is part of the loop's next wake-up."""

    def __init__(self, delays_ns: dict[int, int]):
        self.delays_ns = dict(delays_ns)        # peer host -> one-way delay, ns
        self._heap: list = []
        self._seq = 0
        self.held_max = 0                       # the most messages held at once

    def delay_of(self, peer: int) -> int:
        return self.delays_ns.get(peer, 0)

    def push(self, release_ns: int, item) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (release_ns, self._seq, item))
        if len(self._heap) > self.held_max:
            self.held_max = len(self._heap)

    def next_release(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ns: int) -> list:
        """[(release_ns, item), ...] of every held item due by now_ns, earliest first."""
        heap, out = self._heap, []
        while heap and heap[0][0] <= now_ns:
            release, _seq, item = heapq.heappop(heap)
            out.append((release, item))
        return out

    def __len__(self) -> int:
        return len(self._heap)


class EventLog:
    """The JSONL event log of workers and endpoints: {"t_ns", "host", "event", ...} per line
    with "event" one of model.events.Event (CLOCK_MONOTONIC ns, shared by every namespace),
    written whole and line-buffered so a crash keeps every complete event. Thread-safe: a
    worker's goodput sampler shares it with the collective. Without a path it only counts
    events (unit tests, an endpoint without a log)."""

    def __init__(self, path: str | Path | None, host: str, clock=time.monotonic_ns):
        self.host = host
        self.clock = clock
        self._lock = threading.Lock()
        self._f = None
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._f = open(path, "a", buffering=1)
        self.counts: dict[str, int] = {}

    def emit(self, event: str, t_ns: int | None = None, **fields_) -> None:
        record = {"t_ns": self.clock() if t_ns is None else t_ns, "host": self.host, "event": event}
        record.update(fields_)
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with self._lock:
            self.counts[event] = self.counts.get(event, 0) + 1
            if self._f is not None:
                self._f.write(line)

    def close(self) -> None:
        with self._lock:
            if self._f is not None:
                self._f.close()
                self._f = None


class Pacer:
    """Token bucket per NIC port: userspace OVS drops bursts, so never exceed the port rate.

    Tokens are bytes; `burst` bounds how far ahead a quiet port may get.
    """

    def __init__(self, rate_bps: float, burst_bytes: int, now_ns: int = 0):
        if rate_bps <= 0:
            raise ValueError(f"pacing rate must be positive, got {rate_bps}")
        self.bytes_per_ns = rate_bps / 8e9
        self.burst = float(burst_bytes)
        self.tokens = float(burst_bytes)
        self.last_ns = now_ns

    def _refill(self, now_ns: int) -> None:
        if now_ns > self.last_ns:
            self.tokens = min(self.burst, self.tokens + (now_ns - self.last_ns) * self.bytes_per_ns)
            self.last_ns = now_ns

    def can_send(self, now_ns: int) -> bool:
        self._refill(now_ns)
        return self.tokens > 0

    def consume(self, nbytes: int) -> None:
        self.tokens -= nbytes        # may go negative: the next send waits for the debt

    def next_send_ns(self, now_ns: int) -> int:
        self._refill(now_ns)
        if self.tokens > 0:
            return now_ns
        return now_ns + int(-self.tokens / self.bytes_per_ns) + 1


class LatenessHistogram:
    """How late something ran behind its schedule (ns), as counts per lateness_bucket (the
    bucket layout, a log format shared with the reader, is model/lateness.py): the
    endpoint's fidelity evidence (analysis/fidelity.py), cheap enough for the hot path (no log
    line per sample; the endpoint logs the cumulative counts every few seconds)."""

    def __init__(self):
        self.counts = [0] * LATENESS_BUCKETS
        self.samples = 0

    def record(self, ns: int) -> None:
        b = lateness_bucket(ns) if ns >= 0 else 0
        self.counts[b if b < LATENESS_BUCKETS else LATENESS_BUCKETS - 1] += 1
        self.samples += 1

    def sparse(self) -> list:
        """[[bucket, count], ...] of the non-empty buckets (what the log line carries)."""
        return [[b, c] for b, c in enumerate(self.counts) if c]


class Counters:
    """Endpoint-wide counters; `dropped` is keyed by reason (the `counters` event's payload)."""

    def __init__(self):
        self.sent = 0
        self.received = 0
        self.retransmitted = 0
        self.tx_bytes = 0            # data payload bytes sent (incl. retransmissions)
        self.rx_bytes = 0            # data payload bytes accepted
        self.tx_packets = 0
        self.rx_packets = 0
        self.send_failed = 0
        self.dropped: dict[str, int] = {}

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1

    @property
    def dropped_malformed(self) -> int:
        return sum(self.dropped.values())

    def as_dict(self) -> dict:
        return {
            "sent": self.sent, "received": self.received, "retransmitted": self.retransmitted,
            "tx_bytes": self.tx_bytes, "rx_bytes": self.rx_bytes,
            "send_failed": self.send_failed,
            "dropped_malformed": self.dropped_malformed, "dropped_by_reason": dict(self.dropped),
        }


def socket_drops(ports: dict) -> dict:
    """Frames the kernel dropped at each NIC port's socket (receive buffer full), by plane."""
    out = {}
    for plane, port in ports.items():
        stats = getattr(port, "kernel_stats", None)
        if stats is None:
            continue
        try:
            out[plane] = stats()[1]
        except OSError:
            pass
    return out


def rss_bytes(pid: int | None = None) -> int:
    """Resident set size of a process (for memory_bench), from /proc."""
    with open(f"/proc/{pid or os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
