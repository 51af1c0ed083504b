"""The probe schedule of an EV set: which probes of ASSUMED_BAD EVs are out, which are due, when
the next one is, and which answers and timeouts settle them.

Apart from traffic/core/evs.py because it is bookkeeping of probes in flight, beside the EV states
and the round robin: what a settled probe does to its EV (`_probe_result`: back off, or earn
GOOD) stays with the states in EVSet. A mixin of EVSet: it uses the set's `_bad`, `evs`,
`plane_usable`, `probe_period_ns` and `probe_timeout_ns`, set by EVSet.__init__. Pure;
compiled with the sender (traffic/compiled.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from traffic.core.messages import PROBE_ID_MASK


@dataclass
class _PendingProbe:
    ev: int
    sent_ns: int


class EVProbeSchedule:
    """Probes in flight of an EVSet (mixed into it; see the module docstring)."""

    def due_probes(self, now_ns: int) -> list[tuple[int, int]]:
        """(ev, seq) of probes to send now: one per ASSUMED_BAD EV whose period elapsed."""
        out = []
        probing = {p.ev for p in self.pending_probes.values()}
        for info in list(self._bad.values()):
            if (info.next_probe_ns <= now_ns
                    and info.ev not in probing and self.plane_usable(info.plane)):
                self._probe_seq = (self._probe_seq + 1) & PROBE_ID_MASK
                self.pending_probes[self._probe_seq] = _PendingProbe(info.ev, now_ns)
                info.next_probe_ns = now_ns + self.probe_period_ns
                out.append((info.ev, self._probe_seq))
        return out

    def probe_response(self, seq: int, ev: int, now_ns: int) -> bool:
        """A probe came back; returns False if it was unknown/stale."""
        pending = self.pending_probes.get(seq)
        if pending is None or pending.ev != ev:
            return False
        del self.pending_probes[seq]
        self._probe_result(pending.ev, True, now_ns - pending.sent_ns, now_ns)
        return True

    def expire_probes(self, now_ns: int) -> None:
        for seq, pending in list(self.pending_probes.items()):
            if now_ns - pending.sent_ns >= self.probe_timeout_ns:
                del self.pending_probes[seq]
                self._probe_result(pending.ev, False, None, now_ns)

    def next_probe_deadline(self) -> int | None:
        times = [p.sent_ns + self.probe_timeout_ns for p in self.pending_probes.values()]
        probing = {p.ev for p in self.pending_probes.values()}
        times += [i.next_probe_ns for i in self._bad.values()
                  if i.ev not in probing and self.plane_usable(i.plane)]
        return min(times) if times else None
