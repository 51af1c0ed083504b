"""Single-path RoCE RC baseline (pure: time passed in), same API and message types as MRC.

What a conventional RoCEv2 RC NIC does without PFC: one fixed EV per QP (one path, one plane),
strictly in-order acceptance at the receiver, go-back-N on loss:
  * the receiver accepts only the expected PSN; a later PSN is dropped and answered with ONE
    NACK PSN_SEQ_ERR (the AETH "PSN sequence error" NAK) until the expected PSN arrives;
    duplicates are re-ACKed; ACKs are Sack messages with cum_psn only (bitmap 0);
  * the sender on that NACK (or on an ACK timeout without progress) rewinds to the first
    unacknowledged PSN and resends everything from there (reason "gbn");
  * the ACK timeout is the IB local ACK timeout (4.096 us x 2^roce_ack_timeout), the same
    interval before every retry (the QP attribute has no backoff), counted from the last
    progress or the previous timeout;
  * retry_cnt (roce_retry_limit) timeouts without progress -> QP error. The defaults are
    NCCL's (NCCL_IB_TIMEOUT 20: 4.29 s, NCCL_IB_RETRY_CNT 7; traffic/core/qp_config.py): a QP
    rides out (7 + 1) x 4.29 s = 34.4 s without any ACK before it errors.
No path health, no EV change, no trimming support (a trimmed packet is just a loss), and no
DCQCN (not modelled): the sender is paced to its plane's port rate with a fixed PSN window.
"""
from __future__ import annotations

import random
from collections import deque
from typing import Callable

from model.events import Event
from model.topology import ev_plane, make_ev, random_entropy
from traffic.core.evs import PathInfo
from traffic.core.messages import (IMM_OPCODES, LAST_OPCODES, PSN_MASK, WRITE_OPCODES, DataPacket,
                              Nack, NackReason, Probe, Sack)
from traffic.core.nscc import PlanePacer
from traffic.core.reliability import (AccessError, AssembledCompletions, Completion, MemoryRegistry,
                                 MessageAssembler, MRCConfig, PostedWrites, _OutMessage, _TxRecord,
                                 unwrap)
from traffic.core.work_requests import WC_REM_ACCESS_ERR, WC_RETRY_EXC_ERR


def fixed_path(paths: PathInfo, qp_num: int, rng: random.Random) -> int:
    """The one EV of a RoCE QP: plane and spine fixed for the QP's life (hash-like choice)."""
    plane = paths.planes[qp_num % len(paths.planes)]
    return make_ev(plane, rng.randrange(paths.spines), random_entropy(rng))


class RoceSenderQP(PostedWrites):
    """Sending half of a RoCE RC QP (go-back-N)."""

    def __init__(self, qp_num: int, peer_qp: int, config: MRCConfig, paths: PathInfo,
                 rng: random.Random, emit: Callable[[dict], None] | None = None,
                 ev: int | None = None):
        self.qp_num = qp_num
        self.peer_qp = peer_qp
        self.cfg = config
        self.paths = paths
        self.emit = emit or (lambda event: None)
        self.ev = ev if ev is not None else fixed_path(paths, qp_num, rng)
        self.plane = ev_plane(self.ev)
        self.pacer = PlanePacer([self.plane], config.port_rate_Bps,
                                config.pacing_burst_packets * (config.max_payload + config.header_overhead))
        self.snd_una = config.start_psn
        self.snd_nxt = config.start_psn      # next never-sent PSN
        self.send_ptr = config.start_psn     # next PSN to (re)send
        self.next_msn = 0
        self.records: dict[int, _TxRecord] = {}
        self.messages: deque[_OutMessage] = deque()
        self.send_queue: deque[_OutMessage] = deque()
        self._seg_offset = 0
        self._seg_index = 0
        self.retries = 0
        self._progress_ns: int | None = None   # time of last progress (or first send)
        self._nacked_at: int | None = None     # PSN of the NACK we already rewound for
        self._wake_ns: int | None = None
        self.completions: list[Completion] = []
        self.error: str | None = None
        self.local_up = True
        self.counters = {"sent_packets": 0, "sent_bytes": 0, "retransmitted_packets": 0,
                         "retransmitted_bytes": 0, "timeouts": 0, "nacks": 0, "bad_acks": 0}

    @property
    def local_port_status(self) -> int:
        return sum(1 << p for p in self.paths.planes) if self.local_up else 0

    @property
    def idle(self) -> bool:
        return not self.messages

    def rto_ns(self) -> int:
        """The ACK timeout: one fixed interval (MRCConfig.roce_ack_interval_ns)."""
        return self.cfg.roce_ack_interval_ns

    def _timeout_at(self) -> int | None:
        """When the ACK timer fires: one interval after the last progress (or the previous
        timeout); None while nothing is outstanding."""
        if self.snd_una < self.snd_nxt and self._progress_ns is not None:
            return self._progress_ns + self.rto_ns()
        return None

    def set_local_port(self, plane: int, up: bool, now_ns: int) -> None:
        """The QP's port: while it is down nothing is sent; when it comes back the QP polls at
        once, since a WRITE posted meanwhile with nothing outstanding has no timer to wake it."""
        if plane == self.plane and self.local_up != up:
            self.local_up = up
            self.emit({"t_ns": now_ns, "event": Event.PORT, "plane": plane, "up": up,
                       "side": "local", "qp": self.qp_num})
            if up:
                self._wake_ns = -1

    def next_deadline(self, now_ns: int) -> int | None:
        if self.error is not None:
            return None
        cands = []
        timeout_at = self._timeout_at()
        if timeout_at is not None:
            cands.append(timeout_at)
        if self._wake_ns is not None:
            cands.append(self._wake_ns if self._wake_ns >= 0 else now_ns)
        return min(cands) if cands else None

    def _rewind(self, to_seq: int, now_ns: int) -> None:
        self.send_ptr = to_seq
        self._wake_ns = -1

    def poll(self, now_ns: int) -> list[tuple[object, int]]:
        if self.error is not None:
            return []
        timeout_at = self._timeout_at()
        if timeout_at is not None and now_ns >= timeout_at:
            self.retries += 1
            self.counters["timeouts"] += 1
            if self.retries > self.cfg.roce_retry_limit:
                self._fail(f"ACK timeout: PSN {self.snd_una & PSN_MASK} unacknowledged after "
                           f"{self.cfg.roce_retry_limit} retries", now_ns, WC_RETRY_EXC_ERR,
                           self.snd_una)
                return []
            self._progress_ns = now_ns
            self._rewind(self.snd_una, now_ns)
        self._wake_ns = None
        out = []
        if not self.local_up:
            return out
        while True:
            if not self.pacer.can_send(self.plane, now_ns):
                self._wake_ns = self.pacer.next_send_ns(self.plane, now_ns)
                break
            if self.send_ptr < self.snd_nxt:
                rec = self.records[self.send_ptr]
                self.emit({"t_ns": now_ns, "event": Event.RETRANSMIT, "qp": self.qp_num,
                           "psn": rec.seq & PSN_MASK, "old_ev": self.ev, "new_ev": self.ev,
                           "reason": "gbn"})
                self.counters["retransmitted_packets"] += 1
                self.counters["retransmitted_bytes"] += rec.length
                out.append(self._transmit(rec, now_ns, True))
                self.send_ptr += 1
                continue
            if not self.send_queue or self.snd_nxt - self.snd_una >= self.cfg.roce_window_psns:
                break
            if self.snd_una == self.snd_nxt:
                self._progress_ns = now_ns      # ACK timer starts with the first outstanding PSN
            rec = self._cut_segment(_TxRecord)
            self.send_ptr = self.snd_nxt
            out.append(self._transmit(rec, now_ns, False))
        return out

    def _transmit(self, rec: _TxRecord, now_ns: int, retransmit: bool):
        msg = rec.msg
        rec.sent_ns = now_ns
        rec.tx_count += 1
        self.pacer.consume(self.plane, rec.length + self.cfg.header_overhead, now_ns)
        self.counters["sent_packets"] += 1
        self.counters["sent_bytes"] += rec.length
        pkt = DataPacket(dest_qp=self.peer_qp, psn=rec.seq & PSN_MASK, opcode=rec.opcode,
                         msn=msg.msn & PSN_MASK, va=msg.remote_va + rec.offset, rkey=msg.rkey,
                         dma_len=msg.length, payload=msg.buf[rec.offset:rec.offset + rec.length],
                         imm=msg.imm if rec.opcode in IMM_OPCODES else None, timestamp=now_ns,
                         ack_req=rec.opcode in LAST_OPCODES, retransmit=retransmit, ev=self.ev)
        return pkt, self.plane

    def _advance(self, cum: int, now_ns: int) -> None:
        if cum > self.snd_una:
            for seq in range(self.snd_una, cum):
                del self.records[seq]
            self.snd_una = cum
            self.send_ptr = max(self.send_ptr, cum)
            self.retries = 0
            self._progress_ns = now_ns
            while self.messages and self.messages[0].last_seq is not None \
                    and self.messages[0].last_seq < self.snd_una:
                m = self.messages.popleft()
                comp = Completion(self.qp_num, m.msn & PSN_MASK, m.length, m.imm)
                self.completions.append(comp)
                self.emit({"t_ns": now_ns, "event": Event.COMPLETION, "qp": self.qp_num,
                           "msn": comp.msn, "bytes": comp.bytes, "imm": comp.imm,
                           "side": "send"})
            self._wake_ns = -1

    def on_sack(self, sack: Sack, now_ns: int) -> None:
        if self.error is not None:
            return
        cum = unwrap(sack.cum_psn & PSN_MASK, self.snd_una)
        if not self.snd_una - self.cfg.roce_window_psns <= cum <= self.snd_nxt:
            self.counters["bad_acks"] += 1
            return
        self._advance(cum, now_ns)

    def on_nack(self, nack: Nack, now_ns: int) -> None:
        if self.error is not None:
            return
        self.counters["nacks"] += 1
        if nack.reason == NackReason.UNEXP_EVENT:
            self._fail(f"remote access error (NACK UNEXP_EVENT for PSN {nack.psn})", now_ns,
                       WC_REM_ACCESS_ERR, unwrap(nack.psn & PSN_MASK, self.snd_una))
            return
        seq = unwrap(nack.psn & PSN_MASK, self.snd_una)
        if not self.snd_una <= seq <= self.snd_nxt:
            return
        self._advance(seq, now_ns)      # a sequence-error NAK acknowledges everything before it
        if self._nacked_at == seq and self.send_ptr > seq:
            return                      # already going back for this one
        self._nacked_at = seq
        self._rewind(seq, now_ns)

    def on_probe_response(self, probe: Probe, now_ns: int) -> None:
        return None                     # RoCE has no path probes


class RoceReceiverQP(AssembledCompletions):
    """Receiving half of a RoCE RC QP: strictly in order, go-back-N NAKs."""

    def __init__(self, qp_num: int, peer_qp: int, config: MRCConfig, paths: PathInfo,
                 rng: random.Random, registry: MemoryRegistry | None = None,
                 emit: Callable[[dict], None] | None = None, ev: int | None = None):
        self.qp_num = qp_num
        self.peer_qp = peer_qp
        self.cfg = config
        self.paths = paths
        self.emit = emit or (lambda event: None)
        self.registry = registry if registry is not None else MemoryRegistry()
        self.ev = ev if ev is not None else fixed_path(paths, qp_num, rng)
        self.plane = ev_plane(self.ev)
        self.expected = config.start_psn
        self.nak_sent = False
        self.assembler = MessageAssembler(qp_num, self.emit)
        self.local_up = True
        self.counters = {"rx_packets": 0, "rx_bytes": 0, "placed_bytes": 0, "duplicates": 0,
                         "out_of_order_dropped": 0, "access_errors": 0, "malformed": 0,
                         "foreign": 0, "acks": 0, "nacks": 0}

    @property
    def port_status(self) -> int:
        return sum(1 << p for p in self.paths.planes) if self.local_up else 0

    def set_local_port(self, plane: int, up: bool, now_ns: int) -> None:
        if plane == self.plane:
            self.local_up = up

    def poll(self, now_ns: int) -> list:
        return []

    def next_deadline(self, now_ns: int) -> int | None:
        return None

    def on_probe_response(self, probe: Probe, now_ns: int) -> None:
        return None

    def _ack(self, pkt: DataPacket):
        self.counters["acks"] += 1
        return [(Sack(dest_qp=self.peer_qp, cum_psn=self.expected & PSN_MASK,
                      sack_base=self.expected & PSN_MASK, ev=pkt.ev, mpr=self.cfg.mpr,
                      port_status=self.port_status, echo_timestamp=pkt.timestamp or 0,
                      rx_bytes=self.counters["rx_bytes"], path_ev=self.ev), self.plane)]

    def on_data(self, pkt: DataPacket, now_ns: int, plane: int) -> list[tuple[object, int]]:
        if pkt.dest_qp != self.qp_num:
            self.counters["foreign"] += 1
            return []
        if pkt.opcode not in WRITE_OPCODES or len(pkt.payload) > pkt.dma_len:
            self.counters["malformed"] += 1
            return []
        self.counters["rx_packets"] += 1
        seq = unwrap(pkt.psn & PSN_MASK, self.expected)
        if seq < self.expected:
            self.counters["duplicates"] += 1
            return self._ack(pkt)
        if seq > self.expected or pkt.trimmed:
            self.counters["out_of_order_dropped"] += 1
            if self.nak_sent:
                return []
            self.nak_sent = True
            self.counters["nacks"] += 1
            return [(Nack(dest_qp=self.peer_qp, psn=self.expected & PSN_MASK,
                          reason=NackReason.PSN_SEQ_ERR, ev=pkt.ev, port_status=self.port_status,
                          echo_timestamp=pkt.timestamp or 0, path_ev=self.ev), self.plane)]
        try:
            self.registry.write(pkt.rkey, pkt.va, pkt.payload)
        except AccessError:
            self.counters["access_errors"] += 1
            return [(Nack(dest_qp=self.peer_qp, psn=pkt.psn & PSN_MASK,
                          reason=NackReason.UNEXP_EVENT, ev=pkt.ev, port_status=self.port_status,
                          path_ev=self.ev), self.plane)]
        if not self.assembler.add(pkt.msn, len(pkt.payload), pkt.dma_len, pkt.opcode, pkt.imm,
                                  now_ns):
            self.counters["malformed"] += 1
            return []
        self.counters["rx_bytes"] += len(pkt.payload)
        self.counters["placed_bytes"] += len(pkt.payload)
        self.expected += 1
        self.nak_sent = False
        return self._ack(pkt)


# ---------------------------------------------------------------- endpoint adapter

def qpn_entropy(qp_num: int) -> int:
    """UDP source port of a RoCE QP: a fixed function of the QP number (as RoCE NICs derive it),
    in the RoCEv2 source-port range 0xC000..0xFFFF."""
    return 0xC000 | ((qp_num * 0x9E3779B1) >> 7) & 0x3FFF


def ecmp_path_ev(qp_num: int, paths: PathInfo) -> int:
    """The one EV of a RoCE QP over ECMP routing: plane = qp_num % planes, sport from the QPN.
    Only the sport reaches the wire (no source routing); the spine bits record where the static
    ECMP hash (controller/routing.py ecmp_uplink: sport modulo the round-robin buckets) sends
    it, so event logs name the right path."""
    plane = paths.planes[qp_num % len(paths.planes)]
    entropy = qpn_entropy(qp_num)
    return make_ev(plane, entropy % paths.spines, entropy)


def make_qp_halves(qp_num: int, peer_qp: int, config: MRCConfig, paths: PathInfo,
                   rng: random.Random, registry: MemoryRegistry | None = None,
                   emit: Callable[[dict], None] | None = None):
    """(sender, receiver) of a RoCE RC QP for traffic/nic/endpoint.py: both halves on one fixed EV
    (ACKs return on the same plane and sport), go-back-N, the IB local ACK timeout of the
    config (roce_ack_timeout / roce_ack_timeout_ns, already in the world the QP runs in), no
    path health."""
    ev = ecmp_path_ev(qp_num, paths)
    sender = RoceSenderQP(qp_num, peer_qp, config, paths, rng, emit, ev=ev)
    receiver = RoceReceiverQP(qp_num, peer_qp, config, paths, rng, registry, emit, ev=ev)
    return sender, receiver
