"""Where not to retransmit: the losses a QP's sender has not explained yet, per EV and per
(plane, spine) path (UnexplainedLosses), and MRCConfig.suspend_siblings' suspicion of a whole
path after a loss (SuspectPaths).

Apart from traffic/core/sender.py because it is the sender's memory of holes in the fabric, not its
send path: the sender reports losses and deliveries here and asks which EVs and paths are
suspect. Pure; compiled with the sender (traffic/compiled.py).
"""
from __future__ import annotations

from traffic.core.evs import GOOD, EVSet


class UnexplainedLosses:
    """Where not to retransmit: per key (an EV, or a (plane, spine) path) the send time of the
    newest transmission lost on it without trim, and of the newest delivered one. A key whose
    newest loss is later than its newest delivery has an outstanding loss (is suspect)."""

    __slots__ = ("lost_sent", "delivered_sent")

    def __init__(self) -> None:
        self.lost_sent: dict = {}
        self.delivered_sent: dict = {}

    def lost(self, keys, sent_ns: int) -> None:
        lost_sent = self.lost_sent
        for key in keys:
            if sent_ns > lost_sent.get(key, -1):
                lost_sent[key] = sent_ns

    def delivered(self, ev: int, path, sent_ns: int) -> None:
        """A transmission on `ev` (and `path`, None if unknown) sent at sent_ns arrived (or its
        loss was explained)."""
        delivered_sent = self.delivered_sent
        if sent_ns > delivered_sent.get(ev, -1):
            delivered_sent[ev] = sent_ns
        if path is not None and sent_ns > delivered_sent.get(path, -1):
            delivered_sent[path] = sent_ns

    def suspect(self, key) -> bool:
        lost = self.lost_sent.get(key)
        return lost is not None and self.delivered_sent.get(key, -1) < lost


class SuspectPaths:
    """MRCConfig.suspend_siblings: a (plane, spine) path whose EV lost a packet the loss policy
    holds against it is suspected as a whole. Its other EVs are suspended (EVSet.suspend:
    out of the rotation, a backup from another path takes the slot, state stays GOOD) and its
    backups are held out of the plane's pool, so no replacement lands on it. The suspicion
    ends when an EV of the path is probed back to GOOD (the path works again), or when the
    path's unexplained losses are explained or followed by a delivery (UnexplainedLosses):
    the held backups return to the pool and the suspended siblings to use."""

    def __init__(self, evs: EVSet, unexplained: UnexplainedLosses):
        self.evs = evs
        self.unexplained = unexplained
        self.paths: dict[tuple[int, int], set[int]] = {}    # path -> siblings suspended
        self._held: dict[tuple[int, int], list[int]] = {}    # path -> backups held back

    def suspect(self, ev: int, now_ns: int) -> None:
        info = self.evs.evs.get(ev)
        if info is None:
            return
        path = (info.plane, info.spine)
        suspended = self.paths.setdefault(path, set())
        pool = self.evs.backups.get(info.plane, [])
        held = [b for b in pool if self.evs.evs[b].spine == info.spine]
        if held:
            pool[:] = [b for b in pool if self.evs.evs[b].spine != info.spine]
            self._held.setdefault(path, []).extend(held)
        for sib in list(self.evs.evs.values()):
            if (sib.ev != ev and sib.plane == info.plane and sib.spine == info.spine
                    and sib.state == GOOD and not sib.suspended):
                self.evs.suspend(sib.ev, "sibling_loss", now_ns)
                suspended.add(sib.ev)

    def probed_good(self, ev: int, now_ns: int, pending) -> None:
        """A probe answer for `ev`: if it brought the EV back to GOOD its path works."""
        info = self.evs.evs.get(ev)
        if info is not None and info.state == GOOD and (info.plane, info.spine) in self.paths:
            self._clear((info.plane, info.spine), now_ns, pending)

    def clear_delivered(self, now_ns: int, pending) -> None:
        """Paths whose every unexplained loss was explained or followed by a delivery."""
        for path in [p for p in self.paths if not self.unexplained.suspect(p)]:
            self._clear(path, now_ns, pending)

    def _clear(self, path: tuple[int, int], now_ns: int, pending) -> None:
        suspended = self.paths.pop(path)
        self.evs.backups[path[0]].extend(self._held.pop(path, ()))
        # a sibling with a loss verdict of its own still open stays suspended until it ends
        own_verdict = {ev for ev, _ in pending}
        for ev in sorted(suspended):
            if ev not in own_verdict:
                self.evs.unsuspend(ev, "path_clear", now_ns)
