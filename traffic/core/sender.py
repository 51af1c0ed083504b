"""Sending half of an MRC QP (pure: time is passed in; the endpoint adapter owns sockets).
The decisions it applies live in loss_policy.py, rtt.py, evs.py, nscc.py, reverse_paths.py and
suspect_paths.py (where not to retransmit).

RDMA WRITE / WRITE-with-IMM segmented at `max_payload` bytes, 24-bit PSNs (wraparound handled by
unwrapping against the cumulative ACK), every packet on the next EV of the EV set
(traffic/core/evs.py), never more than MPR x 128 PSNs beyond the cumulative ACK, NSCC window and a
per-plane pacer (traffic/core/nscc.py). Timers come from the RTT estimator (traffic/core/rtt.py).

Loss detection:
  * ACK timeout: each transmission has a deadline = send time + RTO(t), t = the timeouts that
    PSN already had (traffic/core/rtt.py: OCP's linear then exponential retries). Once a PSN's
    retry_linear_count + retry_exp_count retries are spent (never, with retry_exp_count 25) its
    next timeout puts the QP in error: reported, every outstanding WRITE completes with an error
    status (flushed), and later posts fail.
  * SACK gap (RACK-like, time-based so cross-path jitter is not taken for loss): a transmission is
    lost when the SACKs show that a packet SENT at least the reorder window later (any EV) has
    arrived while it has not; or, with MRCConfig.path_order_loss, a packet sent at least
    RttEstimator.path_reorder_ns() later on its own path (traffic/core/path_order.py).
  * NACK TRIMMED / TRIMMED_LASTHOP: fast retransmit. Other NACK reasons: retransmit (counts
    toward the retry budget); UNEXP_EVENT (remote access error) -> QP error.
What a loss does to the EV it travelled on is the loss policy's decision (traffic/core/loss_policy.py,
MRCConfig.loss_policy); the sender only applies it. With MRCConfig.suspend_siblings a loss the
policy holds against its EV also suspends the EV's whole (plane, spine) path
(traffic/core/suspect_paths.py SuspectPaths).

Every retransmission goes on a FRESH EV (never the one that lost it), lowest PSN first, and never
on an EV with an outstanding unexplained loss (a loss without trim not followed by the delivery of
a packet sent later on that EV); it also prefers a path (plane, spine) with no such loss, so a
retransmission is not resent into a hole that swallowed a sibling EV's packet
(traffic/core/suspect_paths.py UnexplainedLosses).

Events go to emit(dict) with "t_ns" and "event" set; the adapter adds "host".
"""
from __future__ import annotations

import heapq
import random
from collections import deque
from typing import Callable

from model.events import Event
from model.topology import ev_plane, ev_spine
from traffic.core import loss_policy as lp
from traffic.core.evs import DENIED, EVSet, PathInfo
from traffic.core.messages import (IMM_OPCODES, LAST_OPCODES, PSN_MASK, SACK_BITMAP_BITS,
                              DataPacket, Nack, NackReason, Probe, Sack, SkipMode)
from traffic.core.nscc import Nscc, PlanePacer
from traffic.core.path_order import PathOrder
from traffic.core.qp_config import MRCConfig, unwrap
from traffic.core.rtt import RttEstimator
from traffic.core.suspect_paths import SuspectPaths, UnexplainedLosses
from traffic.core.work_requests import (WC_REM_ACCESS_ERR, WC_RETRY_EXC_ERR, Completion, PostedWrites,
                                   _OutMessage, _TxRecord)

_Verdict = lp.Verdict


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
        self.rtt = RttEstimator(config)
        self.loss_policy = lp.make_loss_policy(config, self.rtt)
        self.evs = EVSet(paths, rng, qp=qp_num, ev_count=config.ev_count,
                         backup_count=config.ev_backup_count, min_active=config.ev_min_active,
                         evs_per_path=config.evs_per_path,
                         probe_period_ns=self._probe_period_ns(),
                         probe_timeout_ns=self.rtt.wait_ns(config.probe_timeout_rtts),
                         probe_k=config.probe_k, probe_backoff_max=config.probe_backoff_max,
                         pin_spine=config.ev_pin_spine, pin_count=config.ev_pin_count,
                         emit=self.emit)
        self.pacer = PlanePacer(paths.planes, config.port_rate_Bps,
                                config.pacing_burst_packets * (config.max_payload + config.header_overhead))
        # NSCC's base RTT: a full data frame's unloaded round trip (MRCConfig.nscc_frame_rtt_ns),
        # at least nscc_min_base_rtt_ns; smaller RTT samples never take it lower.
        self._nscc_base_floor = max(config.nscc_min_base_rtt_ns,
                                    config.frame_base_rtt_ns if config.nscc_frame_rtt_ns else 0)
        self.nscc = Nscc(base_rtt_ns=max(self.rtt.base_rtt_ns, self._nscc_base_floor),
                         link_rate_Bps=config.port_rate_Bps * len(paths.planes), mss=config.max_payload,
                         gamma=config.nscc_gamma, max_md_jump=config.nscc_max_md_jump,
                         fi=config.nscc_fi, fi_scale=config.nscc_fi_scale, eta=config.nscc_eta,
                         prop_gain=config.nscc_prop_gain,
                         max_window_bdp=config.nscc_max_window_bdp,
                         max_cwnd=config.nscc_max_cwnd,
                         initial_window_bdp=config.nscc_initial_window_bdp,
                         target_frac=0.75 if config.trimming else 1.0,
                         target_delay_ns=config.nscc_target_delay,
                         qa_threshold_ns=config.nscc_qa_threshold, qa_gate=config.nscc_qa_gate,
                         disable_qa=config.nscc_disable_qa,
                         adjust_bytes_threshold=config.nscc_adjust_bytes_threshold,
                         adjust_period_ns=config.nscc_adjust_period_threshold,
                         delay_alpha=config.nscc_delay_alpha,
                         reference_rtt_ns=config.nscc_reference_rtt_ns)
        self._mpr_window = config.mpr_window  # read per packet; the config never changes
        self.snd_una = config.start_psn     # absolute sequence numbers; wire PSN = seq & mask
        self.snd_nxt = config.start_psn
        self.next_msn = 0
        self.records: dict[int, _TxRecord] = {}
        self.messages: deque[_OutMessage] = deque()     # posted, not yet complete
        self.send_queue: deque[_OutMessage] = deque()   # not yet fully segmented
        self._seg_offset = 0
        self.wimm_inflight = 0      # WRITE-with-IMM messages started, not yet completed
        self._seg_index = 0
        self.inflight_bytes = 0
        self._timers: list[tuple[int, int, int]] = []   # (deadline, seq, tx_count)
        self._retx: list[int] = []                      # heap of seqs, lowest first
        self._send_log: deque[tuple[int, int, int]] = deque()  # (sent_ns, seq, tx_count)
        self._latest_delivered_sent = -1        # newest send time of a delivered first transmission
        self.path_order = PathOrder() if config.path_order_loss else None
        self.unexplained = UnexplainedLosses()
        self.siblings = SuspectPaths(self.evs, self.unexplained) if config.suspend_siblings else None
        # packets sent per EV (first transmissions and resends): an EV's first packet gets the
        # loss policy's grace, and stats() reports where the QP's packets went, per path
        self.sent_by_ev: dict[int, int] = {}
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

    def sent_packets_by_path(self) -> dict[str, int]:
        """Packets this QP sent per path, {"p<plane>s<spine>": n}: where ECN moved its load."""
        out: dict[str, int] = {}
        for ev, n in self.sent_by_ev.items():
            path = f"p{ev_plane(ev)}s{ev_spine(ev)}"
            out[path] = out.get(path, 0) + n
        return out

    # ------------------------------------------------------------------ helpers

    @property
    def base_rtt_ns(self) -> int:
        return self.rtt.base_rtt_ns

    @property
    def local_port_status(self) -> int:
        return sum(1 << p for p, up in self.evs.plane_local_up.items() if up)

    def rto_base_ns(self) -> int:
        return self.rtt.rto_base_ns()

    def rto_ns(self, timeouts: int) -> int:
        return self.rtt.rto_ns(timeouts)

    def reorder_window_ns(self) -> int:
        return self.rtt.reorder_window_ns()

    def congested(self, now_ns: int) -> bool:
        """Some EV of this QP signalled congestion recently (ECN, trim, queueing delay)."""
        return self.loss_policy.congested(now_ns)

    def _probe_period_ns(self) -> int:
        """A fixed period when configured, else probe_period_rtts of the current base RTT."""
        return self.cfg.probe_period_ns or self.rtt.rtts(self.cfg.probe_period_rtts)

    def _rtt_sample(self, rtt: int, now_ns: int, ev: int) -> None:
        if rtt <= 0:
            return
        est = self.rtt
        if est.queued(rtt):
            # queueing on this very EV: it delivers
            self.loss_policy.on_evidence(ev, lp.CONGESTION, now_ns)
        if est.update(rtt):
            self.nscc.set_base_rtt(max(rtt, self._nscc_base_floor))
            self.evs.probe_period_ns = self._probe_period_ns()
            self.evs.probe_timeout_ns = est.wait_ns(self.cfg.probe_timeout_rtts)

    # ------------------------------------------------------------------ API

    @property
    def idle(self) -> bool:
        """Nothing posted is still outstanding."""
        return not self.messages

    def set_local_port(self, plane: int, up: bool, now_ns: int) -> None:
        """Local NIC port state: a down port takes its plane's EVs out of use."""
        if self.evs.set_plane_local(plane, up):
            self.emit({"t_ns": now_ns, "event": Event.PORT, "plane": plane, "up": up,
                       "side": "local", "qp": self.qp_num})
            self._wake_ns = -1

    def _peer_ports(self, port_status: int, now_ns: int) -> None:
        if not port_status:      # 0 = not reported (a peer with no port up could not answer)
            return
        for p in self.paths.planes:
            up = bool(port_status >> p & 1)
            if self.evs.set_plane_peer(p, up):
                self.emit({"t_ns": now_ns, "event": Event.PORT, "plane": p, "up": up,
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
        verdict_due = self.loss_policy.next_due_ns()
        if verdict_due is not None:
            cands.append(verdict_due)
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
        if self.loss_policy.pending:
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
            self.emit({"t_ns": now_ns, "event": Event.RETRANSMIT, "qp": self.qp_num,
                       "psn": rec.seq & PSN_MASK, "old_ev": rec.ev, "new_ev": ev,
                       "reason": rec.retx_reason})
            self.counters["retransmitted_packets"] += 1
            self.counters["retransmitted_bytes"] += rec.length
            out.append(self._transmit(rec, ev, now_ns, retransmit=True))

        blocked = self._wake_ns is not None
        while self.send_queue and not blocked:
            if self.snd_nxt - self.snd_una >= self._mpr_window:
                break
            if not self._window_allows(self._next_segment_length()):
                break
            starts_wimm = self._seg_offset == 0 and self.send_queue[0].imm is not None
            if starts_wimm and self.wimm_inflight >= self.cfg.max_wimm:
                break            # OCP max_wimm: a completion frees the next one
            ev = self.evs.pick(now_ns, plane_ok=plane_ok)
            if ev is None:
                self._note_blocked(now_ns)
                break
            if starts_wimm:
                self.wimm_inflight += 1
            rec = self._cut_segment(_TxRecord)
            out.append(self._transmit(rec, ev, now_ns, retransmit=False))
        return out

    def _pick_for_retransmit(self, rec: _TxRecord, now_ns: int, plane_ok) -> int | None:
        """A fresh EV for a retransmission: never rec.ev, never an EV with an outstanding
        unexplained loss, preferably on a path (plane, spine) without one either."""
        suspect = self.unexplained.suspect

        def clean_path(ev: int) -> bool:
            info = self.evs.evs[ev]
            return not suspect(ev) and not suspect((info.plane, info.spine))

        def clean_ev(ev: int) -> bool:
            return not suspect(ev)

        for allow in (clean_path, clean_ev):
            ev = self.evs.pick(now_ns, exclude=rec.ev, plane_ok=plane_ok, allow=allow)
            if ev is not None:
                return ev
        active = self.evs.active()
        evs = self.evs.evs
        # Only EVs the picks above could have drawn count: not rec.ev (a trimmed packet's own
        # EV stays clean, and counting it held the retransmission until the RTO), not DENIED.
        if any(ev != rec.ev and evs[ev].state != DENIED and clean_ev(ev) for ev in active):
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
        sent_on_ev = self.sent_by_ev.get(ev, 0)
        rec.first_on_ev = sent_on_ev == 0
        self.sent_by_ev[ev] = sent_on_ev + 1
        rec.sent_ns = now_ns
        rec.tx_count += 1
        rec.lost = False
        self.inflight_bytes += rec.length
        self.pacer.consume(plane, rec.length + self.cfg.header_overhead, now_ns)
        heapq.heappush(self._timers, (now_ns + self.rtt.rto_ns(rec.timeouts), rec.seq, rec.tx_count))
        self._send_log.append((now_ns, rec.seq, rec.tx_count))
        if self.path_order is not None:
            self.path_order.sent(ev, now_ns, rec.seq, rec.tx_count)
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
            budget = self.cfg.retry_budget
            if budget is not None and rec.timeouts > budget:
                self._fail(f"ACK timeout: PSN {seq & PSN_MASK} unacknowledged after "
                           f"{budget} retries", now_ns, WC_RETRY_EXC_ERR, seq)
                return
            # Whether anything sent later was delivered (other paths work) is what tells a
            # path failure from a stall of the peer, its CPU or every path.
            # (MRCConfig.stall_burst_rtts: or something sent just before it, in its burst)
            burst = self.rtt.rtts(self.cfg.stall_burst_rtts) if self.cfg.stall_burst_rtts else 0
            later_delivered = self._latest_delivered_sent > rec.sent_ns - burst
            if not later_delivered:
                self.counters["timeouts_without_evidence"] += 1
            self._declare_lost(rec, lp.TIMEOUT, now_ns, later_delivered=later_delivered)

    def _declare_lost(self, rec: _TxRecord, cause: str, now_ns: int,
                      later_delivered: bool = True) -> None:
        """Queue `rec` for retransmission and apply the loss policy's decision to its EV."""
        rec.lost = True
        # the retransmit event's reason: both kinds of trim are "nack_trimmed"
        rec.retx_reason = lp.TRIMMED if cause == lp.TRIMMED_LASTHOP else cause
        rec.declared = (rec.ev, rec.sent_ns)
        self.inflight_bytes -= rec.length
        heapq.heappush(self._retx, rec.seq)
        info = self.evs.evs.get(rec.ev)
        path = None if info is None else (info.plane, info.spine)
        if cause != lp.TRIMMED and cause != lp.TRIMMED_LASTHOP:
            # Unexplained: keep retransmissions off this EV and its path until something sent
            # later on them is delivered.
            self.unexplained.lost((rec.ev,) if path is None else (rec.ev, path), rec.sent_ns)
        decision = self.loss_policy.on_loss(rec.ev, rec.sent_ns, cause, now_ns,
                                            first_on_ev=rec.first_on_ev,
                                            later_delivered=later_delivered, path=path)
        self._apply(rec.ev, decision, now_ns)
        if self.cfg.nscc_enabled:
            # Only a trim is a congestion signal (traffic/core/nscc.py "Losses"); htsim's NACK
            # reaches NSCC while the NACKed bytes still count as in flight.
            if cause == lp.TRIMMED or cause == lp.TRIMMED_LASTHOP:
                self.nscc.on_trim_nack(now_ns, rec.length, self.inflight_bytes + rec.length)
            elif cause == lp.TIMEOUT:
                self.nscc.on_timeout(rec.length)
        self._wake_ns = -1

    def _apply(self, ev: int, decision: lp.Decision, now_ns: int) -> None:
        """Carry out what the loss policy decided about `ev`."""
        verdict = decision.verdict
        if self.siblings is not None and (verdict is _Verdict.RETIRE
                                          or verdict is _Verdict.SUSPEND):
            # before `ev` itself is replaced, so its replacement is not drawn from its path
            self.siblings.suspect(ev, now_ns)
        if verdict is _Verdict.RETIRE:
            self.evs.mark_lost(ev, decision.why, now_ns)
        elif verdict is _Verdict.SUSPEND:
            self.counters["loss_verdicts_opened"] += 1
            self.evs.suspend(ev, decision.why, now_ns)
        elif verdict is _Verdict.FORGIVE:
            if decision.why == "congestion":
                self.counters["congestion_losses_forgiven"] += 1
            self.evs.skip_next_turn(ev, now_ns)
        elif verdict is _Verdict.EXCUSE:
            if decision.why == "first_packet":
                self.counters["first_packet_losses_excused"] += 1
        else:
            raise ValueError(f"loss policy answered a loss with {decision!r}")

    # ------------------------------------------------------------------ loss verdicts

    def _explain(self, ev: int, sent_ns: int, kind: str, now_ns: int) -> bool:
        """Evidence about a transmission declared lost; True if it explained an open verdict
        (the loss was not a path failure; the EV returns to use once none is left open)."""
        decision = self.loss_policy.on_evidence(ev, kind, now_ns, sent_ns)
        if decision is None:
            return False
        self.counters["losses_explained_by_trim" if kind == lp.TRIM_NACK
                      else "losses_explained_by_late_delivery"] += 1
        info = self.evs.evs.get(ev)
        # no longer an unexplained loss
        self.unexplained.delivered(ev, None if info is None else (info.plane, info.spine),
                                   sent_ns)
        if decision.verdict is _Verdict.CLEAR:
            self.evs.unsuspend(ev, kind, now_ns)
        if self.siblings is not None and self.siblings.paths:
            self.siblings.clear_delivered(now_ns, self.loss_policy.pending)
        self._wake_ns = -1
        return True

    def _close_verdicts(self, now_ns: int) -> None:
        """Verdicts whose window ran out unexplained: the path lost the packet; retire the EV."""
        for ev, decision in self.loss_policy.due(now_ns):
            self.counters["loss_verdicts_failed"] += 1
            self.evs.mark_lost(ev, decision.why, now_ns)
            self._wake_ns = -1

    def _detect_gaps(self, now_ns: int) -> None:
        threshold = self._latest_delivered_sent - self.rtt.reorder_window_ns()
        log = self._send_log
        overtaken = []
        while log and log[0][0] <= threshold:
            overtaken.append(log.popleft()[1:])
        if self.path_order is not None:
            overtaken += self.path_order.overtaken(self.rtt.path_reorder_ns())
        for seq, txc in overtaken:
            rec = self.records.get(seq)
            if rec is not None and not rec.acked and not rec.lost and rec.tx_count == txc:
                self.counters["sack_gap_losses"] += 1
                self._declare_lost(rec, lp.SACK_GAP, now_ns)

    # ------------------------------------------------------------------ input

    def _ack(self, seq: int, now_ns: int) -> int:
        rec = self.records.get(seq)
        if rec is None or rec.acked:
            return 0
        rec.acked = True
        if rec.declared is not None and self.loss_policy.pending:
            # The ACK can only be for the transmission declared lost if there is no other
            # candidate: the only transmission, acked while it waits for its retransmission, or
            # the original of a single retransmission acked sooner after that retransmission
            # than any round trip takes. (With more transmissions out, SACK echoes decide.)
            if (rec.lost and rec.tx_count == 1) or (
                    not rec.lost and rec.tx_count == 2 and now_ns - rec.sent_ns < self.rtt.base_rtt_ns):
                self._explain(*rec.declared, lp.LATE_DELIVERY, now_ns)
        if not rec.lost:
            self.inflight_bytes -= rec.length
        info = self.evs.evs.get(rec.ev)
        self.unexplained.delivered(rec.ev, None if info is None else (info.plane, info.spine),
                                   rec.sent_ns)
        # Only first transmissions order the SACK-gap check: a retransmission after a trim goes
        # on a fresh, idle path and overtakes the packets still queued on the congested one,
        # which would otherwise all look lost.
        if rec.tx_count == 1 and rec.sent_ns > self._latest_delivered_sent:
            self._latest_delivered_sent = rec.sent_ns
        if rec.tx_count == 1 and self.path_order is not None:
            self.path_order.delivered(rec.ev, rec.sent_ns)
        return rec.length

    def on_sack(self, sack: Sack, now_ns: int) -> None:
        if self.error is not None:
            return
        self._peer_ports(sack.port_status, now_ns)
        if self.loss_policy.pending and sack.echo_timestamp:
            # the SACK reflects the EV and send time of the packet that triggered it
            self._explain(sack.ev, sack.echo_timestamp, lp.LATE_DELIVERY, now_ns)
        if self.path_order is not None and sack.echo_timestamp:
            # the echoed transmission itself arrived, whichever of its PSN's it was
            self.path_order.delivered(sack.ev, sack.echo_timestamp)
        rtt = now_ns - sack.echo_timestamp if sack.echo_timestamp else None
        if rtt is not None and rtt > 0:
            self._rtt_sample(rtt, now_ns, sack.ev)
        else:
            rtt = None
        cum = unwrap(sack.cum_psn & PSN_MASK, self.snd_una)
        if cum > self.snd_nxt or cum < self.snd_una - self._mpr_window:
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
            self.loss_policy.on_evidence(sack.ev, lp.CONGESTION, now_ns)
            if sack.ev in self.evs.evs:
                skip_ns = self.cfg.skip_ns or self.rtt.rtts(self.cfg.skip_rtts)
                self.evs.skip(sack.ev, now_ns + skip_ns, now_ns, self.cfg.skip_backoff_max,
                              int(2 * (self.rtt.srtt_ns or 0)))
        if self.cfg.nscc_enabled:
            self.nscc.on_ack(newly, rtt, ecn, now_ns, self.inflight_bytes)
        self._detect_gaps(now_ns)
        if self.siblings is not None and self.siblings.paths:
            self.siblings.clear_delivered(now_ns, self.loss_policy.pending)
        self._complete(now_ns)
        self._wake_ns = -1

    def _complete(self, now_ns: int) -> None:
        while self.messages and self.messages[0].last_seq is not None \
                and self.messages[0].last_seq < self.snd_una:
            msg = self.messages.popleft()
            if msg.imm is not None:
                self.wimm_inflight -= 1
            comp = Completion(self.qp_num, msg.msn & PSN_MASK, msg.length, msg.imm)
            self.completions.append(comp)
            self.emit({"t_ns": now_ns, "event": Event.COMPLETION, "qp": self.qp_num,
                       "msn": comp.msn, "bytes": comp.bytes, "imm": comp.imm, "side": "send"})

    def on_nack(self, nack: Nack, now_ns: int) -> None:
        if self.error is not None:
            return
        self.counters["nacks"] += 1
        self._peer_ports(nack.port_status, now_ns)
        if nack.reason == NackReason.UNEXP_EVENT:
            self._fail(f"remote access error (NACK UNEXP_EVENT for PSN {nack.psn})", now_ns,
                       WC_REM_ACCESS_ERR, unwrap(nack.psn & PSN_MASK, self.snd_una))
            return
        trimmed = nack.reason in (NackReason.TRIMMED, NackReason.TRIMMED_LASTHOP)
        if trimmed and self.loss_policy.pending and nack.echo_timestamp:
            # a transmission already declared lost was trimmed: congestion, not failure
            self._explain(nack.ev, nack.echo_timestamp, lp.TRIM_NACK, now_ns)
        rec = self.records.get(unwrap(nack.psn & PSN_MASK, self.snd_una))
        if rec is None or rec.acked or rec.lost:
            return
        if nack.echo_timestamp and nack.echo_timestamp != rec.sent_ns:
            return      # NACK of an earlier transmission of this PSN
        if trimmed:
            self.loss_policy.on_evidence(rec.ev, lp.CONGESTION, now_ns)
            self._declare_lost(rec, lp.TRIMMED if nack.reason == NackReason.TRIMMED
                               else lp.TRIMMED_LASTHOP, now_ns)
        else:
            rec.timeouts += 1
            budget = self.cfg.retry_budget
            if budget is not None and rec.timeouts > budget:
                self._fail(f"PSN {nack.psn} NACKed (reason {nack.reason:#x}) more than "
                           f"{budget} retries", now_ns, WC_RETRY_EXC_ERR, rec.seq)
                return
            self._declare_lost(rec, lp.NACK_OTHER, now_ns)

    def on_probe_response(self, probe: Probe, now_ns: int) -> None:
        if self.error is not None or not probe.response:
            return
        self._peer_ports(probe.port_status, now_ns)
        if self.evs.probe_response(probe.seq, probe.ev, now_ns) and self.siblings is not None:
            self.siblings.probed_good(probe.ev, now_ns, self.loss_policy.pending)


