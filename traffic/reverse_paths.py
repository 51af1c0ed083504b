"""The receiver's reverse paths: the small EV set its SACKs and NACKs return on, kept fresh by
probes (pure: time is passed in).

SACKs leave on the plane the data came in on (if its port is up) over >= 1 reverse EV per plane,
round robin. While data flows, one reverse EV is probed per base RTT (reverse_probe_rtts). A probe
fails after probe_timeout_rtts base RTTs or the answered probes' srtt + 4 rttvar, whichever is
longer (the answers queue behind data on a loaded path); a late answer still counts as the path
working. A timeout is evidence against its EV only once a probe sent LATER was answered (another
reverse path works and the peer is alive; else the peer, its CPU or every path stalled), and none
counts while arriving data is trimmed or CE-marked (the answer is queued, the path is not dead).
reverse_probe_fail_limit failures replace the EV by a random one on the same plane.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from model.topology import ev_plane, make_ev, random_entropy
from traffic.evs import PathInfo
from traffic.messages import PROBE_ID_MASK, Probe
from traffic.qp_config import MRCConfig


@dataclass
class _ReverseEV:
    ev: int
    fails: int = 0


class ReversePaths:
    """Reverse EVs of one receiving QP. `local_up` (plane -> port up) is the receiver's own
    dict, shared, so port changes need no call here."""

    def __init__(self, qp_num: int, config: MRCConfig, paths: PathInfo, rng: random.Random,
                 local_up: dict[int, bool], emit: Callable[[dict], None]):
        self.qp_num = qp_num
        self.cfg = config
        self.paths = paths
        self.rng = rng
        self.local_up = local_up
        self.emit = emit
        self.evs: dict[int, list[_ReverseEV]] = {
            p: [_ReverseEV(self._random_ev(p)) for _ in range(config.reverse_evs_per_plane)]
            for p in paths.planes}
        self._rev_rr = {p: 0 for p in paths.planes}
        self._probe_rr = 0
        self._probe_seq = 0
        self._pending: dict[int, tuple[int, int]] = {}  # seq -> (ev, sent_ns)
        self._expired: dict[int, int] = {}              # timed-out probe seq -> ev (late answers)
        self._unjudged: dict[int, tuple[int, int]] = {} # timed out, not judged: seq -> (ev, sent)
        self._probe_srtt: float | None = None           # RTT of answered reverse probes
        self._probe_rttvar = 0.0
        self._congested_until_ns = -1                   # trimmed / CE data seen recently
        self._next_probe_ns = 0

    def _random_ev(self, plane: int) -> int:
        return make_ev(plane, self.rng.randrange(self.paths.spines), random_entropy(self.rng))

    def _period(self, rtts: float) -> int:
        return max(1, int(rtts * self.cfg.base_rtt_ns))

    @property
    def port_status(self) -> int:
        return sum(1 << p for p, up in self.local_up.items() if up)

    def note_congestion(self, now_ns: int) -> None:
        """Arriving data was trimmed or CE-marked: probe timeouts are no evidence for a while."""
        self._congested_until_ns = now_ns + self._period(self.cfg.congestion_grace_rtts)

    def reply_path(self, plane: int) -> tuple[int, int] | None:
        """(plane, reverse EV) for a SACK/NACK answering data that came in on `plane`; None if
        no local port is up."""
        if not self.local_up.get(plane, False):
            ups = [p for p, up in self.local_up.items() if up]
            if not ups:
                return None
            plane = ups[0]
        revs = self.evs[plane]
        i = self._rev_rr[plane] % len(revs)
        self._rev_rr[plane] = i + 1
        return plane, revs[i].ev

    def probe_timeout_ns(self) -> int:
        """probe_timeout_rtts base RTTs, or more when answered probes show a loaded path
        (their srtt + 4 rttvar): the answers queue behind data on the congested direction."""
        timeout = self._period(self.cfg.probe_timeout_rtts)
        if self._probe_srtt is not None:
            timeout = max(timeout, int(self._probe_srtt + 4 * self._probe_rttvar))
        if self.cfg.fabric_delay_bound_ns:
            timeout = max(timeout, self.cfg.base_rtt_ns + 2 * self.cfg.fabric_delay_bound_ns)
        return timeout

    def poll(self, now_ns: int, active: bool) -> list[tuple[object, int]]:
        """Judge timed-out probes; the next probe if one is due and data flows (`active`)."""
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
        if not active or now_ns < self._next_probe_ns:
            return []
        self._next_probe_ns = now_ns + self._period(self.cfg.reverse_probe_rtts)
        all_revs = [(p, r) for p in self.paths.planes if self.local_up[p] for r in self.evs[p]]
        if not all_revs:
            return []
        plane, rev = all_revs[self._probe_rr % len(all_revs)]
        self._probe_rr += 1
        self._probe_seq = (self._probe_seq + 1) & PROBE_ID_MASK
        self._pending[self._probe_seq] = (rev.ev, now_ns)
        return [(Probe(ev=rev.ev, seq=self._probe_seq, timestamp=now_ns, src_qp=self.qp_num,
                       port_status=self.port_status, path_ev=rev.ev), plane)]

    def deadlines(self, now_ns: int, active: bool) -> list[int]:
        """When poll() next has something to do (probe timeouts, the next probe)."""
        timeout = self.probe_timeout_ns()
        cands = [sent + timeout for _, sent in self._pending.values()]
        if active:
            cands.append(max(self._next_probe_ns, now_ns))
        return cands

    def on_probe_response(self, probe: Probe, now_ns: int) -> None:
        pending = self._pending.pop(probe.seq, None)
        if pending is None or pending[0] != probe.ev:
            if self._expired.pop(probe.seq, None) == probe.ev:
                late = self._unjudged.pop(probe.seq, None)
                self._result(probe.ev, True, now_ns)   # late, but the path works
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
        self._result(probe.ev, True, now_ns)

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
                self._result(ev, False, now_ns)

    def _result(self, ev: int, ok: bool, now_ns: int) -> None:
        plane = ev_plane(ev)
        for i, rev in enumerate(self.evs.get(plane, [])):
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
                self.evs[plane][i] = _ReverseEV(new)
                self.emit({"t_ns": now_ns, "event": "ev_state", "qp": self.qp_num, "ev": ev,
                           "plane": plane, "old": "GOOD", "new": "ASSUMED_BAD",
                           "reason": "reverse_probe_timeout", "direction": "reverse"})
                self.emit({"t_ns": now_ns, "event": "ev_state", "qp": self.qp_num, "ev": new,
                           "plane": plane, "old": "UNKNOWN", "new": "GOOD",
                           "reason": "replacement", "replaces": ev, "direction": "reverse"})
            return
