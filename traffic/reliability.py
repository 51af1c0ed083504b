"""MRC reliability: sender and receiver QP logic and memory regions (pure: time is passed in).

The endpoint adapter owns sockets and the clock; it feeds packets in and sends what these
objects return. Nothing here blocks, sleeps or reads a clock, so a fake clock and a simulated
lossy network (tests/unit/simnet.py) drive everything in unit tests.

Sender (SenderQP): RDMA WRITE / WRITE-with-IMM segmented at `mtu` bytes, 24-bit PSNs (wraparound
handled by unwrapping against the cumulative ACK), every packet on the next EV of the EV set
(traffic/evs.py), never more than MPR x 128 PSNs beyond the cumulative ACK, NSCC window and a
per-plane pacer (traffic/nscc.py). Loss detection, precisely:
  * ACK timeout: each transmission has a deadline = send time + RTO(t) where t is the number of
    timeouts that PSN already had; RTO(t) = base_rto * (t + 1) for t < retry_linear (7), then
    base_rto * retry_linear * 2^(t - retry_linear + 1) (linear up to 7, then exponential, as
    OCP's retry scheme), capped at rto_max_ns. base_rto = max(rto_min_ns, rto_rtt_multiplier x
    base RTT, srtt + 4 rttvar). OCP's 1.024 us x 2^t is sized for NIC RTTs of microseconds; the
    emulated fabric has RTTs around 1 ms, so the RTO is derived from the measured RTT instead.
    More than retry_limit timeouts of one PSN -> QP error (reported, never hung).
  * SACK gap (RACK-like, time-based so cross-path jitter is not taken for loss): a transmission is
    lost when the SACKs show that a packet SENT at least the reorder window later (any EV) has
    arrived while it has not; window = max(reorder_window_frac x base RTT, srtt + 4 rttvar -
    base RTT) so per-path queueing differences under load are not taken for failures.
  Both mark the EV it travelled on ASSUMED_BAD (a same-plane backup replaces it), except: the
  loss of the first packet an EV ever carried (new EVs take the switches' slow path), a
  timeout with nothing sent later delivered (a stall of the peer/CPU/every path, no evidence
  against this EV) retransmits without penalty, and a loss on an EV that ITSELF carried
  congestion evidence recently (an ECN echo, a trimmed NACK or a queueing-delay RTT sample on
  that very EV) is forgiven once per piece of evidence: a second loss with no fresh evidence on
  that EV retires it. Congestion elsewhere in the QP never excuses a loss: a black-holed path
  echoes no ECN and no trim, so it is retired at its first loss with evidence (SACK gap or a
  timeout after later packets arrived), or its second at the latest. NACK TRIMMED:
  fast retransmit, the EV is passed over once, not retired. NACK TRIMMED_LASTHOP: retransmit, no
  EV penalty. Other NACK reasons: retransmit (counts toward the retry limit); UNEXP_EVENT (remote
  access error) -> QP error. Every retransmission goes on a FRESH EV (never the one that lost it),
  lowest PSN first, and never on an EV with an outstanding unexplained loss (a loss without
  trim not followed by the delivery of a packet sent later on that EV); it also prefers a
  path (plane, spine) with no such loss, so a retransmission is not resent into a hole that
  swallowed a sibling EV's packet.
  Loss verdict (loss_verdict_ns > 0; the endpoint's default): a penalised loss does not retire
  the EV at once. The EV is suspended (passed over by the round robin, its state still GOOD)
  and retired only if the window passes with nothing explaining the loss: a trimmed NACK of
  that very transmission (nack.ev + echo timestamp), a SACK echoing its EV and send time (it
  arrived late), or an ACK while it still waited for retransmission or sooner after the
  retransmission than any round trip. Traffic leaves the path at the first loss either way; only
  the retirement (and the replacement EV) waits for the evidence.

Receiver (ReceiverQP): places each payload at its RETH VA at once (any order), ignores duplicates,
SACKs every ack_every packets or after ack_delay (immediately on ECN, AckReq, duplicates, a
bitmap half full) with cumulative PSN, 64-bit bitmap, reflected EV, ECN echo as SKIP_ONCE, port
status, NACKs trimmed packets, delivers WRITE-with-IMM completions when the whole message has
arrived, in message order (a completion also implies every earlier WRITE is placed). SACKs leave
on the plane the data came in on (if its port is up) over a small reverse EV set (>= 1 per plane)
kept fresh by probes, one per base RTT while data flows; a probe fails after probe_timeout_rtts or
the answered probes' srtt + 4 rttvar, a late answer still counts, and no failure counts while
arriving data is trimmed or CE-marked (the answer is queued, the path is not dead) and only
once a probe sent later was answered (else the peer or every path stalled, not this EV).
With a trimming fabric (fabric_delay_bound_ns set) every loss-detection window is at least the
queueing bound the trimmers guarantee, so a late packet is never taken for a lost one.

Events go to emit(dict) with "t_ns" and "event" set (schema of the brief); the adapter adds "host".
"""
from __future__ import annotations

import heapq
import math
import random
from collections import deque
from dataclasses import dataclass, fields
from typing import Callable

from emulation.topology import random_entropy, ev_plane, make_ev
from traffic.evs import EVSet, PathInfo
from traffic.messages import (IMM_OPCODES, LAST_OPCODES, PSN_MASK, SACK_BITMAP_BITS,
                              WRITE_OPCODES, DataPacket, Nack, NackReason, Opcode, Probe, Sack,
                              SkipMode)
from traffic.nscc import Nscc, PlanePacer

PSN_SPACE = PSN_MASK + 1
MPR_UNIT = 128          # MPR is in units of 128 PSNs (OCP)
MAX_MESSAGE = 0xFFFFFFFF  # RETH DMA length is 32 bits


class QPError(RuntimeError):
    """Operation on a QP in the error state, or a bad request (the message says which)."""


class AccessError(ValueError):
    """A WRITE outside every registered memory region (bad rkey or VA range)."""


@dataclass
class MRCConfig:
    """Every knob of the MRC transport. Defaults fit the emulated fabric (RTT ~1 ms, 100 Mbit/s
    ports); OCP/UET values are quoted where they exist."""

    # EV set (OCP examples: 128-256 EVs, ev_min_active = ev_count/4)
    ev_count: int = 128                  # active EVs, equal per plane
    ev_backup_count: int = 64            # backup EVs, equal per plane (state UNKNOWN until used)
    ev_min_active: int | None = None     # None -> ev_count // 4
    probe_k: int = 3                     # consecutive probe successes to return to GOOD
    probe_period_rtts: float = 5.0       # probe period of an ASSUMED_BAD EV, in base RTTs
    probe_timeout_rtts: float = 4.0      # a probe unanswered this long failed
    probe_backoff_max: int = 8           # failed probes double the period, up to this factor
    skip_rtts: float = 2.0               # ECN echo: skip the EV for this many base RTTs
    # reliability
    mtu: int = 1024                      # payload bytes per packet
    mpr: int = 8                         # max PSN range, units of 128 PSNs (OCP example 8)
    start_psn: int = 0                   # initial PSN (both ends must agree)
    base_rtt_ns: int = 1_000_000         # initial base RTT estimate until measured (min RTT seen)
    rto_ns: int | None = None            # fixed base RTO; None -> derived from RTT
    rto_rtt_multiplier: float = 4.0
    rto_min_ns: int = 1_000_000
    rto_max_ns: int = 1_000_000_000
    retry_linear: int = 7                # OCP: linear backoff for the first 7 retries
    retry_limit: int = 10                # timeouts of one PSN before QP error
    reorder_window_frac: float = 0.5     # SACK-gap loss: sent this many base RTTs later arrived
    # Under load the per-path queueing delay differs by far more than a base RTT; the reorder
    # window also grows to srtt + 4 rttvar - base RTT (RACK-like), measured, so a slower queue
    # on one path is not taken for a failed path.
    adaptive_reorder: bool = True
    # A loss without trim on an EV that ITSELF signalled congestion (ECN echo, trimmed NACK, or
    # an RTT sample with queueing delay >= congestion_delay_rtts base RTTs) in the last
    # congestion_grace_rtts (or 8 srtt, if longer) is retransmitted without retiring the EV: in
    # the emulator a CPU-starved userspace switch drops packets of busy paths that a real
    # trimming switch would not. One piece of evidence forgives one loss: a second loss with
    # no newer evidence on that EV retires it. Congestion on OTHER EVs never forgives (a
    # black-holed path echoes nothing). congestion_forgive_rtts bounds how long a forgiven EV
    # stays remembered. 0 grace disables forgiveness.
    congestion_grace_rtts: float = 8.0
    congestion_delay_rtts: float = 1.0
    congestion_forgive_rtts: float = 64.0
    ack_every: int = 1                   # receiver SACK coalescing (1 = SACK every packet)
    # Delayed SACK: a coalesced SACK leaves at the latest this long after the first unacked
    # packet arrived (None -> ack_delay_rtts x base RTT).
    ack_delay_ns: int | None = None
    ack_delay_rtts: float = 0.25
    # congestion control (UET NSCC, uet-htsim defaults)
    nscc_enabled: bool = True
    nscc_gamma: float = 0.8
    nscc_max_md: float = 0.5             # decrease factor never below 0.5
    nscc_fair_increase_mss: float = 1.0
    nscc_prop_gain: float = 1.0
    nscc_max_window_bdp: float = 1.5
    nscc_initial_window_bdp: float = 1.0
    trimming: bool = False               # fabric trims -> target 0.75 x base RTT
    # Upper bound on the extra (queueing) delay a data packet can see on one path through a
    # TRIMMING fabric: every switch queue trims above its threshold, so a packet that is not
    # trimmed waited at most (hops x trim threshold drain time). 0 = unknown (no trimming).
    # When set, the SACK-gap reorder window is at least this bound, the RTO at least base RTT
    # + 2 bounds (data one way, SACK the other) and the reverse-probe timeout the same: a late
    # packet can then never be taken for a lost one, while a dead path is still found within
    # a base RTT + the bound. The endpoint derives it from the fabric's trim thresholds.
    fabric_delay_bound_ns: int = 0
    # The loss of the first packet an EV ever carried does not retire it (the next loss does):
    # in a fabric of userspace OVS the first packet of a new EV takes the slow path (upcall).
    # The endpoint turns it on (EndpointConfig.first_packet_grace); off in the pure model.
    first_packet_grace: bool = False
    # Loss verdict (0 = judge at once, as OCP). A loss without trim puts its EV out of use at
    # once (the packets that follow take other EVs) but the EV is only retired (ASSUMED_BAD)
    # if, within loss_verdict_ns, no later evidence explains the loss: a trimmed NACK of that
    # very transmission (the packet met congestion; its header was just slow) or its late
    # delivery (a SACK echoing its timestamp, or an ACK before its retransmission could have
    # made the round trip). Measured in the emulated fabric under a 7:1 incast: trimmed headers
    # whose NACK came back up to ~80 ms after the SACK-gap / timeout verdict (the CPU-starved
    # userspace switches hold packets before the egress trimmer, outside any trim bound), which
    # retired dozens of healthy EVs per run. A black hole explains nothing, so it is retired
    # loss_verdict_ns later than at once; no packet goes to it in between.
    loss_verdict_ns: int = 0
    # NSCC sizes its window (1.5 BDP) and delay target on the base RTT; through userspace OVS the
    # idle min RTT (0.5-1 ms) is well under the RTT at line rate (2-3 ms: per-packet CPU in three
    # switches), so a BDP from the min sample caps the window at ~half the line rate. The BDP
    # uses at least this RTT (the timers keep the measured min).
    nscc_min_base_rtt_ns: int = 0
    # pacing (userspace OVS drops bursts)
    port_rate_Bps: float = 12_500_000.0  # per plane (100 Mbit/s, the fabric's default host link)
    pacer_burst_packets: int = 4
    header_overhead: int = 120           # bytes of headers counted by the pacer per packet
    # receiver reverse path
    reverse_evs_per_plane: int = 2
    reverse_probe_rtts: float = 1.0      # one reverse-EV probe per base RTT while data flows
    reverse_probe_fail_limit: int = 2
    reverse_idle_rtts: float = 100.0     # stop probing after this long without data
    # RoCE RC baseline (traffic/roce_rc.py)
    roce_window_psns: int = 1024
    roce_retry_limit: int = 7            # RoCE retry_cnt maximum

    def __post_init__(self) -> None:
        positive = ("ev_count", "probe_k", "mtu", "mpr", "base_rtt_ns", "rto_min_ns",
                    "rto_max_ns", "retry_limit", "ack_every", "port_rate_Bps",
                    "pacer_burst_packets", "reverse_evs_per_plane", "reverse_probe_fail_limit",
                    "roce_window_psns", "roce_retry_limit", "probe_period_rtts",
                    "probe_timeout_rtts", "reverse_probe_rtts", "reverse_idle_rtts",
                    "ack_delay_rtts")
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in positive and (isinstance(value, bool) or not value > 0):
                raise ValueError(f"MRCConfig.{f.name} must be positive, got {value!r}")
        for name in ("ev_backup_count", "retry_linear", "skip_rtts", "header_overhead",
                     "reorder_window_frac", "congestion_grace_rtts", "congestion_delay_rtts",
                     "congestion_forgive_rtts", "fabric_delay_bound_ns", "loss_verdict_ns"):
            if getattr(self, name) < 0:
                raise ValueError(f"MRCConfig.{name} must be >= 0, got {getattr(self, name)!r}")
        if self.mpr * MPR_UNIT >= PSN_SPACE // 2:
            raise ValueError(f"MRCConfig.mpr {self.mpr} too large for 24-bit PSNs")
        if not 0 <= self.start_psn <= PSN_MASK:
            raise ValueError(f"MRCConfig.start_psn must fit 24 bits, got {self.start_psn}")
        if self.ev_min_active is not None and not 0 <= self.ev_min_active <= self.ev_count:
            raise ValueError(f"MRCConfig.ev_min_active must be in 0..ev_count, got {self.ev_min_active}")
        if not 0 < self.nscc_max_md <= 0.5:
            raise ValueError("MRCConfig.nscc_max_md must be in (0, 0.5] (MD factor >= 0.5)")

    @property
    def mpr_window(self) -> int:
        return self.mpr * MPR_UNIT


def unwrap(psn: int, ref: int) -> int:
    """Absolute sequence number of a 24-bit PSN: the one nearest to the absolute `ref`."""
    diff = (psn - ref) & PSN_MASK
    if diff >= PSN_SPACE // 2:
        diff -= PSN_SPACE
    return ref + diff


@dataclass
class Completion:
    qp: int
    msn: int              # 24-bit MSN as on the wire
    bytes: int
    imm: int | None


# ---------------------------------------------------------------------- memory regions


@dataclass
class MemoryRegion:
    rkey: int
    va: int
    buf: memoryview

    @property
    def length(self) -> int:
        return self.buf.nbytes


class MemoryRegistry:
    """Registered memory of one endpoint (the protection domain): rkey -> writable buffer."""

    def __init__(self) -> None:
        self.regions: dict[int, MemoryRegion] = {}
        self._next_rkey = 0x100
        self._next_va = 0x1000_0000

    def register(self, buf, va: int | None = None, rkey: int | None = None) -> MemoryRegion:
        view = memoryview(buf).cast("B")
        if view.readonly:
            raise ValueError("memory region buffer must be writable (bytearray, numpy array, ...)")
        if rkey is None:
            rkey = self._next_rkey
            self._next_rkey += 1
        if rkey in self.regions:
            raise ValueError(f"rkey {rkey:#x} already registered")
        if va is None:
            va = self._next_va
            self._next_va += (view.nbytes + 0xFFFF) & ~0xFFFF or 0x10000
        mr = MemoryRegion(rkey=rkey, va=va, buf=view)
        self.regions[rkey] = mr
        return mr

    def deregister(self, rkey: int) -> None:
        self.regions.pop(rkey, None)

    def write(self, rkey: int, va: int, data) -> None:
        mr = self.regions.get(rkey)
        if mr is None:
            raise AccessError(f"unknown rkey {rkey:#x}")
        off = va - mr.va
        n = len(data)
        if off < 0 or off + n > mr.length:
            raise AccessError(f"VA range {va:#x}+{n} outside region rkey {rkey:#x} "
                              f"[{mr.va:#x}, {mr.va + mr.length:#x})")
        mr.buf[off:off + n] = data


class MessageAssembler:
    """Receiver side message tracking: completes messages in MSN order."""

    def __init__(self, qp: int, emit: Callable[[dict], None]):
        self.qp = qp
        self.emit = emit
        self.next_msn = 0                   # absolute MSN of the next message to complete
        self.pending: dict[int, list] = {}  # abs msn -> [bytes_received, dma_len, imm, has_imm, last_seen]
        self.completions: list[Completion] = []

    def add(self, msn24: int, nbytes: int, dma_len: int, opcode: int, imm, now_ns: int) -> bool:
        """Account one newly placed packet; returns False if inconsistent (caller counts it)."""
        msn = unwrap(msn24, self.next_msn)
        if msn < self.next_msn:
            return False
        entry = self.pending.get(msn)
        if entry is None:
            entry = self.pending[msn] = [0, dma_len, None, False, False]
        elif entry[1] != dma_len:
            return False
        entry[0] += nbytes
        if opcode in IMM_OPCODES:
            entry[2] = imm
            entry[3] = True
        if opcode in LAST_OPCODES:
            entry[4] = True
        while True:
            head = self.pending.get(self.next_msn)
            if head is None or not head[4] or head[0] < head[1]:
                break
            del self.pending[self.next_msn]
            if head[3]:
                comp = Completion(self.qp, self.next_msn & PSN_MASK, head[1], head[2])
                self.completions.append(comp)
                self.emit({"t_ns": now_ns, "event": "completion", "qp": self.qp,
                           "msn": comp.msn, "bytes": comp.bytes, "imm": comp.imm,
                           "side": "recv"})
            self.next_msn += 1
        return True


# ---------------------------------------------------------------------- sender


@dataclass
class _OutMessage:
    msn: int              # absolute
    buf: memoryview
    remote_va: int
    rkey: int
    imm: int | None
    first_seq: int | None = None
    last_seq: int | None = None

    @property
    def length(self) -> int:
        return self.buf.nbytes


@dataclass
class _TxRecord:
    seq: int
    msg: _OutMessage
    offset: int
    length: int
    opcode: int
    ev: int = 0
    sent_ns: int = 0
    tx_count: int = 0
    first_on_ev: bool = False # this transmission was the first packet its EV ever carried
    timeouts: int = 0
    acked: bool = False
    lost: bool = False        # declared lost, waiting in the retransmit queue
    retx_reason: str = ""
    declared: tuple[int, int] | None = None   # (ev, sent_ns) of the last transmission declared lost


def segment_opcode(index: int, count: int, with_imm: bool) -> int:
    if count == 1:
        return Opcode.WRITE_ONLY_IMM if with_imm else Opcode.WRITE_ONLY
    if index == 0:
        return Opcode.WRITE_FIRST
    if index == count - 1:
        return Opcode.WRITE_LAST_IMM if with_imm else Opcode.WRITE_LAST
    return Opcode.WRITE_MIDDLE


def validate_write(buf, remote_va: int, rkey: int, imm) -> memoryview:
    view = memoryview(buf).cast("B")
    if view.nbytes > MAX_MESSAGE:
        raise QPError(f"message of {view.nbytes} bytes exceeds the 32-bit RETH length")
    if not 0 <= remote_va < 1 << 64:
        raise QPError(f"remote_va {remote_va!r} must fit 64 bits")
    if not 0 <= rkey < 1 << 32:
        raise QPError(f"rkey {rkey!r} must fit 32 bits")
    if imm is not None and not 0 <= imm < 1 << 32:
        raise QPError(f"imm {imm!r} must fit 32 bits")
    return view


class PostedWrites:
    """What every sending QP (MRC and the RoCE baseline) shares: the queue of posted WRITEs,
    send completions and the error latch. Subclasses set qp_num, emit, next_msn, messages,
    send_queue, completions, error and _wake_ns in their constructors."""

    def _fail(self, reason: str, now_ns: int) -> None:
        if self.error is None:
            self.error = reason
            self.emit({"t_ns": now_ns, "event": "qp_error", "qp": self.qp_num, "reason": reason})

    def post_write(self, local_buf, remote_va: int, rkey: int, imm: int | None = None) -> int:
        """Queue an RDMA WRITE (WRITE-with-IMM if imm is given); returns its 24-bit MSN.
        The buffer is referenced, not copied: keep it unchanged until the send completion."""
        if self.error is not None:
            raise QPError(f"QP {self.qp_num} is in error: {self.error}")
        view = validate_write(local_buf, remote_va, rkey, imm)
        msg = _OutMessage(msn=self.next_msn, buf=view, remote_va=remote_va, rkey=rkey, imm=imm)
        self.next_msn += 1
        self.messages.append(msg)
        self.send_queue.append(msg)
        self._wake_ns = -1
        return msg.msn & PSN_MASK

    def pop_completions(self) -> list[Completion]:
        out, self.completions = self.completions, []
        return out


class SenderQP(PostedWrites):
    """Sending half of an MRC QP: WRITEs out, SACK/NACK/probe responses in."""

    def __init__(self, qp_num: int, peer_qp: int, config: MRCConfig, paths: PathInfo,
                 rng: random.Random, emit: Callable[[dict], None] | None = None):
        self.qp_num = qp_num
        self.peer_qp = peer_qp
        self.cfg = config
        self.paths = paths
        self.rng = rng
        self.emit = emit or (lambda event: None)
        self.base_rtt_ns = config.base_rtt_ns
        self._rtt_measured = False
        self.srtt_ns: float | None = None
        self.rttvar_ns = 0.0
        self.evs = EVSet(paths, rng, qp=qp_num, ev_count=config.ev_count,
                         backup_count=config.ev_backup_count, min_active=config.ev_min_active,
                         probe_period_ns=self._rtts(config.probe_period_rtts),
                         probe_timeout_ns=self._rtts(config.probe_timeout_rtts),
                         probe_k=config.probe_k, probe_backoff_max=config.probe_backoff_max,
                         emit=self.emit)
        self.pacer = PlanePacer(paths.planes, config.port_rate_Bps,
                                config.pacer_burst_packets * (config.mtu + config.header_overhead))
        self.nscc = Nscc(base_rtt_ns=max(self.base_rtt_ns, config.nscc_min_base_rtt_ns),
                         link_rate_Bps=config.port_rate_Bps * len(paths.planes), mss=config.mtu,
                         gamma=config.nscc_gamma, max_md=config.nscc_max_md,
                         fair_increase_mss=config.nscc_fair_increase_mss,
                         prop_gain=config.nscc_prop_gain,
                         max_window_bdp=config.nscc_max_window_bdp,
                         initial_window_bdp=config.nscc_initial_window_bdp,
                         target_frac=0.75 if config.trimming else 1.0)
        self.snd_una = config.start_psn     # absolute sequence numbers; wire PSN = seq & mask
        self.snd_nxt = config.start_psn
        self.next_msn = 0
        self.records: dict[int, _TxRecord] = {}
        self.messages: deque[_OutMessage] = deque()     # posted, not yet complete
        self.send_queue: deque[_OutMessage] = deque()   # not yet fully segmented
        self._seg_offset = 0
        self._seg_index = 0
        self.inflight_bytes = 0
        self._timers: list[tuple[int, int, int]] = []   # (deadline, seq, tx_count)
        self._retx: list[int] = []                      # heap of seqs, lowest first
        self._send_log: deque[tuple[int, int, int]] = deque()  # (sent_ns, seq, tx_count)
        self._latest_delivered_sent = -1
        self._congested_until_ns = -1
        self._forgiven: dict[int, int] = {}     # ev -> time of its last forgiven congestion loss
        self._ev_congested: dict[int, int] = {} # ev -> last ECN echo / trimmed NACK / delay on it
        # Unexplained losses (no trim): key (an EV, or a (plane, spine) path) -> send time of the
        # newest lost transmission on it, and -> send time of the newest delivered one. A key
        # whose newest loss is later than its newest delivery has an outstanding loss.
        self._loss_sent: dict = {}
        self._delivered_sent: dict = {}
        self._ev_used: set[int] = set()         # EVs that carried at least one packet
        # Open loss verdicts: (ev, sent_ns) of a transmission declared lost -> (deadline, reason);
        # per EV the number of open verdicts (the EV is suspended while it has any).
        self._verdicts: dict[tuple[int, int], tuple[int, str]] = {}
        self._verdict_heap: list[tuple[int, int, int]] = []
        self._open_verdicts: dict[int, int] = {}
        self._wake_ns: int | None = None
        self.completions: list[Completion] = []
        self.error: str | None = None
        self.counters = {"sent_packets": 0, "sent_bytes": 0, "retransmitted_packets": 0,
                         "retransmitted_bytes": 0, "timeouts": 0, "sack_gap_losses": 0,
                         "nacks": 0, "bad_acks": 0, "probes_sent": 0,
                         "congestion_losses_forgiven": 0, "timeouts_without_evidence": 0,
                         "first_packet_losses_excused": 0, "retransmits_onto_suspect_evs": 0,
                         "loss_verdicts_opened": 0, "losses_explained_by_trim": 0,
                         "losses_explained_by_late_delivery": 0, "loss_verdicts_failed": 0}

    # ------------------------------------------------------------------ helpers

    def _rtts(self, n: float) -> int:
        return max(1, int(n * self.base_rtt_ns))

    @property
    def local_port_status(self) -> int:
        return sum(1 << p for p, up in self.evs.plane_local_up.items() if up)

    def rto_base_ns(self) -> int:
        if self.cfg.rto_ns is not None:
            return self.cfg.rto_ns
        rto = max(self.cfg.rto_min_ns, self.cfg.rto_rtt_multiplier * self.base_rtt_ns)
        if self.srtt_ns is not None:
            rto = max(rto, self.srtt_ns + 4 * self.rttvar_ns)
        if self.cfg.fabric_delay_bound_ns:
            rto = max(rto, self.base_rtt_ns + 2 * self.cfg.fabric_delay_bound_ns)
        return int(rto)

    def rto_ns(self, timeouts: int) -> int:
        base = self.rto_base_ns()
        lin = self.cfg.retry_linear
        if timeouts < lin:
            rto = base * (timeouts + 1)
        else:
            rto = base * max(lin, 1) * 2 ** (timeouts - lin + 1)
        return int(min(rto, self.cfg.rto_max_ns))

    def _note_congestion(self, now_ns: int) -> None:
        if self.cfg.congestion_grace_rtts > 0:
            self._congested_until_ns = max(self._congested_until_ns,
                                           now_ns + self._congested_grace_ns())

    def congested(self, now_ns: int) -> bool:
        return now_ns < self._congested_until_ns

    def _congested_grace_ns(self) -> int:
        # The loaded RTT through userspace OVS is 5-10x the idle min RTT (the base), and
        # congestion signals come in episodes tens of ms apart: scale the memory on srtt too.
        return max(self._rtts(self.cfg.congestion_grace_rtts), int(self.srtt_ns or 0) * 8)

    def reorder_window_ns(self) -> int:
        window = int(self.cfg.reorder_window_frac * self.base_rtt_ns)
        if self.cfg.adaptive_reorder and self.srtt_ns is not None:
            window = max(window, int(self.srtt_ns + 4 * self.rttvar_ns - self.base_rtt_ns))
        return max(window, self.cfg.fabric_delay_bound_ns)

    def _rtt_sample(self, rtt: int, now_ns: int | None = None, ev: int | None = None) -> None:
        if rtt <= 0:
            return
        if (now_ns is not None and self._rtt_measured
                and rtt - self.base_rtt_ns >= self.cfg.congestion_delay_rtts * self.base_rtt_ns):
            self._note_congestion(now_ns)
            if ev is not None:
                self._ev_congested[ev] = now_ns    # queueing on this very EV: it delivers
        if not self._rtt_measured or rtt < self.base_rtt_ns:
            self._rtt_measured = True
            self.base_rtt_ns = rtt
            self.nscc.set_base_rtt(max(rtt, self.cfg.nscc_min_base_rtt_ns))
            self.evs.probe_period_ns = self._rtts(self.cfg.probe_period_rtts)
            self.evs.probe_timeout_ns = self._rtts(self.cfg.probe_timeout_rtts)
        if self.srtt_ns is None:
            self.srtt_ns, self.rttvar_ns = float(rtt), rtt / 2.0
        else:
            self.rttvar_ns = 0.75 * self.rttvar_ns + 0.25 * abs(self.srtt_ns - rtt)
            self.srtt_ns = 0.875 * self.srtt_ns + 0.125 * rtt

    # ------------------------------------------------------------------ API

    @property
    def idle(self) -> bool:
        """Nothing posted is still outstanding."""
        return not self.messages

    def set_local_port(self, plane: int, up: bool, now_ns: int) -> None:
        """Local NIC port state: a down port takes its plane's EVs out of use."""
        if self.evs.set_plane_local(plane, up):
            self.emit({"t_ns": now_ns, "event": "port", "plane": plane, "up": up,
                       "side": "local", "qp": self.qp_num})
            self._wake_ns = -1

    def _peer_ports(self, port_status: int, now_ns: int) -> None:
        if not port_status:      # 0 = not reported (a peer with no port up could not answer)
            return
        for p in self.paths.planes:
            up = bool(port_status >> p & 1)
            if self.evs.set_plane_peer(p, up):
                self.emit({"t_ns": now_ns, "event": "port", "plane": p, "up": up,
                           "side": "peer", "qp": self.qp_num})
                self._wake_ns = -1

    def next_deadline(self, now_ns: int) -> int | None:
        """Earliest time poll() has something to do (<= now_ns: call poll now); None: nothing."""
        if self.error is not None:
            return None
        while self._timers and self._timer_stale(self._timers[0]):
            heapq.heappop(self._timers)
        cands = []
        if self._timers:
            cands.append(self._timers[0][0])
        probe = self.evs.next_probe_deadline()
        if probe is not None:
            cands.append(probe)
        while self._verdict_heap and (self._verdict_heap[0][1], self._verdict_heap[0][2]) \
                not in self._verdicts:
            heapq.heappop(self._verdict_heap)
        if self._verdict_heap:
            cands.append(self._verdict_heap[0][0])
        if self._wake_ns is not None:
            cands.append(max(self._wake_ns, 0) if self._wake_ns >= 0 else now_ns)
        return min(cands) if cands else None

    def _timer_stale(self, entry) -> bool:
        rec = self.records.get(entry[1])
        return rec is None or rec.acked or rec.lost or rec.tx_count != entry[2]

    # ------------------------------------------------------------------ poll

    def poll(self, now_ns: int) -> list[tuple[object, int]]:
        """Everything to transmit now, as (message, plane) pairs."""
        if self.error is not None:
            return []
        self._check_timeouts(now_ns)
        if self.error is not None:
            return []
        self._close_verdicts(now_ns)
        out: list[tuple[object, int]] = []
        self.evs.expire_probes(now_ns)
        for ev, seq in self.evs.due_probes(now_ns):
            self.counters["probes_sent"] += 1
            out.append((Probe(ev=ev, seq=seq, timestamp=now_ns, src_qp=self.qp_num,
                              port_status=self.local_port_status, path_ev=ev), ev_plane(ev)))
        self._wake_ns = None

        def plane_ok(plane: int) -> bool:
            return self.pacer.can_send(plane, now_ns)

        while self._retx:
            rec = self.records.get(self._retx[0])
            if rec is None or rec.acked or not rec.lost:
                heapq.heappop(self._retx)
                continue
            if not self._window_allows(rec.length):
                break
            ev = self._pick_for_retransmit(rec, now_ns, plane_ok)
            if ev is None:
                self._note_blocked(now_ns)
                break
            heapq.heappop(self._retx)
            self.emit({"t_ns": now_ns, "event": "retransmit", "qp": self.qp_num,
                       "psn": rec.seq & PSN_MASK, "old_ev": rec.ev, "new_ev": ev,
                       "reason": rec.retx_reason})
            self.counters["retransmitted_packets"] += 1
            self.counters["retransmitted_bytes"] += rec.length
            out.append(self._transmit(rec, ev, now_ns, retransmit=True))

        blocked = self._wake_ns is not None
        while self.send_queue and not blocked:
            if self.snd_nxt - self.snd_una >= self.cfg.mpr_window:
                break
            msg = self.send_queue[0]
            count = max(1, math.ceil(msg.length / self.cfg.mtu))
            length = min(self.cfg.mtu, msg.length - self._seg_offset)
            if not self._window_allows(length):
                break
            ev = self.evs.pick(now_ns, plane_ok=plane_ok)
            if ev is None:
                self._note_blocked(now_ns)
                break
            opcode = segment_opcode(self._seg_index, count, msg.imm is not None)
            rec = _TxRecord(seq=self.snd_nxt, msg=msg, offset=self._seg_offset, length=length,
                            opcode=opcode)
            if self._seg_index == 0:
                msg.first_seq = rec.seq
            self.records[rec.seq] = rec
            self.snd_nxt += 1
            self._seg_offset += length
            self._seg_index += 1
            if self._seg_index == count:
                msg.last_seq = rec.seq
                self.send_queue.popleft()
                self._seg_offset = 0
                self._seg_index = 0
            out.append(self._transmit(rec, ev, now_ns, retransmit=False))
        return out

    def _suspect(self, key) -> bool:
        """`key` (an EV or a (plane, spine) path) lost a packet without trim and delivered
        nothing sent after that loss."""
        lost = self._loss_sent.get(key)
        return lost is not None and self._delivered_sent.get(key, -1) < lost

    def _pick_for_retransmit(self, rec: _TxRecord, now_ns: int, plane_ok) -> int | None:
        """A fresh EV for a retransmission: never rec.ev, never an EV with an outstanding
        unexplained loss, preferably on a path (plane, spine) without one either."""
        def clean_path(ev: int) -> bool:
            info = self.evs.evs[ev]
            return not self._suspect(ev) and not self._suspect((info.plane, info.spine))

        def clean_ev(ev: int) -> bool:
            return not self._suspect(ev)

        for allow in (clean_path, clean_ev):
            ev = self.evs.pick(now_ns, exclude=rec.ev, plane_ok=plane_ok, allow=allow)
            if ev is not None:
                return ev
        active = self.evs.active()
        if any(clean_ev(ev) for ev in active):
            return None         # a clean EV exists, its plane's pacer is just out of tokens
        # Every usable EV has an unexplained loss (everything stalled): retrying somewhere is
        # the only way on; the retry limit ends a truly dead QP.
        ev = self.evs.pick(now_ns, exclude=rec.ev, plane_ok=plane_ok)
        if ev is None and len(active) == 1:
            ev = self.evs.pick(now_ns, plane_ok=plane_ok)   # the only EV left
        if ev is not None:
            self.counters["retransmits_onto_suspect_evs"] += 1
        return ev

    def _window_allows(self, nbytes: int) -> bool:
        if not self.cfg.nscc_enabled or self.inflight_bytes == 0:
            return True
        return self.inflight_bytes + nbytes <= self.nscc.cwnd

    def _note_blocked(self, now_ns: int) -> None:
        planes = self.evs.usable_planes()
        if planes:
            wake = min(self.pacer.next_send_ns(p, now_ns) for p in planes)
            # Not blocked by pacing (e.g. no usable EV): ACKs, timers or probes wake us instead.
            self._wake_ns = wake if wake > now_ns else None

    def _transmit(self, rec: _TxRecord, ev: int, now_ns: int, retransmit: bool):
        msg = rec.msg
        plane = ev_plane(ev)
        rec.ev = ev
        rec.first_on_ev = ev not in self._ev_used
        if rec.first_on_ev:
            self._ev_used.add(ev)
        rec.sent_ns = now_ns
        rec.tx_count += 1
        rec.lost = False
        self.inflight_bytes += rec.length
        self.pacer.consume(plane, rec.length + self.cfg.header_overhead, now_ns)
        heapq.heappush(self._timers, (now_ns + self.rto_ns(rec.timeouts), rec.seq, rec.tx_count))
        self._send_log.append((now_ns, rec.seq, rec.tx_count))
        self.counters["sent_packets"] += 1
        self.counters["sent_bytes"] += rec.length
        pkt = DataPacket(dest_qp=self.peer_qp, psn=rec.seq & PSN_MASK, opcode=rec.opcode,
                         msn=msg.msn & PSN_MASK, va=msg.remote_va + rec.offset, rkey=msg.rkey,
                         dma_len=msg.length, payload=msg.buf[rec.offset:rec.offset + rec.length],
                         imm=msg.imm if rec.opcode in IMM_OPCODES else None,
                         timestamp=now_ns, ack_req=retransmit or rec.opcode in LAST_OPCODES,
                         retransmit=retransmit, ev=ev)
        return pkt, plane

    # ------------------------------------------------------------------ loss

    def _check_timeouts(self, now_ns: int) -> None:
        while self._timers and self._timers[0][0] <= now_ns:
            _, seq, txc = heapq.heappop(self._timers)
            rec = self.records.get(seq)
            if rec is None or rec.acked or rec.lost or rec.tx_count != txc:
                continue
            rec.timeouts += 1
            self.counters["timeouts"] += 1
            if rec.timeouts > self.cfg.retry_limit:
                self._fail(f"ACK timeout: PSN {seq & PSN_MASK} unacknowledged after "
                           f"{self.cfg.retry_limit} retries", now_ns)
                return
            # A timeout is evidence against the EV only if something sent later was delivered
            # (other paths work); otherwise the peer, every path or the CPU stalled, and
            # retiring the EV would only punish whichever path the packet happened to take.
            evidence = self._latest_delivered_sent > rec.sent_ns
            if not evidence:
                self.counters["timeouts_without_evidence"] += 1
            self._declare_lost(rec, "timeout", now_ns, penalize=evidence)

    def _declare_lost(self, rec: _TxRecord, reason: str, now_ns: int, penalize: bool) -> None:
        rec.lost = True
        rec.retx_reason = reason
        rec.declared = (rec.ev, rec.sent_ns)
        self.inflight_bytes -= rec.length
        heapq.heappush(self._retx, rec.seq)
        if reason != "nack_trimmed":
            # Unexplained: keep retransmissions off this EV and its path until something sent
            # later on them is delivered.
            info = self.evs.evs.get(rec.ev)
            keys = [rec.ev] + ([(info.plane, info.spine)] if info is not None else [])
            for key in keys:
                if rec.sent_ns > self._loss_sent.get(key, -1):
                    self._loss_sent[key] = rec.sent_ns
        if penalize and rec.first_on_ev and self.cfg.first_packet_grace:
            # The first packet on a fresh EV (QP start, or a replacement) meets switches that
            # have no flow for it yet: userspace OVS sends it up the slow path (an upcall, tens
            # of ms on a busy CPU, unbounded by any trimmer). Measured: a burst of 6 first
            # packets "lost" at QP start, later delivered as duplicates. A dead path still
            # loses the EV's next packet, which retires it.
            self.counters["first_packet_losses_excused"] += 1
            penalize = False
        if penalize and self._forgivable(rec.ev, now_ns):
            # This very path signalled congestion (trim / ECN / queueing delay) since its last
            # forgiven loss, so it delivers: the packet was dropped by congestion, not by a
            # failure. Congestion on other EVs is no excuse (a black hole echoes nothing).
            self._forgiven[rec.ev] = now_ns
            self.counters["congestion_losses_forgiven"] += 1
            self.evs.skip_next_turn(rec.ev, now_ns)
            penalize = False
        if penalize:
            self._forgiven.pop(rec.ev, None)
            if self.cfg.loss_verdict_ns > 0:
                self._open_verdict(rec.ev, rec.sent_ns, reason, now_ns)
            else:
                self.evs.mark_lost(rec.ev, reason, now_ns)
        if self.cfg.nscc_enabled:
            self.nscc.on_loss(now_ns)
        self._wake_ns = -1

    # ------------------------------------------------------------------ loss verdicts

    def _open_verdict(self, ev: int, sent_ns: int, reason: str, now_ns: int) -> None:
        key = (ev, sent_ns)
        if key in self._verdicts:
            return
        deadline = now_ns + self.cfg.loss_verdict_ns
        self._verdicts[key] = (deadline, reason)
        heapq.heappush(self._verdict_heap, (deadline, ev, sent_ns))
        self._open_verdicts[ev] = self._open_verdicts.get(ev, 0) + 1
        self.counters["loss_verdicts_opened"] += 1
        self.evs.suspend(ev, reason, now_ns)

    def _release_verdict(self, ev: int) -> int:
        left = self._open_verdicts.get(ev, 1) - 1
        if left > 0:
            self._open_verdicts[ev] = left
        else:
            self._open_verdicts.pop(ev, None)
        return left

    def _explain_loss(self, ev: int, sent_ns: int, evidence: str, now_ns: int) -> bool:
        """Later evidence about a transmission declared lost: if its verdict is open, the loss
        was not a path failure; the EV returns to use (unless another loss on it is open)."""
        if self._verdicts.pop((ev, sent_ns), None) is None:
            return False
        self.counters["losses_explained_by_trim" if evidence == "nack_trimmed"
                      else "losses_explained_by_late_delivery"] += 1
        info = self.evs.evs.get(ev)
        for key in (ev, (info.plane, info.spine) if info is not None else None):
            if key is not None and sent_ns > self._delivered_sent.get(key, -1):
                self._delivered_sent[key] = sent_ns     # no longer an unexplained loss
        if self._release_verdict(ev) == 0:
            self.evs.unsuspend(ev, evidence, now_ns)
        self._wake_ns = -1
        return True

    def _close_verdicts(self, now_ns: int) -> None:
        """Verdicts whose window ran out unexplained: the path lost the packet; retire the EV."""
        heap = self._verdict_heap
        while heap and heap[0][0] <= now_ns:
            _, ev, sent_ns = heapq.heappop(heap)
            entry = self._verdicts.pop((ev, sent_ns), None)
            if entry is None:
                continue
            self.counters["loss_verdicts_failed"] += 1
            self._release_verdict(ev)
            self.evs.mark_lost(ev, entry[1], now_ns)
            self._wake_ns = -1

    def _forgivable(self, ev: int, now_ns: int) -> bool:
        """EV `ev` itself carried congestion evidence recently, newer than its last forgiven
        loss (one piece of evidence excuses one loss)."""
        if self.cfg.congestion_grace_rtts <= 0:
            return False
        # Evidence is remembered for the forgiveness window (congestion comes in episodes tens
        # of ms apart through userspace OVS); it is consumed by the loss it excuses, so an EV
        # that goes silent still retires at its second loss.
        evidence = self._ev_congested.get(ev)
        window = max(self._rtts(self.cfg.congestion_forgive_rtts), int(16 * (self.srtt_ns or 0)),
                     self._congested_grace_ns())
        if evidence is None or now_ns - evidence > window:
            return False
        last = self._forgiven.get(ev)
        if last is not None and now_ns - last <= window and evidence <= last:
            return False
        return True

    def _detect_gaps(self, now_ns: int) -> None:
        threshold = self._latest_delivered_sent - self.reorder_window_ns()
        log = self._send_log
        while log and log[0][0] <= threshold:
            _, seq, txc = log.popleft()
            rec = self.records.get(seq)
            if rec is not None and not rec.acked and not rec.lost and rec.tx_count == txc:
                self.counters["sack_gap_losses"] += 1
                self._declare_lost(rec, "sack_gap", now_ns, penalize=True)

    # ------------------------------------------------------------------ input

    def _ack(self, seq: int, now_ns: int) -> int:
        rec = self.records.get(seq)
        if rec is None or rec.acked:
            return 0
        rec.acked = True
        if rec.declared is not None and self._verdicts:
            # The ACK can only be for the transmission declared lost if there is no other
            # candidate: the only transmission, acked while it waits for its retransmission, or
            # the original of a single retransmission acked sooner after that retransmission
            # than any round trip takes. (With more transmissions out, SACK echoes decide.)
            if (rec.lost and rec.tx_count == 1) or (
                    not rec.lost and rec.tx_count == 2 and now_ns - rec.sent_ns < self.base_rtt_ns):
                self._explain_loss(*rec.declared, "late_delivery", now_ns)
        if not rec.lost:
            self.inflight_bytes -= rec.length
        info = self.evs.evs.get(rec.ev)
        for key in (rec.ev, (info.plane, info.spine) if info is not None else None):
            if key is not None and rec.sent_ns > self._delivered_sent.get(key, -1):
                self._delivered_sent[key] = rec.sent_ns
        # Only first transmissions order the SACK-gap check: a retransmission after a trim goes
        # on a fresh, idle path and overtakes the packets still queued on the congested one,
        # which would otherwise all look lost.
        if rec.tx_count == 1 and rec.sent_ns > self._latest_delivered_sent:
            self._latest_delivered_sent = rec.sent_ns
        return rec.length

    def on_sack(self, sack: Sack, now_ns: int) -> None:
        if self.error is not None:
            return
        self._peer_ports(sack.port_status, now_ns)
        if self._verdicts and sack.echo_timestamp:
            # the SACK reflects the EV and send time of the packet that triggered it
            self._explain_loss(sack.ev, sack.echo_timestamp, "late_delivery", now_ns)
        rtt = now_ns - sack.echo_timestamp if sack.echo_timestamp else None
        if rtt is not None and rtt > 0:
            self._rtt_sample(rtt, now_ns, sack.ev)
        else:
            rtt = None
        cum = unwrap(sack.cum_psn & PSN_MASK, self.snd_una)
        if cum > self.snd_nxt or cum < self.snd_una - self.cfg.mpr_window:
            self.counters["bad_acks"] += 1
            return
        newly = 0
        if cum > self.snd_una:
            for seq in range(self.snd_una, cum):
                newly += self._ack(seq, now_ns)
                del self.records[seq]
            self.snd_una = cum
        base = unwrap(sack.sack_base & PSN_MASK, self.snd_una)
        bitmap = sack.bitmap & ((1 << SACK_BITMAP_BITS) - 1)
        while bitmap:
            low = bitmap & -bitmap
            seq = base + low.bit_length() - 1
            if self.snd_una <= seq < self.snd_nxt:
                newly += self._ack(seq, now_ns)
            bitmap ^= low
        ecn = sack.skip != SkipMode.NONE
        if ecn:
            self._note_congestion(now_ns)
            self._ev_congested[sack.ev] = now_ns
        if ecn and sack.ev in self.evs.evs:
            self.evs.skip(sack.ev, now_ns + self._rtts(self.cfg.skip_rtts), now_ns)
        if self.cfg.nscc_enabled:
            self.nscc.on_ack(newly, rtt, ecn, now_ns)
        self._detect_gaps(now_ns)
        self._complete(now_ns)
        self._wake_ns = -1

    def _complete(self, now_ns: int) -> None:
        while self.messages and self.messages[0].last_seq is not None \
                and self.messages[0].last_seq < self.snd_una:
            msg = self.messages.popleft()
            comp = Completion(self.qp_num, msg.msn & PSN_MASK, msg.length, msg.imm)
            self.completions.append(comp)
            self.emit({"t_ns": now_ns, "event": "completion", "qp": self.qp_num,
                       "msn": comp.msn, "bytes": comp.bytes, "imm": comp.imm, "side": "send"})

    def on_nack(self, nack: Nack, now_ns: int) -> None:
        if self.error is not None:
            return
        self.counters["nacks"] += 1
        self._peer_ports(nack.port_status, now_ns)
        if nack.reason == NackReason.UNEXP_EVENT:
            self._fail(f"remote access error (NACK UNEXP_EVENT for PSN {nack.psn})", now_ns)
            return
        trimmed = nack.reason in (NackReason.TRIMMED, NackReason.TRIMMED_LASTHOP)
        if trimmed and self._verdicts and nack.echo_timestamp:
            # a transmission already declared lost was trimmed: congestion, not failure
            if self._explain_loss(nack.ev, nack.echo_timestamp, "nack_trimmed", now_ns):
                self._note_congestion(now_ns)
                self._ev_congested[nack.ev] = now_ns
        rec = self.records.get(unwrap(nack.psn & PSN_MASK, self.snd_una))
        if rec is None or rec.acked or rec.lost:
            return
        if nack.echo_timestamp and nack.echo_timestamp != rec.sent_ns:
            return      # NACK of an earlier transmission of this PSN
        if nack.reason in (NackReason.TRIMMED, NackReason.TRIMMED_LASTHOP):
            self._note_congestion(now_ns)
            self._ev_congested[rec.ev] = now_ns
        if nack.reason == NackReason.TRIMMED:
            self.evs.skip_next_turn(rec.ev, now_ns)
            self._declare_lost(rec, "nack_trimmed", now_ns, penalize=False)
        elif nack.reason == NackReason.TRIMMED_LASTHOP:
            self._declare_lost(rec, "nack_trimmed", now_ns, penalize=False)
        else:
            rec.timeouts += 1
            if rec.timeouts > self.cfg.retry_limit:
                self._fail(f"PSN {nack.psn} NACKed (reason {nack.reason:#x}) more than "
                           f"{self.cfg.retry_limit} times", now_ns)
                return
            self._declare_lost(rec, "nack_other", now_ns, penalize=False)

    def on_probe_response(self, probe: Probe, now_ns: int) -> None:
        if self.error is not None or not probe.response:
            return
        self._peer_ports(probe.port_status, now_ns)
        self.evs.probe_response(probe.seq, probe.ev, now_ns)


# ---------------------------------------------------------------------- receiver


def answer_probe(probe: Probe, port_status: int) -> tuple[Probe, int]:
    """The responder side of an EV probe (reserved QP 2): reflect it back on the same EV, so
    the answer crosses the same plane and spine. Returns (response, plane)."""
    resp = Probe(ev=probe.ev, seq=probe.seq, timestamp=probe.timestamp, response=True,
                 src_qp=probe.src_qp, port_status=port_status, path_ev=probe.ev)
    return resp, ev_plane(probe.ev)


@dataclass
class _ReverseEV:
    ev: int
    fails: int = 0


class AssembledCompletions:
    """What every receiving QP (MRC and the RoCE baseline) shares: WRITE-with-IMM completions
    come from its MessageAssembler (self.assembler, set by the subclass)."""

    @property
    def completions(self) -> list[Completion]:
        return self.assembler.completions

    def pop_completions(self) -> list[Completion]:
        out, self.assembler.completions = self.assembler.completions, []
        return out


class ReceiverQP(AssembledCompletions):
    """Receiving half of an MRC QP: data in, SACK/NACK out, memory placed, completions."""

    def __init__(self, qp_num: int, peer_qp: int, config: MRCConfig, paths: PathInfo,
                 rng: random.Random, registry: MemoryRegistry | None = None,
                 emit: Callable[[dict], None] | None = None):
        self.qp_num = qp_num
        self.peer_qp = peer_qp
        self.cfg = config
        self.paths = paths
        self.rng = rng
        self.registry = registry if registry is not None else MemoryRegistry()
        self.emit = emit or (lambda event: None)
        self.rcv_cum = config.start_psn          # absolute: every seq < rcv_cum has arrived
        self.received: set[int] = set()          # absolute seqs >= rcv_cum that arrived
        self.assembler = MessageAssembler(qp_num, self.emit)
        self.local_up = {p: True for p in paths.planes}
        self.reverse: dict[int, list[_ReverseEV]] = {
            p: [_ReverseEV(self._random_ev(p)) for _ in range(config.reverse_evs_per_plane)]
            for p in paths.planes}
        self._rev_rr = {p: 0 for p in paths.planes}
        self._probe_rr = 0
        self._probe_seq = 0
        self._pending: dict[int, tuple[int, int]] = {}  # seq -> (ev, sent_ns)
        self._expired: dict[int, int] = {}              # timed-out probe seq -> ev (late answers)
        # Timed-out probes not judged yet: seq -> (ev, sent_ns). A timeout is evidence against
        # its EV only once a probe sent LATER was answered (another reverse path works and the
        # peer is alive); until then the peer, its CPU or every path stalled (same rule as the
        # sender's ACK timeout).
        self._unjudged: dict[int, tuple[int, int]] = {}
        self._probe_srtt: float | None = None           # RTT of answered reverse probes
        self._probe_rttvar = 0.0
        self._congested_until_ns = -1                   # trimmed / CE data seen recently
        self._next_probe_ns = 0
        self.last_rx_ns: int | None = None
        self._unacked = 0
        self._ack_due_ns: int | None = None     # delayed SACK deadline while _unacked > 0
        self._last_data: tuple | None = None    # (ev, timestamp, plane, seq) of the newest packet
        self._newest_sent_ts = 0                # latest sender timestamp seen on this QP
        self.counters = {"rx_packets": 0, "rx_bytes": 0, "placed_bytes": 0, "duplicates": 0,
                         "ooo": 0, "trimmed": 0, "access_errors": 0, "malformed": 0,
                         "out_of_window": 0, "foreign": 0, "sacks": 0, "nacks": 0}

    def _random_ev(self, plane: int) -> int:
        return make_ev(plane, self.rng.randrange(self.paths.spines), random_entropy(self.rng))

    @property
    def port_status(self) -> int:
        return sum(1 << p for p, up in self.local_up.items() if up)

    def set_local_port(self, plane: int, up: bool, now_ns: int) -> None:
        if plane in self.local_up and self.local_up[plane] != up:
            self.local_up[plane] = up
            self.emit({"t_ns": now_ns, "event": "port", "plane": plane, "up": up,
                       "side": "local", "qp": self.qp_num})

    def _reply_path(self, plane: int) -> tuple[int, int] | None:
        if not self.local_up.get(plane, False):
            ups = [p for p, up in self.local_up.items() if up]
            if not ups:
                return None
            plane = ups[0]
        revs = self.reverse[plane]
        i = self._rev_rr[plane] % len(revs)
        self._rev_rr[plane] = i + 1
        return plane, revs[i].ev

    def on_data(self, pkt: DataPacket, now_ns: int, plane: int) -> list[tuple[object, int]]:
        """One data packet that arrived on `plane`; returns (Sack|Nack, plane) to send."""
        if pkt.dest_qp != self.qp_num:
            self.counters["foreign"] += 1
            return []
        if pkt.opcode not in WRITE_OPCODES:
            self.counters["malformed"] += 1
            return []
        self.last_rx_ns = now_ns
        self.counters["rx_packets"] += 1
        seq = unwrap(pkt.psn & PSN_MASK, self.rcv_cum)
        duplicate = seq < self.rcv_cum or seq in self.received
        if duplicate:
            self.counters["duplicates"] += 1
            return self._sack(pkt, seq, now_ns, plane)
        if seq >= self.rcv_cum + self.cfg.mpr_window:
            self.counters["out_of_window"] += 1
            return self._nack(pkt, NackReason.PSN_OOR_WINDOW, plane)
        if pkt.trimmed or pkt.ecn_ce:
            self._congested_until_ns = now_ns + self._period(self.cfg.congestion_grace_rtts)
        if pkt.trimmed:
            self.counters["trimmed"] += 1
            reason = NackReason.TRIMMED_LASTHOP if pkt.trim_lasthop else NackReason.TRIMMED
            return self._nack(pkt, reason, plane)
        payload = pkt.payload
        if len(payload) > pkt.dma_len:
            self.counters["malformed"] += 1
            return []
        try:
            self.registry.write(pkt.rkey, pkt.va, payload)
        except AccessError:
            self.counters["access_errors"] += 1
            return self._nack(pkt, NackReason.UNEXP_EVENT, plane)
        if not self.assembler.add(pkt.msn, len(payload), pkt.dma_len, pkt.opcode, pkt.imm, now_ns):
            self.counters["malformed"] += 1
            return []
        self.counters["rx_bytes"] += len(payload)
        self.counters["placed_bytes"] += len(payload)
        if seq == self.rcv_cum:
            self.rcv_cum += 1
            while self.rcv_cum in self.received:
                self.received.discard(self.rcv_cum)
                self.rcv_cum += 1
        else:
            self.counters["ooo"] += 1
            self.received.add(seq)
        self._unacked += 1
        # Coalescing (ack_every > 1): sprayed packets arrive out of order all the time and the
        # sender's loss detection is time based, so reordering alone does not force a SACK
        # (selective SACK bits free the sender's window as well as the cumulative PSN does).
        # A SACK leaves at once for what the sender must act on quickly: ECN (EV skip, NSCC),
        # AckReq (retransmissions, message ends), or a bitmap about to overflow its 64 PSNs.
        # A late packet (sent a reorder window or more before the newest one seen) gets a SACK
        # of its own: the sender may already have declared it lost, and only a SACK reflecting
        # this very packet's EV and timestamp tells its loss verdict the path merely delayed it
        # (a coalesced SACK reflects another packet; the retransmission's, the retransmission).
        late = False
        if pkt.timestamp:
            late = self._newest_sent_ts - pkt.timestamp >= self._late_after_ns()
            self._newest_sent_ts = max(self._newest_sent_ts, pkt.timestamp)
        if (self._unacked >= self.cfg.ack_every or pkt.ecn_ce or pkt.ack_req or late
                or pkt.opcode in LAST_OPCODES
                or seq - self.rcv_cum >= SACK_BITMAP_BITS // 2):
            return self._sack(pkt, seq, now_ns, plane)
        self._last_data = (pkt.ev, pkt.timestamp, plane, seq)
        if self._ack_due_ns is None:
            self._ack_due_ns = now_ns + self._ack_delay()
        return []

    def _late_after_ns(self) -> int:
        return max(1, int(self.cfg.reorder_window_frac * self.cfg.base_rtt_ns),
                   self.cfg.fabric_delay_bound_ns)

    def _ack_delay(self) -> int:
        if self.cfg.ack_delay_ns is not None:
            return self.cfg.ack_delay_ns
        return max(1, int(self.cfg.ack_delay_rtts * self.cfg.base_rtt_ns))

    def _delayed_sack(self, now_ns: int) -> list[tuple[object, int]]:
        """The coalesced SACK whose delay ran out (the newest packet's EV and timestamp)."""
        ev, ts, plane, seq = self._last_data
        return self._sack_fields(ev, ts, False, seq, now_ns, plane)

    def _sack(self, pkt: DataPacket, seq: int, now_ns: int, plane: int):
        return self._sack_fields(pkt.ev, pkt.timestamp, pkt.ecn_ce, seq, now_ns, plane)

    def _sack_fields(self, ev: int, timestamp, ecn_ce: bool, seq: int, now_ns: int, plane: int):
        path = self._reply_path(plane)
        if path is None:
            return []
        self._unacked = 0
        self._ack_due_ns = None
        self._last_data = None
        cum = self.rcv_cum
        base = cum if seq - cum < SACK_BITMAP_BITS else seq - SACK_BITMAP_BITS + 1
        bitmap = 0
        if self.received:
            for i in range(SACK_BITMAP_BITS):
                s = base + i
                if s < cum or s in self.received:
                    bitmap |= 1 << i
        self.counters["sacks"] += 1
        sack = Sack(dest_qp=self.peer_qp, cum_psn=cum & PSN_MASK, bitmap=bitmap,
                    sack_base=base & PSN_MASK, ev=ev,
                    skip=SkipMode.SKIP_ONCE if ecn_ce else SkipMode.NONE,
                    mpr=self.cfg.mpr, port_status=self.port_status,
                    echo_timestamp=timestamp or 0, ooo_count=self.counters["ooo"],
                    rx_bytes=self.counters["rx_bytes"], path_ev=path[1])
        return [(sack, path[0])]

    def _nack(self, pkt: DataPacket, reason: int, plane: int):
        path = self._reply_path(plane)
        if path is None:
            return []
        self.counters["nacks"] += 1
        nack = Nack(dest_qp=self.peer_qp, psn=pkt.psn & PSN_MASK, reason=reason, ev=pkt.ev,
                    port_status=self.port_status, echo_timestamp=pkt.timestamp or 0,
                    path_ev=path[1])
        return [(nack, path[0])]

    # ------------------------------------------------------------------ reverse EV probes

    def _period(self, rtts: float) -> int:
        return max(1, int(rtts * self.cfg.base_rtt_ns))

    def _active(self, now_ns: int) -> bool:
        return (self.last_rx_ns is not None
                and now_ns - self.last_rx_ns <= self._period(self.cfg.reverse_idle_rtts))

    def poll(self, now_ns: int) -> list[tuple[object, int]]:
        """Reverse-EV probes due now (one per base RTT while data flows), and a delayed SACK
        whose coalescing delay ran out."""
        out: list[tuple[object, int]] = []
        if self._ack_due_ns is not None and now_ns >= self._ack_due_ns:
            if self._last_data is not None:
                out.extend(self._delayed_sack(now_ns))
            self._ack_due_ns = None
        out.extend(self._poll_probes(now_ns))
        return out

    def probe_timeout_ns(self) -> int:
        """probe_timeout_rtts base RTTs, or more when answered probes show a loaded path
        (their srtt + 4 rttvar): the answers queue behind data on the congested direction."""
        timeout = self._period(self.cfg.probe_timeout_rtts)
        if self._probe_srtt is not None:
            timeout = max(timeout, int(self._probe_srtt + 4 * self._probe_rttvar))
        if self.cfg.fabric_delay_bound_ns:
            timeout = max(timeout, self.cfg.base_rtt_ns + 2 * self.cfg.fabric_delay_bound_ns)
        return timeout

    def _poll_probes(self, now_ns: int) -> list[tuple[object, int]]:
        timeout = self.probe_timeout_ns()
        for seq, (ev, sent) in list(self._pending.items()):
            if now_ns - sent >= timeout:
                del self._pending[seq]
                self._expired[seq] = ev
                if len(self._expired) > 64:
                    del self._expired[next(iter(self._expired))]
                if self._congestion_excuses(ev, now_ns):
                    continue
                self._unjudged[seq] = (ev, sent)
                if len(self._unjudged) > 64:
                    del self._unjudged[next(iter(self._unjudged))]
        if not self._active(now_ns) or now_ns < self._next_probe_ns:
            return []
        self._next_probe_ns = now_ns + self._period(self.cfg.reverse_probe_rtts)
        all_revs = [(p, r) for p in self.paths.planes if self.local_up[p] for r in self.reverse[p]]
        if not all_revs:
            return []
        plane, rev = all_revs[self._probe_rr % len(all_revs)]
        self._probe_rr += 1
        self._probe_seq = (self._probe_seq + 1) & 0xFFFFFFFF
        self._pending[self._probe_seq] = (rev.ev, now_ns)
        return [(Probe(ev=rev.ev, seq=self._probe_seq, timestamp=now_ns, src_qp=self.qp_num,
                       port_status=self.port_status, path_ev=rev.ev), plane)]

    def next_deadline(self, now_ns: int) -> int | None:
        timeout = self.probe_timeout_ns()
        cands = [sent + timeout for _, sent in self._pending.values()]
        if self._ack_due_ns is not None:
            cands.append(self._ack_due_ns)
        if self._active(now_ns):
            cands.append(max(self._next_probe_ns, now_ns))
        return min(cands) if cands else None

    def on_probe_response(self, probe: Probe, now_ns: int) -> None:
        pending = self._pending.pop(probe.seq, None)
        if pending is None or pending[0] != probe.ev:
            if self._expired.pop(probe.seq, None) == probe.ev:
                late = self._unjudged.pop(probe.seq, None)
                self._reverse_result(probe.ev, True, None, now_ns)   # late, but the path works
                if late is not None:
                    self._judge_timeouts(late[1], now_ns)
            return
        self._judge_timeouts(pending[1], now_ns)
        rtt = now_ns - pending[1]
        if self._probe_srtt is None:
            self._probe_srtt, self._probe_rttvar = float(rtt), rtt / 2.0
        else:
            self._probe_rttvar = 0.75 * self._probe_rttvar + 0.25 * abs(self._probe_srtt - rtt)
            self._probe_srtt = 0.875 * self._probe_srtt + 0.125 * rtt
        self._reverse_result(probe.ev, True, rtt, now_ns)

    def _congestion_excuses(self, ev: int, now_ns: int) -> bool:
        if now_ns >= self._congested_until_ns:
            return False
        # Data arrives trimmed/marked: the answer is stuck in a congested queue, which says
        # nothing about the reverse path (congestion never retires a path).
        self.emit({"t_ns": now_ns, "event": "probe", "qp": self.qp_num, "ev": ev,
                   "ok": False, "rtt_ns": None, "direction": "reverse", "congested": True})
        return True

    def _judge_timeouts(self, answered_sent_ns: int, now_ns: int) -> None:
        """A probe sent at answered_sent_ns was answered: every probe sent before it that timed
        out (and is still unanswered) failed on its own path."""
        for seq, (ev, sent) in list(self._unjudged.items()):
            if sent < answered_sent_ns:
                del self._unjudged[seq]
                self._reverse_result(ev, False, None, now_ns)

    def _reverse_result(self, ev: int, ok: bool, rtt_ns, now_ns: int) -> None:
        plane = ev_plane(ev)
        for i, rev in enumerate(self.reverse.get(plane, [])):
            if rev.ev != ev:
                continue
            if ok:
                rev.fails = 0
                return
            if self._congestion_excuses(ev, now_ns):
                return
            rev.fails += 1
            self.emit({"t_ns": now_ns, "event": "probe", "qp": self.qp_num, "ev": ev,
                       "ok": False, "rtt_ns": None, "direction": "reverse"})
            if rev.fails >= self.cfg.reverse_probe_fail_limit:
                new = self._random_ev(plane)
                self.reverse[plane][i] = _ReverseEV(new)
                self.emit({"t_ns": now_ns, "event": "ev_state", "qp": self.qp_num, "ev": ev,
                           "plane": plane, "old": "GOOD", "new": "ASSUMED_BAD",
                           "reason": "reverse_probe_timeout", "direction": "reverse"})
                self.emit({"t_ns": now_ns, "event": "ev_state", "qp": self.qp_num, "ev": new,
                           "plane": plane, "old": "UNKNOWN", "new": "GOOD",
                           "reason": "replacement", "replaces": ev, "direction": "reverse"})
            return
