"""Receiving half of an MRC QP (pure: time is passed in; the endpoint adapter owns sockets).

Places each payload at its RETH VA at once (any order), ignores duplicates, SACKs every ack_every
packets or after ack_delay (immediately on ECN, AckReq, duplicates, a late packet, a bitmap half
full, a packet that completes a message) with cumulative PSN, 64-bit bitmap, reflected EV and
timestamp, ECN echo as SKIP_ONCE, port status; NACKs trimmed packets; delivers WRITE-with-IMM
completions when the whole message has arrived, in message order (a completion also implies
every earlier WRITE is placed). SACKs and NACKs return over the reverse paths
(traffic/core/reverse_paths.py); a tail SACK (answering an AckReq packet, a message's last packet or
a retransmission, or the packet that completes a message) also leaves over a second reverse path
(MRCConfig.tail_sack_copy), since no later SACK covers a lost one; so does a coalesced SACK
whose delay ran out, once no data followed it for tail_copy_wait_rtts (the burst ended). With a
trimming fabric (fabric_delay_bound_ns set) a packet counts as late only beyond the trimmers'
queueing bound.
"""
from __future__ import annotations

import random
from dataclasses import replace
from typing import Callable

from model.events import Event
from model.propagation import variable_rtt_ns
from model.topology import ev_plane
from traffic.core.evs import PathInfo
from traffic.core.memory import AccessError, MemoryRegistry
from traffic.core.messages import (LAST_OPCODES, PSN_MASK, SACK_BITMAP_BITS, WRITE_OPCODES,
                              DataPacket, Nack, NackReason, Probe, Sack, SkipMode)
from traffic.core.qp_config import MRCConfig, unwrap
from traffic.core.reverse_paths import ReversePaths
from traffic.core.work_requests import AssembledCompletions, MessageAssembler


def answer_probe(probe: Probe, port_status: int) -> tuple[Probe, int]:
    """The responder side of an EV probe (reserved QP 2): reflect it back on the same EV, so
    the answer crosses the same plane and spine. Returns (response, plane)."""
    resp = Probe(ev=probe.ev, seq=probe.seq, timestamp=probe.timestamp, response=True,
                 src_qp=probe.src_qp, port_status=port_status, path_ev=probe.ev)
    return resp, ev_plane(probe.ev)


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
        self.reverse_paths = ReversePaths(qp_num, config, paths, rng, self.local_up, self.emit)
        self.last_rx_ns: int | None = None
        self._unacked = 0
        self._ack_due_ns: int | None = None     # delayed SACK deadline while _unacked > 0
        self._last_data: tuple | None = None    # (ev, timestamp, plane, seq) of the newest packet
        # (due_ns, Sack, plane): the delayed SACK whose copy leaves at due_ns unless data comes
        self._pending_copy: tuple | None = None
        self._newest_sent_ts = 0                # latest sender timestamp seen on this QP
        self._tail_seq = -1                      # highest seq of a message's last packet seen
        self.counters = {"rx_packets": 0, "rx_bytes": 0, "placed_bytes": 0, "duplicates": 0,
                         "ooo": 0, "trimmed": 0, "access_errors": 0, "malformed": 0,
                         "out_of_window": 0, "foreign": 0, "sacks": 0, "nacks": 0,
                         "sack_copies": 0}

    @property
    def reverse(self) -> dict:
        """plane -> the reverse EVs SACKs and NACKs return on (traffic/core/reverse_paths.py)."""
        return self.reverse_paths.evs

    @property
    def port_status(self) -> int:
        return self.reverse_paths.port_status

    def set_local_port(self, plane: int, up: bool, now_ns: int) -> None:
        if plane in self.local_up and self.local_up[plane] != up:
            self.local_up[plane] = up
            self.emit({"t_ns": now_ns, "event": Event.PORT, "plane": plane, "up": up,
                       "side": "local", "qp": self.qp_num})

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
        self._pending_copy = None               # data came: later SACKs cover it
        seq = unwrap(pkt.psn & PSN_MASK, self.rcv_cum)
        duplicate = seq < self.rcv_cum or seq in self.received
        if duplicate:
            self.counters["duplicates"] += 1
            if pkt.retransmit:
                self.reverse_paths.ack_went_missing(now_ns)
            return self._sack(pkt, seq, now_ns, plane, tail=pkt.ack_req)
        if seq >= self.rcv_cum + self.cfg.mpr_window:
            self.counters["out_of_window"] += 1
            return self._nack(pkt, NackReason.PSN_OOR_WINDOW, plane)
        if pkt.trimmed or pkt.ecn_ce:
            self.reverse_paths.note_congestion(now_ns)
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
        old_cum = self.rcv_cum
        if pkt.opcode in LAST_OPCODES and seq > self._tail_seq:
            self._tail_seq = seq
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
        # A packet that completes a message (its last packet, or the last hole before it when
        # the last packet overtook it) is SACKed at once, and that SACK is a tail SACK.
        completes = old_cum <= self._tail_seq < self.rcv_cum
        if completes or pkt.ack_req:
            return self._sack(pkt, seq, now_ns, plane, tail=True)
        if (self._unacked >= self.cfg.ack_every or pkt.ecn_ce or late
                or pkt.opcode in LAST_OPCODES
                or seq - self.rcv_cum >= SACK_BITMAP_BITS // 2):
            return self._sack(pkt, seq, now_ns, plane)
        self._last_data = (pkt.ev, pkt.timestamp, plane, seq)
        if self._ack_due_ns is None:
            self._ack_due_ns = now_ns + self._ack_delay()
        return []

    def _late_after_ns(self) -> int:
        # reorder_rtts counts the part of the base RTT that is not propagation, as the
        # sender's reorder window does (traffic/core/rtt.py)
        var = variable_rtt_ns(self.cfg.frame_base_rtt_ns, self.cfg.propagation_rtt_ns)
        return max(1, int(self.cfg.reorder_rtts * var), self.cfg.fabric_delay_bound_ns)

    def _ack_delay(self) -> int:
        if self.cfg.ack_delay_ns is not None:
            return self.cfg.ack_delay_ns
        return self.cfg.frame_rtts_ns(self.cfg.ack_delay_rtts)

    def _delayed_sack(self, now_ns: int) -> list[tuple[object, int]]:
        """The coalesced SACK whose delay ran out (the newest packet's EV and timestamp). If no
        packet follows it for tail_copy_wait_rtts, the sender's burst ended and no later SACK
        would cover this one's loss on a dead reverse path: poll then sends its copy."""
        ev, ts, plane, seq = self._last_data
        out = self._sack_fields(ev, ts, False, seq, now_ns, plane)
        if out and self.cfg.tail_sack_copy:
            due = now_ns + self.cfg.frame_rtts_ns(self.cfg.tail_copy_wait_rtts)
            self._pending_copy = (due, *out[0])
        return out

    def _sack(self, pkt: DataPacket, seq: int, now_ns: int, plane: int, tail: bool = False):
        """The SACK answering pkt; a tail SACK (AckReq, or completing a message) also leaves
        over a second reverse path (MRCConfig.tail_sack_copy): no later SACK covers it."""
        out = self._sack_fields(pkt.ev, pkt.timestamp, pkt.ecn_ce, seq, now_ns, plane)
        return self._tail_copy(out) if tail else out

    def _tail_copy(self, out: list) -> list:
        """`out` (one SACK) and, with MRCConfig.tail_sack_copy, its copy."""
        if out and self.cfg.tail_sack_copy:
            out.extend(self._copy(*out[0]))
        return out

    def _copy(self, sack: Sack, first_plane: int, echo: bool = True) -> list:
        """The copy of `sack` over a second reverse path that shares no switch with the first
        ([] when there is none). It carries no ECN echo: the EV skip and NSCC's decrease happen
        once; echo=False also leaves out the echoed timestamp (a later copy's round trip would
        count its wait as fabric delay). Its port status is the current one: a port that went
        down since must not look up again to the sender."""
        second = self.reverse_paths.second_reply_path((first_plane, sack.path_ev))
        if second is None:
            return []
        self.counters["sack_copies"] += 1
        stamp = sack.echo_timestamp if echo else 0
        return [(replace(sack, path_ev=second[1], skip=SkipMode.NONE, echo_timestamp=stamp,
                         port_status=self.port_status), second[0])]

    def _sack_fields(self, ev: int, timestamp, ecn_ce: bool, seq: int, now_ns: int, plane: int):
        path = self.reverse_paths.reply_path(plane)
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
        path = self.reverse_paths.reply_path(plane)
        if path is None:
            return []
        self.counters["nacks"] += 1
        nack = Nack(dest_qp=self.peer_qp, psn=pkt.psn & PSN_MASK, reason=reason, ev=pkt.ev,
                    port_status=self.port_status, echo_timestamp=pkt.timestamp or 0,
                    path_ev=path[1])
        return [(nack, path[0])]

    # ------------------------------------------------------------------ reverse EV probes

    def _period(self, rtts: float) -> int:
        return self.cfg.frame_rtts_ns(rtts)

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
        if self._pending_copy is not None and now_ns >= self._pending_copy[0]:
            out.extend(self._copy(*self._pending_copy[1:], echo=False))
            self._pending_copy = None
        out.extend(self.reverse_paths.poll(now_ns, self._active(now_ns)))
        return out

    def probe_timeout_ns(self) -> int:
        return self.reverse_paths.probe_timeout_ns()

    def next_deadline(self, now_ns: int) -> int | None:
        cands = self.reverse_paths.deadlines(now_ns, self._active(now_ns))
        if self._ack_due_ns is not None:
            cands.append(self._ack_due_ns)
        if self._pending_copy is not None:
            cands.append(self._pending_copy[0])
        return min(cands) if cands else None

    def on_probe_response(self, probe: Probe, now_ns: int) -> None:
        self.reverse_paths.on_probe_response(probe, now_ns)
