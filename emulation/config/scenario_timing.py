"""Whether a fault schedule lands inside the traffic at any time scale and for any transport,
from the link arithmetic alone, so a schedule that cannot fit is refused before a fabric starts.

The traffic cannot be faster than the links. Each timed iteration, every rank sends and
receives a fixed number of payload bytes (traffic/workload/collectives.py: bytes_moved,
bytes_received; a ring all-reduce moves 2 (n-1)/n of the message each way) through its NIC
ports, one per plane at [fabric] host_link_mbit. So an iteration lasts at least

    fastest_iteration_s = max over the ranks of max(sent, received) x 8
                          / (planes x host_link_mbit x 10^6)

(headers not counted: the real iteration is longer). These are times of the emulated world,
the one the file declares: a time scale stretches the wall clock and divides the link rates by
the same k, which leaves them unchanged.

The links' propagation delay ([fabric] host_link_delay_ms, fabric_link_delay_ms) is left out
of the bound on purpose: it lengthens the iterations of mrc and roce, whose endpoints hold every
frame for it, but kernel tcp gets none (model/propagation.py), and the bound must hold for every
transport. Left out, it keeps the bound a lower bound for all three; what the longer round trip
does change, a fixed wait for an answer that could expire before any answer comes, is refused
in emulation/config/scenario.py (_check_waits_cover_propagation).

Each entry is placed by an anchor, the start of a timed iteration (at_iteration = a; at_s
anchors on iteration 0, the timed start), plus an offset in seconds (its at_s, plus the after_s
of every entry chained after it; a flap adds its own span). Timed iteration a starts at least
a x fastest_iteration_s after the timed start, and from it the traffic lasts at least
(iterations - a) x fastest_iteration_s, however slow or fast the transport. An entry lands inside
the traffic for any transport at any k when it is due by the earliest the last timed iteration
can start: offset <= (iterations - 1 - a) x fastest_iteration_s. A clear comes after its fault
for sure when its anchor is not earlier and the iterations between the two anchors, at line
rate, plus its offset cover the fault's offset.
"""
from __future__ import annotations

from dataclasses import dataclass

from model import faults as fault_kinds
from model.topology import Topology
from traffic.workload.collectives import DTYPE, bytes_moved, bytes_received


@dataclass(frozen=True)
class Placement:
    """When an entry is due: `offset` seconds after timed iteration `anchor` starts; `span`:
    how long it lasts by itself (a flap's cycles), 0 for the others."""
    anchor: int
    offset: float
    span: float = 0.0


@dataclass(frozen=True)
class TrafficBound:
    """The link arithmetic of one scenario: the most payload bytes any rank sends or receives
    per timed iteration, and the shortest an iteration and the timed traffic can last."""
    iterations: int
    bytes_per_iteration: int
    planes: int
    host_link_mbit: float

    @property
    def iteration_s(self) -> float:
        return self.bytes_per_iteration * 8 / (self.planes * self.host_link_mbit * 1e6)

    @property
    def traffic_s(self) -> float:
        return self.iterations * self.iteration_s

    def latest_offset_s(self, anchor: int) -> float:
        """The largest offset after timed iteration `anchor` that is sure to come before the
        last timed iteration starts, whatever the transport and the time scale."""
        return max(0, self.iterations - 1 - anchor) * self.iteration_s

    def how(self) -> str:
        """The arithmetic in words, for error messages."""
        return (f"each rank moves {self.bytes_per_iteration:,} payload bytes an iteration over "
                f"{self.planes} x {self.host_link_mbit:g} Mbit/s: at least "
                f"{self.iteration_s:.4g} s an iteration")


def traffic_bound(coll, topo: Topology) -> TrafficBound:
    """The bound for a CollectiveSpec `coll` on `topo` (the emulated world's rates)."""
    hosts = [h.name for h in topo.hosts]
    n = coll.message_bytes // DTYPE().itemsize
    target = hosts.index(coll.incast_target) if coll.incast_target in hosts else 0
    victim = (tuple(hosts.index(v) for v in coll.victim)
              if coll.victim and all(v in hosts for v in coll.victim) else None)
    args = (coll.kind, n, len(hosts))
    most = max(max(bytes_moved(*args, r, target, victim, coll.victim_only),
                   bytes_received(*args, r, target, victim, coll.victim_only))
               for r in range(len(hosts)))
    return TrafficBound(coll.iterations, most, topo.spec.planes, topo.spec.host_link_mbit)


def own_span_s(entry) -> float:
    """How long an entry impairs its link by itself (a flap's cycles), seconds; 0 otherwise."""
    spans = [fault_kinds.own_window_ns(c) for c in entry.commands
             if fault_kinds.BY_ACTION[c["action"]].window == fault_kinds.WIN_OWN]
    return max(spans, default=0) / 1e9


def placements(entries: list) -> list[Placement]:
    """Each FaultEntry's placement: at_s is an offset from the timed start (iteration 0),
    at_iteration an anchor of its own, after_s adds to the entry before it in file order."""
    out: list[Placement] = []
    for e in entries:
        if e.at_s is not None:
            anchor, offset = 0, e.at_s
        elif e.at_iteration is not None:
            anchor, offset = e.at_iteration, 0.0
        else:
            anchor, offset = out[-1].anchor, out[-1].offset + e.after_s
        out.append(Placement(anchor, offset, own_span_s(e)))
    return out


def surely_after(clear: Placement, fault: Placement, iteration_s: float) -> bool:
    """Whether `clear` is due no earlier than `fault` however fast or slow the traffic runs."""
    if clear.anchor < fault.anchor:
        return False        # the iterations between them may take any time
    return (clear.anchor - fault.anchor) * iteration_s + clear.offset >= fault.offset


def misfit(place: Placement, bound: TrafficBound, key: str) -> str | None:
    """Why an entry placed at `place` may land after the traffic, or None when it cannot."""
    due = place.offset + place.span
    latest = bound.latest_offset_s(place.anchor)
    if due <= latest:
        return None
    start = "the timed start" if place.anchor == 0 else f"timed iteration {place.anchor} starts"
    what = (f"starts {place.offset:g} s after {start} and flaps for {place.span:g} s, until "
            f"{due:g} s after it" if place.span else f"is due {due:g} s after {start}")
    left = bound.iterations - place.anchor
    text = (f"{what}, but at line rate the traffic can end "
            f"{left * bound.iteration_s:.4g} s after that ({left} timed iterations; "
            f"{bound.how()}); to land inside the traffic at any time scale and for any "
            f"transport a fault must be due by the start of the last timed iteration, at most "
            f"{latest:.4g} s after {start}")
    if key == "at_s":
        return (f"{text}: place it by iteration instead (at_iteration = 0..."
                f"{bound.iterations - 1}: when a rank starts that timed iteration), or make the "
                f"traffic longer ([collective] iterations or message_bytes)")
    return (f"{text}: use a shorter after_s or period_s, an at_iteration, or make the traffic "
            f"longer ([collective] iterations or message_bytes)")
