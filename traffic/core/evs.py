"""Entropy-value (EV) set and path health of one MRC sender QP (pure: no sockets, time passed in).

One EV = one exact physical path (model.topology.make_ev: plane, spine = T0 uplink, entropy).
MRC sprays every packet on the next active EV and retires a path the moment it loses a packet,
so the interesting logic is the bookkeeping of which EVs are usable. Rules (OCP MRC 1.0):

* The set is built at QP start: `ev_count` active EVs, the same number per plane
  (ev_count // planes, remainder dropped), entropy random and unique; plus `backup_count` backup
  EVs (same split per plane, state UNKNOWN until used). A plane's EVs take its spines in turn
  from a random one, so a path carries as few of them as the count allows. By default
  (ev_count None) there are `evs_per_path` active EVs on each distinct path, planes x spines
  (the paper's EVs each name one path; MRCConfig.evs_per_path says why a QP has several), and
  as many backups, evs_per_path per path (backup_count None). A replacement is a backup on
  another path of the same plane, one with no EV awaiting a verdict or assumed bad if there is
  one.
* Pinning (an experiment's knob, off by default): `pin_spine` and `pin_count` start
  `pin_count` of each plane's active EVs on that spine (T1) and the rest on the plane's other
  spines in turn, so the EV sets of several QPs are forced to overlap on one path (the paper's
  "two flows forced onto one EV"); backups stay random. Only the start is forced: ECN skips,
  retirements and replacements work as without it.
* States GOOD / ASSUMED_BAD / DENIED / UNKNOWN (OCP). "Skip" is not a state: an ECN echo makes the
  round robin pass over the EV on its next turn and until `until_ns`; a trimmed NACK makes it
  pass over it once. How long "a while" lasts is the project's choice (neither OCP's headers nor
  the paper fix it): an EV marked again soon after its skip ended (within the skip's length, or
  SKIP_MEMORY first skips, or two smoothed RTTs) sits on a persistently congested path, and its
  next skip is twice as long, up to `backoff_max` first skips. Without this, a flow beside one
  forced onto a path keeps returning to it: each return sends a round trip's worth of packets
  into the queue before the next echo arrives.
* `suspend(ev)` / `unsuspend(ev)`: a loss without trim whose verdict is still open (the sender
  waits `loss_verdict_ns` for a late trimmed NACK or a late delivery): the EV leaves the
  rotation and a same-plane backup takes its slot at once (without a backup it keeps the slot
  and is passed over), its state stays GOOD; the verdict ends in `unsuspend` (back to use) or
  `mark_lost`.
* `mark_lost(ev)`: loss without trim. The EV becomes ASSUMED_BAD at once and a backup EV from the
  SAME plane takes its slot in the rotation. If the plane has no backup left the slot is dropped,
  unless that would leave fewer than `min_active` GOOD EVs in the rotation: then (project choice)
  the ASSUMED_BAD EV stays in the rotation and keeps carrying traffic, because concentrating all
  traffic on fewer paths than the floor is worse than spraying over an unverified one; it is still
  probed, and is swapped out as soon as a same-plane EV comes back GOOD. When every path is dead
  the QP therefore keeps trying until its retry budget ends in a QP error (never a hang).
* ASSUMED_BAD EVs are probed every `probe_period_ns`; `probe_k` consecutive successes make the EV
  GOOD again (a failure resets the count). A resurrected EV refills its plane's rotation if the
  plane is below quota, else replaces a floor-kept bad EV of its plane, else, if no EV of the
  rotation is on its path while another path carries two, takes one of those two slots (the
  displaced EV becomes a backup), else joins the backups.
* Plane availability: local NIC port down, or the peer's port-status bitmap lacking plane p, takes
  every EV of that plane out of use (states unchanged, they return when the plane comes back).
* DENIED is set only from outside (controller denylist: `deny`/`allow`, or `apply_denylist`
  with the endpoint's rules); denied EVs leave the rotation, are never picked, backed up or
  probed; an allowed EV starts ASSUMED_BAD and must earn GOOD through probes.

Every state change and skip is reported through `emit(event_dict)` using the project's event log
schema (ev_state, ev_skip, ev_suspect, ev_cleared, probe); the caller adds "host".
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

from model.events import Event
from model.topology import random_entropy, ev_spine, make_ev
from traffic.core.ev_probes import EVProbeSchedule, _PendingProbe

GOOD = "GOOD"
ASSUMED_BAD = "ASSUMED_BAD"
DENIED = "DENIED"
UNKNOWN = "UNKNOWN"
EV_STATES = (GOOD, ASSUMED_BAD, DENIED, UNKNOWN)


@dataclass(frozen=True)
class PathInfo:
    """What the sender needs to know about the fabric to build EVs: which planes, how many spines."""

    planes: tuple[int, ...]
    spines: int

    def __post_init__(self) -> None:
        if not self.planes:
            raise ValueError("PathInfo.planes must list at least one plane")
        if self.spines < 1:
            raise ValueError(f"PathInfo.spines must be >= 1, got {self.spines}")

    @classmethod
    def from_topology(cls, topo) -> "PathInfo":
        """Every plane and spine of an model.topology.Topology (all planes reach every host)."""
        return cls(planes=tuple(range(topo.spec.planes)), spines=topo.spec.spines)


# An ECN mark within this many first skips after an EV's skip ended (or within that skip's
# length, or the caller's memory_ns, if longer) counts as the same congestion: the next skip
# doubles (EVSet.skip).
SKIP_MEMORY = 4


@dataclass
class EVInfo:
    ev: int
    plane: int
    spine: int
    state: str = UNKNOWN
    in_rotation: bool = False
    skip_until: int = 0           # ECN echo: pass over until this time
    skip_len: int = 0             # length of the latest ECN skip (doubles while marks persist)
    skip_once: bool = False       # trimmed NACK: pass over on the next turn
    suspended: bool = False       # a loss awaits its verdict (sender's loss_verdict_ns)
    probe_successes: int = 0
    probe_failures: int = 0       # consecutive failed probes: the period backs off with them
    next_probe_ns: int = 0


def default_ev_count(spines: int, planes: int, evs_per_path: int) -> int:
    """A QP's active EVs when no count is given: evs_per_path on each (plane, spine) path."""
    return spines * planes * evs_per_path


class EVSet(EVProbeSchedule):
    """The EVs of one sender QP, their states, the round robin and the probe schedule."""

    def __init__(self, paths: PathInfo, rng: random.Random, *, qp: int = 0,
                 ev_count: int | None = None, backup_count: int | None = None,
                 min_active: int | None = None, evs_per_path: int = 1,
                 probe_period_ns: int = 5_000_000, probe_timeout_ns: int = 4_000_000,
                 probe_k: int = 3, probe_backoff_max: int = 8,
                 pin_spine: int | None = None, pin_count: int = 0,
                 emit: Callable[[dict], None] | None = None):
        planes = list(paths.planes)
        if ev_count is None:
            ev_count = default_ev_count(paths.spines, len(planes), evs_per_path)
        if backup_count is None:
            backup_count = default_ev_count(paths.spines, len(planes), evs_per_path)
        per_plane = ev_count // len(planes)
        if per_plane < 1:
            raise ValueError(f"ev_count {ev_count} is smaller than the number of planes {len(planes)}")
        self.pin_spine, self.pin_count = pin_spine, pin_count
        start_spines = self._start_spines(paths, per_plane, pin_spine, pin_count)
        if probe_k < 1:
            raise ValueError(f"probe_k must be >= 1, got {probe_k}")
        self.qp = qp
        self.paths = paths
        self.rng = rng
        self.emit = emit or (lambda event: None)
        self.quota = per_plane                      # rotation slots per plane
        self.min_active = ev_count // 4 if min_active is None else min_active
        self.probe_period_ns = int(probe_period_ns)
        self.probe_timeout_ns = int(probe_timeout_ns)
        self.probe_k = probe_k
        # A path that stays dead (a link down for seconds) is probed ever less often: after the
        # n-th consecutive failed probe the next one waits (min(2^n, probe_backoff_max) - 1) base
        # periods from the failure; a success resets it. Without it, every dead EV of every QP
        # is probed each period: thousands of probes/s per host, CPU the surviving paths need.
        if probe_backoff_max < 1:
            raise ValueError(f"probe_backoff_max must be >= 1, got {probe_backoff_max}")
        self.probe_backoff_max = int(probe_backoff_max)
        self.evs: dict[int, EVInfo] = {}
        self._bad: dict[int, EVInfo] = {}           # the ASSUMED_BAD ones (probed), kept by _set_state
        self.backups: dict[int, list[int]] = {p: [] for p in planes}
        self.plane_local_up = {p: True for p in planes}
        self.plane_peer_up = {p: True for p in planes}
        self._used_entropy: set[int] = set()
        per_plane_lists = {}
        for p in planes:
            first = rng.randrange(paths.spines)
            per_plane_lists[p] = [
                self._new_ev(p, GOOD, (first + i) % paths.spines if spine is None else spine)
                for i, spine in enumerate(start_spines)]
            # backups start on the spines after the actives', in the same turn
            for i in range(backup_count // len(planes)):
                self.backups[p].append(
                    self._new_ev(p, UNKNOWN, (first + per_plane + i) % paths.spines))
        # Interleave planes so consecutive packets alternate planes.
        self.rotation: list[int] = []
        for i in range(per_plane):
            for p in planes:
                ev = per_plane_lists[p][i]
                self.rotation.append(ev)
                self.evs[ev].in_rotation = True
        self._rr_plane = {p: 0 for p in planes}     # per plane: rotation index to look from
        self._next_plane = 0                          # index into paths.planes: whose turn
        self._probe_seq = 0
        self.pending_probes: dict[int, _PendingProbe] = {}

    # ------------------------------------------------------------------ construction

    @staticmethod
    def _start_spines(paths: PathInfo, per_plane: int, pin_spine: int | None,
                      pin_count: int) -> list[int | None]:
        """Spine of each active EV of a plane at start, in rotation order (None: at random).
        Pinned: `pin_count` on pin_spine, the others on the other spines in turn, spread
        evenly through the rotation so the unpinned paths are not used in bursts."""
        if pin_spine is None:
            if pin_count:
                raise ValueError(f"EV pinning: pin_count {pin_count} needs a pin_spine")
            return [None] * per_plane
        if not 0 <= pin_spine < paths.spines:
            raise ValueError(f"EV pinning: pin_spine {pin_spine} is not a spine of this fabric "
                             f"(0..{paths.spines - 1})")
        if not 1 <= pin_count <= per_plane:
            raise ValueError(f"EV pinning: pin_count must be 1..{per_plane} (the active EVs per "
                             f"plane), got {pin_count}")
        others = [s for s in range(paths.spines) if s != pin_spine]
        if pin_count < per_plane and not others:
            raise ValueError(f"EV pinning: {per_plane - pin_count} unpinned EVs per plane need a "
                             f"second spine, the fabric has one")
        spines: list[int | None] = []
        unpinned = 0
        for i in range(per_plane):
            # the i-th slot is unpinned when the unpinned share up to it grows past a whole EV
            if (i + 1) * (per_plane - pin_count) // per_plane > unpinned:
                spines.append(others[unpinned % len(others)])
                unpinned += 1
            else:
                spines.append(pin_spine)
        return spines

    def _new_ev(self, plane: int, state: str, spine: int | None = None) -> int:
        while True:
            entropy = random_entropy(self.rng)
            if entropy not in self._used_entropy:
                break
        self._used_entropy.add(entropy)
        if spine is None:
            spine = self.rng.randrange(self.paths.spines)
        ev = make_ev(plane, spine, entropy)
        self.evs[ev] = EVInfo(ev=ev, plane=plane, spine=ev_spine(ev), state=state)
        return ev

    # ------------------------------------------------------------------ queries

    def plane_usable(self, plane: int) -> bool:
        return self.plane_local_up.get(plane, False) and self.plane_peer_up.get(plane, False)

    def state(self, ev: int) -> str:
        return self.evs[ev].state

    def active(self) -> list[int]:
        """EVs in the rotation on usable planes (what the round robin may pick)."""
        return [ev for ev in self.rotation if self.plane_usable(self.evs[ev].plane)]

    def active_good_count(self) -> int:
        return sum(1 for ev in self.rotation
                   if self.evs[ev].state == GOOD and self.plane_usable(self.evs[ev].plane))

    def bad(self) -> list[int]:
        return list(self._bad)

    def usable_planes(self) -> list[int]:
        """Planes the round robin can send on: usable, with an EV in the rotation (a plane whose
        EVs are all denied has none, and its idle pacer must not look like a reason to retry)."""
        in_rotation = {self.evs[ev].plane for ev in self.rotation}
        return [p for p in self.paths.planes if self.plane_usable(p) and p in in_rotation]

    # ------------------------------------------------------------------ selection

    def pick(self, now_ns: int, exclude: int | None = None,
             plane_ok: Callable[[int], bool] | None = None,
             allow: Callable[[int], bool] | None = None) -> int | None:
        """Next EV for a packet sent now, or None if no plane can take one.

        Planes take turns (p0, p1, p0, ...), and each plane walks its own EVs round robin. Each
        plane is its own NIC port with its own line rate, so the split between planes must not
        follow how many EVs each plane has left: after a failure retired EVs of one plane
        (backups used up), a single round robin over all EV slots would send that plane fewer
        packets and overload the other plane's port.
        Preference: the first plane in turn with a GOOD EV that is not skipped or suspended;
        else the first passed-over EV of the best kind (skipped, then suspended, then not GOOD;
        among skipped ones, the one whose skip ends first),
        never `exclude`. `plane_ok(plane)` lets the caller refuse planes whose pacer has no
        tokens; `allow(ev)` refuses EVs outright (the sender keeps retransmissions off EVs with
        an unexplained loss). Skip-once flags are consumed here.
        """
        n = len(self.rotation)
        if n == 0:
            return None
        planes = self.paths.planes
        # Plane checks once per call, not once per EV: pick runs for every packet, and checking
        # per EV would scan the whole rotation while the pacer holds a plane back.
        order = [planes[(self._next_plane + i) % len(planes)] for i in range(len(planes))]
        order = [p for p in order if self.plane_usable(p) and (plane_ok is None or plane_ok(p))]
        if not order:
            return None
        # Passed-over EVs, best first: 0 skipped (congestion) < 1 suspended (a loss awaits its
        # verdict) < 2 not GOOD (kept in the rotation by the min_active floor).
        fallback = None
        fallback_rank = 3
        fallback_until = 0
        for plane in order:
            start = self._rr_plane.get(plane, 0)
            for i in range(n):
                idx = (start + i) % n
                ev = self.rotation[idx]
                info = self.evs[ev]
                if info.plane != plane or ev == exclude or info.state == DENIED:
                    continue
                if allow is not None and not allow(ev):
                    continue
                if info.state != GOOD:
                    rank = 2
                elif info.suspended:
                    rank = 1
                elif info.skip_once:
                    info.skip_once = False
                    rank = 0
                elif info.skip_until > now_ns:
                    rank = 0
                else:
                    return self._picked(plane, idx)
                if rank < fallback_rank or (rank == 0 == fallback_rank
                                            and info.skip_until < fallback_until):
                    # among skipped EVs, the one whose skip ends first: the least congested
                    # by its backoff (a persistently marked path has the longest skips)
                    fallback, fallback_rank, fallback_until = (plane, idx), rank, info.skip_until
        if fallback is not None:
            return self._picked(*fallback)
        return None

    def _picked(self, plane: int, idx: int) -> int:
        self._rr_plane[plane] = idx + 1
        planes = self.paths.planes
        self._next_plane = (planes.index(plane) + 1) % len(planes)
        return self.rotation[idx]

    # ------------------------------------------------------------------ signals

    def _set_state(self, info: EVInfo, new: str, reason: str, now_ns: int, **extra) -> None:
        old = info.state
        if old == new:
            return
        info.state = new
        if new == ASSUMED_BAD:
            self._bad[info.ev] = info
        elif old == ASSUMED_BAD:
            self._bad.pop(info.ev, None)
        event = {"t_ns": now_ns, "event": Event.EV_STATE, "qp": self.qp, "ev": info.ev,
                 "plane": info.plane, "old": old, "new": new, "reason": reason}
        event.update(extra)
        self.emit(event)

    def skip(self, ev: int, until_ns: int, now_ns: int, backoff_max: int = 1,
             memory_ns: int = 0) -> None:
        """ECN echo: keep the EV, pass over it on its next turn (OCP's SACK M field: "skip
        once") and until `until_ns`. A time alone did nothing when the EV's next turn came
        after it: a round robin of 8 EVs at 20 Mbit/s takes ~5 ms, as long as the default skip
        of 2 base RTTs, so an echo arriving a round trip after the marked packet often ran out
        before the EV came up again. An echo for an EV whose skip ended recently (module
        docstring, or within `memory_ns`: the sender's round trips under load, as the mark of
        the first packet after a skip comes back a loaded round trip later) doubles the skip,
        up to `backoff_max` times `until_ns - now_ns`; echoes while it is skipped only extend
        it to `until_ns`."""
        info = self.evs.get(ev)
        if info is None:
            return
        info.skip_once = True
        first = until_ns - now_ns
        if info.skip_until <= now_ns and first > 0:
            recent = info.skip_len and now_ns - info.skip_until <= max(
                info.skip_len, SKIP_MEMORY * first, memory_ns)
            info.skip_len = min(2 * info.skip_len, backoff_max * first) if recent else first
            info.skip_until = now_ns + max(info.skip_len, first)
        else:
            info.skip_until = max(info.skip_until, until_ns)
        self.emit({"t_ns": now_ns, "event": Event.EV_SKIP, "qp": self.qp, "ev": ev,
                   "plane": info.plane, "until_ns": info.skip_until})

    def skip_next_turn(self, ev: int, now_ns: int) -> None:
        """Trimmed NACK: congestion, not failure: pass over the EV once, never retire it."""
        info = self.evs.get(ev)
        if info is None:
            return
        info.skip_once = True
        self.emit({"t_ns": now_ns, "event": Event.EV_SKIP, "qp": self.qp, "ev": ev,
                   "plane": info.plane, "until_ns": now_ns, "once": True})

    def suspend(self, ev: int, reason: str, now_ns: int) -> None:
        """A loss on `ev` awaits its verdict: the EV leaves the rotation at once and a same-plane
        backup takes its slot, as for a retirement, but its state stays GOOD until `unsuspend`
        (the loss was congestion after all: it returns to use) or `mark_lost` (it was not).
        Replacing only at the verdict would make a failure cost one verdict window per wave of
        replacements that land on the dead path again. Without a backup the EV keeps its slot
        and is passed over."""
        info = self.evs.get(ev)
        if info is None or info.state != GOOD or info.suspended:
            return
        info.suspended = True
        self.emit({"t_ns": now_ns, "event": Event.EV_SUSPECT, "qp": self.qp, "ev": ev,
                   "plane": info.plane, "reason": reason})
        if info.in_rotation:
            backup = self._take_backup(info.plane, info.spine)
            if backup is not None:
                self._put_in_slot(self.rotation.index(ev), backup, now_ns, reason="replacement",
                                  replaces=ev)

    def unsuspend(self, ev: int, evidence: str, now_ns: int) -> None:
        info = self.evs.get(ev)
        if info is None or not info.suspended:
            return
        info.suspended = False
        self.emit({"t_ns": now_ns, "event": Event.EV_CLEARED, "qp": self.qp, "ev": ev,
                   "plane": info.plane, "evidence": evidence})
        if not info.in_rotation and info.state == GOOD:
            self._return_to_use(info, now_ns)

    def mark_lost(self, ev: int, reason: str, now_ns: int) -> int | None:
        """Loss without trim on `ev`: ASSUMED_BAD now, same-plane backup takes its slot.

        Returns the replacement EV (None if none was put in its place).
        """
        info = self.evs.get(ev)
        if info is None or info.state != GOOD:
            return None
        info.suspended = False
        self._set_state(info, ASSUMED_BAD, reason, now_ns)
        info.probe_successes = 0
        info.next_probe_ns = now_ns + self.probe_period_ns
        if not info.in_rotation:
            return None
        slot = self.rotation.index(ev)
        backup = self._take_backup(info.plane, info.spine)
        if backup is not None:
            self._put_in_slot(slot, backup, now_ns, reason="replacement", replaces=ev)
            return backup
        if self.active_good_count() >= self.min_active:
            self.rotation.pop(slot)
            info.in_rotation = False
            for p, pos in self._rr_plane.items():
                if pos > slot:
                    self._rr_plane[p] = pos - 1
        # else: floor reached: the EV stays in the rotation (see module docstring).
        return None

    def _take_backup(self, plane: int, lost_spine: int | None = None) -> int | None:
        """The first usable backup of `plane` on a path (spine) with no EV suspended or assumed
        bad, else the first not on `lost_spine`, else the first."""
        pool = self.backups.get(plane, [])
        pool[:] = [ev for ev in pool if self.evs[ev].state in (GOOD, UNKNOWN)]
        if not pool:
            return None
        doubtful = {i.spine for i in self.evs.values()
                    if i.plane == plane and (i.suspended or i.state == ASSUMED_BAD)}
        doubtful.add(lost_spine)
        for avoid in (doubtful, {lost_spine}, set()):
            for k, ev in enumerate(pool):
                if self.evs[ev].spine not in avoid:
                    return pool.pop(k)
        return None

    def _put_in_slot(self, slot: int, ev: int, now_ns: int, reason: str, replaces: int) -> None:
        old = self.rotation[slot]
        self.evs[old].in_rotation = False
        self.rotation[slot] = ev
        info = self.evs[ev]
        info.in_rotation = True
        info.skip_until = 0
        info.skip_len = 0
        info.skip_once = False
        info.suspended = False
        if info.state == GOOD and reason == "replacement":
            # A GOOD backup changes no state, but the log must still show which slot it took:
            # the analysis follows replacements. (An EV probed back has just logged its return
            # to GOOD.)
            self.emit({"t_ns": now_ns, "event": Event.EV_STATE, "qp": self.qp, "ev": ev,
                       "plane": info.plane, "old": GOOD, "new": GOOD, "reason": reason,
                       "replaces": replaces})
        else:
            self._set_state(info, GOOD, reason, now_ns, replaces=replaces)

    def _resurrect(self, info: EVInfo, now_ns: int) -> None:
        self._set_state(info, GOOD, "probe_ok", now_ns)
        if info.in_rotation:
            return
        self._return_to_use(info, now_ns)

    def _return_to_use(self, info: EVInfo, now_ns: int) -> None:
        """A GOOD EV out of the rotation (probed back, or cleared by its loss verdict): refill
        its plane's rotation if below quota, else replace a floor-kept bad EV of its plane, else
        join the backups."""
        in_plane = [i for i, ev in enumerate(self.rotation) if self.evs[ev].plane == info.plane]
        if len(in_plane) < self.quota:
            self.rotation.append(info.ev)
            info.in_rotation = True
            return
        for slot in in_plane:
            if self.evs[self.rotation[slot]].state == ASSUMED_BAD:
                self._put_in_slot(slot, info.ev, now_ns, reason="probe_ok",
                                  replaces=self.rotation[slot])
                return
        # Its path carries no EV of the rotation while another path carries two (a replacement
        # doubled up there): it takes that slot back, the displaced EV becomes a backup again.
        spines = [self.evs[self.rotation[slot]].spine for slot in in_plane]
        if info.spine not in spines:
            for slot, spine in zip(in_plane, spines):
                if spines.count(spine) > 1:
                    displaced = self.evs[self.rotation[slot]]
                    self._put_in_slot(slot, info.ev, now_ns, reason="probe_ok",
                                      replaces=displaced.ev)
                    self.backups[info.plane].append(displaced.ev)
                    return
        if info.ev not in self.backups[info.plane]:
            self.backups[info.plane].append(info.ev)

    def deny(self, ev: int, now_ns: int) -> None:
        """Controller denylist: never use or probe this EV until `allow`. It leaves the rotation
        at once; a same-plane backup that is not denied takes its slot if there is one."""
        info = self.evs[ev]
        if info.state == DENIED:
            return
        self._set_state(info, DENIED, "denied", now_ns)
        info.suspended = False
        info.probe_successes = 0
        for seq in [s for s, p in self.pending_probes.items() if p.ev == ev]:
            del self.pending_probes[seq]
        if info.in_rotation:
            slot = self.rotation.index(ev)
            backup = self._take_backup(info.plane)
            if backup is not None:
                self._put_in_slot(slot, backup, now_ns, reason="replacement", replaces=ev)
            else:
                self.rotation.pop(slot)
                info.in_rotation = False
                for p, pos in self._rr_plane.items():
                    if pos > slot:
                        self._rr_plane[p] = pos - 1

    def allow(self, ev: int, now_ns: int) -> None:
        """Lift a denial: the EV is treated like a failed one and must earn GOOD through probes."""
        info = self.evs[ev]
        if info.state == DENIED:
            self._set_state(info, ASSUMED_BAD, "allowed", now_ns)
            info.probe_successes = 0
            info.probe_failures = 0
            info.next_probe_ns = now_ns

    def apply_denylist(self, denied: Callable[[int], bool], now_ns: int) -> tuple[int, int]:
        """Make the DENIED set equal to the EVs `denied(ev)` names: deny the new ones, allow the
        ones no longer named. Returns (newly denied, newly allowed). EVs out of the rotation are
        denied first, so a denied rotation EV is never replaced by one about to be denied."""
        hits = {ev for ev in self.evs if denied(ev)}
        order = sorted(hits, key=lambda ev: self.evs[ev].in_rotation)
        newly_denied = 0
        for ev in order:
            if self.evs[ev].state != DENIED:
                self.deny(ev, now_ns)
                newly_denied += 1
        newly_allowed = 0
        for ev, info in self.evs.items():
            if info.state == DENIED and ev not in hits:
                self.allow(ev, now_ns)
                newly_allowed += 1
        return newly_denied, newly_allowed

    def denied(self) -> list[int]:
        return [ev for ev, info in self.evs.items() if info.state == DENIED]

    # ------------------------------------------------------------------ planes

    def set_plane_local(self, plane: int, up: bool) -> bool:
        """Local NIC port state; returns True if it changed."""
        if plane not in self.plane_local_up or self.plane_local_up[plane] == up:
            return False
        self.plane_local_up[plane] = up
        return True

    def set_plane_peer(self, plane: int, up: bool) -> bool:
        if plane not in self.plane_peer_up or self.plane_peer_up[plane] == up:
            return False
        self.plane_peer_up[plane] = up
        return True

    # ------------------------------------------------------------------ probes

    def _probe_result(self, ev: int, ok: bool, rtt_ns: int | None, now_ns: int) -> None:
        info = self.evs[ev]
        self.emit({"t_ns": now_ns, "event": Event.PROBE, "qp": self.qp, "ev": ev, "ok": ok,
                   "rtt_ns": rtt_ns})
        if info.state != ASSUMED_BAD:
            return
        if not ok:
            info.probe_successes = 0
            info.probe_failures += 1
            backoff = min(1 << min(info.probe_failures, 30), self.probe_backoff_max)
            info.next_probe_ns = max(info.next_probe_ns, now_ns + self.probe_period_ns * (backoff - 1))
            return
        info.probe_failures = 0
        info.probe_successes += 1
        if info.probe_successes >= self.probe_k:
            info.probe_successes = 0
            self._resurrect(info, now_ns)


__all__ = ["EVSet", "EVInfo", "PathInfo", "GOOD", "ASSUMED_BAD", "DENIED", "UNKNOWN",
           "EV_STATES"]

