"""The receiver's reverse paths: the small EV set its SACKs and NACKs return on, kept verified by
probes (pure: time is passed in).

The MRC paper (section 2.4, "Reverse Paths"): a small reverse EV set with at least one EV per
plane; the receiver probes a randomly chosen EV and, once the probe is answered, adopts it as a
reverse EV, so the set "always contains EVs known to be up and working". Here:

* SACKs leave on the plane the data came in on (if its port is up) over the reverse EVs of that
  plane (reverse_evs_per_plane, round robin); a plane with none in use borrows another plane's.
  The initial set is drawn at random and used at once, as the forward EV set starts GOOD.
* Every count in base RTTs here is in a full data frame's base RTT (MRCConfig.frame_base_rtt_ns,
  as the sender's timers). While data flows, one in-use reverse EV is probed per base RTT
  (reverse_probe_rtts). A probe
  fails after probe_timeout_rtts base RTTs or the answered probes' srtt + 4 rttvar, whichever is
  longer (the answers queue behind data on a loaded path); both counts in base RTTs hold the
  path's propagation once (traffic/core/rtt.py wait_ns); a late answer still counts as the path
  working. A timeout is evidence against its EV only once a probe sent LATER was answered
  (another reverse path works and the peer is alive; else the peer, its CPU or every path
  stalled), and none counts while arriving data is trimmed or CE-marked (the answer is queued,
  the path is not dead). reverse_probe_fail_limit failures retire the EV (ASSUMED_BAD).
* Verify, then adopt: a plane short of reverse EVs probes one randomly drawn candidate EV at a
  time (one per probe period) and adopts it only when its probe is answered; an unanswered
  candidate is dropped and another drawn.
* Data SACKs refresh the set too (`confirm`): when this host also sends to the peer, a SACK of
  its data on an EV shows that path working, as an answered probe would.
* Retired reverse EVs are probed back like the sender's (traffic/core/evs.py): every
  probe_period_rtts, the period doubling with each failed probe up to probe_backoff_max; probe_k
  answers in a row make the EV GOOD again (it rejoins its plane if the plane is short).
* The control plane's denylist (traffic/core/denylist.py, through `apply_denylist`) binds the reverse
  direction as it binds the forward one: a DENIED EV leaves the set at once (a verified
  candidate refills its slot), is never drawn as a candidate, adopted from a data SACK, probed
  or replied on; once allowed it is treated as retired and must be probed back to GOOD.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from model.events import Event
from model.topology import ev_plane, ev_spine, make_ev, random_entropy
from traffic.core.evs import PathInfo
from traffic.core.messages import PROBE_ID_MASK, Probe
from traffic.core.qp_config import MRCConfig
from traffic.core.rtt import wait_ns


@dataclass
class _ReverseEV:
    ev: int
    fails: int = 0


@dataclass
class _RetiredEV:
    """An ASSUMED_BAD reverse EV, probed back with backoff."""
    ev: int
    next_probe_ns: int
    failures: int = 0            # consecutive failed probes: the period backs off with them
    successes: int = 0           # consecutive answered probes: probe_k of them -> GOOD


# What a probe was sent for.
_IN_USE = "in_use"               # health check of a reverse EV in use
_CANDIDATE = "candidate"         # a random EV to adopt once answered
_RETIRED = "retired"             # probing a retired EV back


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
        self.evs: dict[int, list[_ReverseEV]] = {p: self._initial_evs(p) for p in paths.planes}
        self._rev_rr = {p: 0 for p in paths.planes}
        self._probe_rr = 0
        self._probe_seq = 0
        self._pending: dict[int, tuple[int, int, str]] = {}  # seq -> (ev, sent_ns, kind)
        self._expired: dict[int, int] = {}              # timed-out probe seq -> ev (late answers)
        self.retired: dict[int, _RetiredEV] = {}        # ASSUMED_BAD reverse EVs, probed back
        self._candidate: dict[int, int] = {}            # plane -> seq of its candidate probe
        self._replaces: dict[int, list[int]] = {p: [] for p in paths.planes}  # retired, unfilled
        self._unjudged: dict[int, tuple[int, int]] = {} # timed out, not judged: seq -> (ev, sent)
        self._probe_srtt: float | None = None           # RTT of answered reverse probes
        self._probe_rttvar = 0.0
        self._congested_until_ns = -1                   # trimmed / CE data seen recently
        self._next_probe_ns = 0
        self._check_all = False                         # probe every in-use EV at next poll
        self._last_check_all_ns: int | None = None
        self.denied: set[int] = set()                   # DENIED by the control plane
        self._denies: Callable[[int], bool] = lambda ev: False

    def _random_ev(self, plane: int, spine: int | None = None) -> int:
        if spine is None:
            spine = self.rng.randrange(self.paths.spines)
        return make_ev(plane, spine, random_entropy(self.rng))

    def _initial_evs(self, plane: int) -> list[_ReverseEV]:
        """The plane's first reverse EVs, on its spines in turn from a random one: SACKs take
        them in turn, and one dead T1 carrying all of them would swallow every SACK of the
        plane until probes found it, at a burst's end leaving the sender nothing but timeouts
        on healthy paths of every plane."""
        start = self.rng.randrange(self.paths.spines)
        return [_ReverseEV(self._random_ev(plane, (start + i) % self.paths.spines))
                for i in range(self.cfg.reverse_evs_per_plane)]

    def _period(self, rtts: float) -> int:
        return self.cfg.frame_rtts_ns(rtts)

    def _wait(self, rtts: float) -> int:
        """A probe's wait for its answer, and the period between probes (one answer awaited at
        a time), in base RTTs: the propagation once (traffic/core/rtt.py wait_ns)."""
        return wait_ns(rtts, self.cfg.frame_base_rtt_ns, self.cfg.propagation_rtt_ns)

    def _retired_period(self) -> int:
        """Probe period of a retired reverse EV: the sender's (a fixed probe_period_ns, else
        probe_period_rtts base RTTs)."""
        return self.cfg.probe_period_ns or self._period(self.cfg.probe_period_rtts)

    @property
    def port_status(self) -> int:
        return sum(1 << p for p, up in self.local_up.items() if up)

    def note_congestion(self, now_ns: int) -> None:
        """Arriving data was trimmed or CE-marked: probe timeouts are no evidence for a while."""
        self._congested_until_ns = now_ns + self._period(self.cfg.congestion_grace_rtts)

    def ack_went_missing(self, now_ns: int) -> None:
        """The sender resent data this receiver already had: an ACK of it was lost or late,
        on one of the reverse EVs. Probe every in-use reverse EV at the next poll (at most once
        per probe timeout) instead of each waiting its turn in the round robin: a dead reverse
        path then fails its probes within two probe timeouts, where the round robin over a
        large reverse set would leave it in use for many probe rounds."""
        last = self._last_check_all_ns
        if last is None or now_ns - last >= self.probe_timeout_ns():
            self._check_all = True
            self._last_check_all_ns = now_ns

    def reply_path(self, plane: int) -> tuple[int, int] | None:
        """(plane, reverse EV) for a SACK/NACK answering data that came in on `plane`; None if
        no local port is up. A plane whose reverse EVs were all retired borrows the next plane
        with one; with none in use anywhere (every probe failing), a retired one is better
        than silence."""
        ups = [p for p in self.paths.planes if self.local_up.get(p, False)]
        if not ups:
            return None
        if plane not in ups or not self.evs[plane]:
            order = ups[ups.index(plane) + 1:] + ups[:ups.index(plane)] if plane in ups else ups
            plane = next((p for p in order if self.evs[p]), plane if plane in ups else ups[0])
        revs = self.evs[plane]
        if not revs:
            retired = [r.ev for r in self.retired.values() if ev_plane(r.ev) == plane]
            return (plane, retired[0]) if retired else None
        return plane, self._next_reverse_ev(plane)

    def _next_reverse_ev(self, plane: int) -> int:
        """The next of `plane`'s in-use reverse EVs in round robin (the plane has one)."""
        revs = self.evs[plane]
        i = self._rev_rr[plane] % len(revs)
        self._rev_rr[plane] = i + 1
        return revs[i].ev

    def second_reply_path(self, first: tuple[int, int]) -> tuple[int, int] | None:
        """A reverse path for a copy of a SACK that already leaves on `first` (plane, EV),
        sharing no link with it beyond the hosts' own: an in-use reverse EV of another plane
        whose port is up (planes meet only at the hosts), else one of the same plane through
        another spine; None if the set has no such EV."""
        plane, ev = first
        planes = list(self.paths.planes)
        at = planes.index(plane) if plane in planes else -1
        for other in planes[at + 1:] + planes[:max(at, 0)]:
            if self.evs[other] and self.local_up.get(other, False):
                return other, self._next_reverse_ev(other)
        spine = ev_spine(ev)
        for rev in self.evs.get(plane, ()):
            if ev_spine(rev.ev) != spine:
                return plane, rev.ev
        return None

    def probe_timeout_ns(self) -> int:
        """probe_timeout_rtts base RTTs, or more when answered probes show a loaded path
        (their srtt + 4 rttvar): the answers queue behind data on the congested direction."""
        timeout = self._wait(self.cfg.probe_timeout_rtts)
        if self._probe_srtt is not None:
            timeout = max(timeout, int(self._probe_srtt + 4 * self._probe_rttvar))
        if self.cfg.fabric_delay_bound_ns:
            timeout = max(timeout, self.cfg.frame_base_rtt_ns + self.cfg.fabric_delay_bound_ns)
        return timeout

    def poll(self, now_ns: int, active: bool) -> list[tuple[object, int]]:
        """Judge timed-out probes; while data flows (`active`): probes of retired EVs whose
        period ran out, and each probe period one in-use EV and one candidate per short plane."""
        timeout = self.probe_timeout_ns()
        for seq, (ev, sent, kind) in list(self._pending.items()):
            if now_ns - sent < timeout:
                continue
            del self._pending[seq]
            if kind == _CANDIDATE:
                self._candidate.pop(ev_plane(ev), None)     # never answered: not adopted
                self.emit({"t_ns": now_ns, "event": Event.PROBE, "qp": self.qp_num, "ev": ev,
                           "ok": False, "rtt_ns": None, "direction": "reverse",
                           "candidate": True})
                continue
            if kind == _RETIRED:
                self._retired_result(ev, False, now_ns)
                continue
            self._expired[seq] = ev
            if len(self._expired) > 64:
                del self._expired[next(iter(self._expired))]
            if self._congestion_excuses(ev, now_ns):
                continue
            self._unjudged[seq] = (ev, sent)
            if len(self._unjudged) > 64:
                del self._unjudged[next(iter(self._unjudged))]
        if not active:
            return []
        out = []
        if self._check_all:
            self._check_all = False
            in_flight = {ev for ev, _, kind in self._pending.values() if kind == _IN_USE}
            out += [self._probe(rev.ev, _IN_USE, now_ns) for p in self.paths.planes
                    if self.local_up.get(p, False) for rev in self.evs[p]
                    if rev.ev not in in_flight]
        probing = {ev for ev, _, kind in self._pending.values() if kind == _RETIRED}
        for r in self.retired.values():
            if (r.next_probe_ns <= now_ns and r.ev not in probing
                    and self.local_up.get(ev_plane(r.ev), False)):
                r.next_probe_ns = now_ns + self._retired_period()
                out.append(self._probe(r.ev, _RETIRED, now_ns))
        if now_ns < self._next_probe_ns:
            return out
        self._next_probe_ns = now_ns + self._wait(self.cfg.reverse_probe_rtts)
        all_revs = [(p, r) for p in self.paths.planes if self.local_up[p] for r in self.evs[p]]
        if all_revs:
            plane, rev = all_revs[self._probe_rr % len(all_revs)]
            self._probe_rr += 1
            out.insert(0, self._probe(rev.ev, _IN_USE, now_ns))
        for plane in self.paths.planes:
            if (self.local_up[plane] and plane not in self._candidate
                    and len(self.evs[plane]) < self.cfg.reverse_evs_per_plane):
                ev = self._fresh_ev(plane)
                if ev is None:
                    continue                # the denylist leaves this plane no path
                out.append(self._probe(ev, _CANDIDATE, now_ns))
                self._candidate[plane] = self._probe_seq
        return out

    def _probe(self, ev: int, kind: str, now_ns: int) -> tuple[Probe, int]:
        self._probe_seq = (self._probe_seq + 1) & PROBE_ID_MASK
        self._pending[self._probe_seq] = (ev, now_ns, kind)
        return (Probe(ev=ev, seq=self._probe_seq, timestamp=now_ns, src_qp=self.qp_num,
                      port_status=self.port_status, path_ev=ev), ev_plane(ev))

    # Random draws before a plane counts as wholly denied: with even one of two spines allowed,
    # all of them landing on denied paths has probability 2^-64.
    _FRESH_DRAWS = 64

    def _fresh_ev(self, plane: int) -> int | None:
        """A random EV of `plane` neither in use, retired nor denied; None if every draw was
        denied (a rule such as {"plane": P} leaves the plane nothing to adopt)."""
        taken = {r.ev for r in self.evs[plane]} | set(self.retired) | self.denied
        # Path diversity as in _initial_evs: first a spine that no in-use or retired EV of the
        # plane is on, then one no retired EV is on (a retired EV's spine may be dead), then any.
        in_use = {ev_spine(r.ev) for r in self.evs[plane]}
        retired = {ev_spine(ev) for ev in self.retired if ev_plane(ev) == plane}
        spines = range(self.paths.spines)
        tiers = [[s for s in spines if s not in in_use and s not in retired],
                 [s for s in spines if s not in retired]]
        for _ in range(self._FRESH_DRAWS):
            tier = next((t for t in tiers if t), None)
            spine = None if tier is None else self.rng.choice(tier)
            ev = self._random_ev(plane, spine)
            if ev not in taken and not self._denies(ev):
                return ev
            if spine is not None and self._denies(ev):
                for t in tiers:         # a denied path: its spine is no preference any more
                    if spine in t:
                        t.remove(spine)
        return None

    def deadlines(self, now_ns: int, active: bool) -> list[int]:
        """When poll() next has something to do (probe timeouts, the next probe)."""
        timeout = self.probe_timeout_ns()
        cands = [sent + timeout for _, sent, _ in self._pending.values()]
        if active:
            cands.append(now_ns if self._check_all else max(self._next_probe_ns, now_ns))
            probing = {ev for ev, _, kind in self._pending.values() if kind == _RETIRED}
            cands += [max(r.next_probe_ns, now_ns) for r in self.retired.values()
                      if r.ev not in probing and self.local_up.get(ev_plane(r.ev), False)]
        return cands

    def on_probe_response(self, probe: Probe, now_ns: int) -> None:
        pending = self._pending.get(probe.seq)
        if pending is None or pending[0] != probe.ev:
            # an answer that does not reflect the probe's EV is not its answer: the probe
            # stays pending and times out as if nothing had come
            if self._expired.get(probe.seq) == probe.ev:
                del self._expired[probe.seq]
                late = self._unjudged.pop(probe.seq, None)
                self._result(probe.ev, True, now_ns)   # late, but the path works
                if late is not None:
                    self._judge_timeouts(late[1], now_ns)
            return
        del self._pending[probe.seq]
        ev, sent, kind = pending
        # any answer shows the peer alive: earlier unanswered probes failed on their own paths
        self._judge_timeouts(sent, now_ns)
        rtt = now_ns - sent
        if self._probe_srtt is None:
            self._probe_srtt, self._probe_rttvar = float(rtt), rtt / 2.0
        else:
            self._probe_rttvar = 0.75 * self._probe_rttvar + 0.25 * abs(self._probe_srtt - rtt)
            self._probe_srtt = 0.875 * self._probe_srtt + 0.125 * rtt
        if kind == _CANDIDATE:
            plane = ev_plane(ev)
            if self._candidate.get(plane) == probe.seq:
                del self._candidate[plane]
            self._adopt(ev, now_ns)
        elif kind == _RETIRED:
            self._retired_result(ev, True, now_ns)
        else:
            self._result(ev, True, now_ns)

    def confirm(self, ev: int, now_ns: int) -> None:
        """Data this host sent to the peer on `ev` was SACKed (its own sending QP saw it): the
        path works in the reverse direction, as an answered probe would show (the paper:
        "the reverse EV is updated from data SACKs instead of needing EV probes"). An EV in
        use keeps its slot, a retired one counts an answer, a short plane adopts it."""
        plane = ev_plane(ev)
        if plane not in self.evs:
            return
        for rev in self.evs[plane]:
            if rev.ev == ev:
                rev.fails = 0
                return
        if ev in self.retired:
            self._retired_result(ev, True, now_ns)
        else:
            self._adopt(ev, now_ns)

    def _adopt(self, ev: int, now_ns: int, old: str = "UNKNOWN", reason: str = "replacement") -> None:
        """A verified EV (its probe was answered) joins its plane's reverse EVs if the plane is
        short of them."""
        plane = ev_plane(ev)
        if len(self.evs[plane]) >= self.cfg.reverse_evs_per_plane or self._denies(ev):
            return
        self.evs[plane].append(_ReverseEV(ev))
        event = {"t_ns": now_ns, "event": Event.EV_STATE, "qp": self.qp_num, "ev": ev,
                 "plane": plane, "old": old, "new": "GOOD", "reason": reason,
                 "direction": "reverse", "verified": True}
        if self._replaces[plane]:
            event["replaces"] = self._replaces[plane].pop(0)
        self.emit(event)

    def _retired_result(self, ev: int, ok: bool, now_ns: int) -> None:
        r = self.retired.get(ev)
        if r is None:
            return
        if not ok:
            r.successes = 0
            r.failures += 1
            backoff = min(1 << min(r.failures, 30), self.cfg.probe_backoff_max)
            period = self._retired_period()
            r.next_probe_ns = max(r.next_probe_ns, now_ns + period * (backoff - 1))
            self.emit({"t_ns": now_ns, "event": Event.PROBE, "qp": self.qp_num, "ev": ev,
                       "ok": False, "rtt_ns": None, "direction": "reverse"})
            return
        r.failures = 0
        r.successes += 1
        if r.successes < self.cfg.probe_k:
            return
        del self.retired[ev]
        plane = ev_plane(ev)
        if ev in self._replaces[plane]:
            self._replaces[plane].remove(ev)     # back in its own place: it replaces nothing
        if len(self.evs[plane]) < self.cfg.reverse_evs_per_plane:
            self._adopt(ev, now_ns, old="ASSUMED_BAD", reason="probe_ok")
        else:
            self.emit({"t_ns": now_ns, "event": Event.EV_STATE, "qp": self.qp_num, "ev": ev,
                       "plane": plane, "old": "ASSUMED_BAD", "new": "GOOD",
                       "reason": "probe_ok", "direction": "reverse"})

    def apply_denylist(self, denies: Callable[[int], bool], now_ns: int) -> tuple[int, int]:
        """Make the DENIED set what `denies(ev)` names, from now on too (candidates, SACK
        refreshes): in-use and retired EVs it names become DENIED and their probes are
        forgotten; denied EVs it no longer names are allowed and join the retired ones, to be
        probed back. Returns (newly denied, newly allowed)."""
        self._denies = denies
        newly_denied = 0
        for plane, revs in self.evs.items():
            for rev in [r for r in revs if denies(r.ev)]:
                revs.remove(rev)
                self._replaces[plane].append(rev.ev)    # a verified candidate takes its slot
                self._deny(rev.ev, "GOOD", now_ns)
                newly_denied += 1
        for ev in [ev for ev in self.retired if denies(ev)]:
            del self.retired[ev]
            self._deny(ev, "ASSUMED_BAD", now_ns)
            newly_denied += 1
        for seq, (ev, _, kind) in list(self._pending.items()):
            if ev in self.denied or denies(ev):
                del self._pending[seq]
                if kind == _CANDIDATE and self._candidate.get(ev_plane(ev)) == seq:
                    del self._candidate[ev_plane(ev)]
        for seq in [s for s, ev in self._expired.items() if ev in self.denied]:
            del self._expired[seq]
        for seq in [s for s, (ev, _) in self._unjudged.items() if ev in self.denied]:
            del self._unjudged[seq]
        newly_allowed = 0
        for ev in [ev for ev in self.denied if not denies(ev)]:
            self.denied.discard(ev)
            self.retired[ev] = _RetiredEV(ev, next_probe_ns=now_ns)
            self.emit({"t_ns": now_ns, "event": Event.EV_STATE, "qp": self.qp_num, "ev": ev,
                       "plane": ev_plane(ev), "old": "DENIED", "new": "ASSUMED_BAD",
                       "reason": "allowed", "direction": "reverse"})
            newly_allowed += 1
        return newly_denied, newly_allowed

    def _deny(self, ev: int, old: str, now_ns: int) -> None:
        self.denied.add(ev)
        self.emit({"t_ns": now_ns, "event": Event.EV_STATE, "qp": self.qp_num, "ev": ev,
                   "plane": ev_plane(ev), "old": old, "new": "DENIED", "reason": "denied",
                   "direction": "reverse"})

    def _congestion_excuses(self, ev: int, now_ns: int) -> bool:
        if now_ns >= self._congested_until_ns:
            return False
        # Data arrives trimmed/marked: the answer is stuck in a congested queue, which says
        # nothing about the reverse path (congestion never retires a path).
        self.emit({"t_ns": now_ns, "event": Event.PROBE, "qp": self.qp_num, "ev": ev,
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
            self.emit({"t_ns": now_ns, "event": Event.PROBE, "qp": self.qp_num, "ev": ev,
                       "ok": False, "rtt_ns": None, "direction": "reverse"})
            if rev.fails >= self.cfg.reverse_probe_fail_limit:
                # retired; its slot is filled by the first candidate whose probe is answered
                del self.evs[plane][i]
                self.retired[ev] = _RetiredEV(
                    ev, next_probe_ns=now_ns + self._retired_period())
                self._replaces[plane].append(ev)
                self.emit({"t_ns": now_ns, "event": Event.EV_STATE, "qp": self.qp_num, "ev": ev,
                           "plane": plane, "old": "GOOD", "new": "ASSUMED_BAD",
                           "reason": "reverse_probe_timeout", "direction": "reverse"})
            return
