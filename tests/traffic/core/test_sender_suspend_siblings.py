"""MRCConfig.suspend_siblings: with SRv6 the sender knows each EV's (plane, spine) path from its
bits (emulation/topology.py), so one unexplained loss can take every EV of that path out of use,
instead of each of them losing a packet of its own first. Simulated network, fake clock: a
(plane 0, spine 0) path is black-holed while a transfer runs, later repaired."""

import pytest

from model.events import Event
from model.topology import ev_plane, ev_spine
from tests.helpers.simnet import Harness, SimNet, blackhole_step
from traffic.core.messages import DataPacket
from traffic.core.qp_config import MRCConfig

pytestmark = pytest.mark.core

MS = 1_000_000
DEAD = (0, 0)


def config(suspend_siblings: bool) -> MRCConfig:
    # 2 planes x 2 spines, 32 EVs per plane: about 16 of them (and 16 of the 32 backups of the
    # plane) cross the (p0, s0) path.
    return MRCConfig(ev_count=64, ev_backup_count=64, suspend_siblings=suspend_siblings)


class DataTap:
    """Records (time, path) of every data packet the sender puts on the wire."""

    def __init__(self, h: Harness):
        self.sent: list[tuple[int, tuple[int, int]]] = []
        poll = h.sender.poll

        def tapped(now_ns):
            out = poll(now_ns)
            for msg, _ in out:
                if isinstance(msg, DataPacket):
                    self.sent.append((now_ns, (ev_plane(msg.ev), ev_spine(msg.ev))))
            return out
        h.sender.poll = tapped

    def on_path(self, path, after_ns: int = -1) -> list[int]:
        return [t for t, p in self.sent if p == path and t > after_ns]


def blackhole_run(seed: int, suspend_siblings: bool, repair_after_ns: int | None = None,
                  size: int = 3_000_000, dead_backups_first: bool = False):
    """A transfer; (p0, s0) black-holed 10 ms in (and repaired `repair_after_ns` later).
    dead_backups_first: plane 0's backup pool lists the EVs on the dead path first, so every
    replacement drawn without regard to the path lands on it."""
    net = SimNet(seed=seed, planes=2, spines=2)
    h = Harness(net, cfg=config(suspend_siblings), seed=seed)
    if dead_backups_first:
        h.sender.evs.backups[0].sort(key=lambda ev: h.sender.evs.evs[ev].spine != DEAD[1])
    tap = DataTap(h)
    fault_ns = h.clock.now_ns + 10 * MS
    h.transfer([size], until_ns=20_000 * MS,
               on_step=blackhole_step(net, DEAD, fault_ns, repair_after_ns))
    return h, tap, fault_ns


def forward(h: Harness, name: str, **match) -> list[dict]:
    """The sender's events (the receiver's reverse EVs have events of the same names)."""
    return h.events_of(name, qp=h.sender.qp_num, **match)


def first_retirement_on(h: Harness, path) -> int:
    return min(e["t_ns"] for e in forward(h, Event.EV_STATE, new="ASSUMED_BAD")
               if (ev_plane(e["ev"]), ev_spine(e["ev"])) == path)


def test_after_the_first_unexplained_loss_on_a_path_nothing_more_is_sent_into_it():
    for seed, dead_first in ((1, False), (2, False), (3, True), (5, True)):
        h, tap, fault_ns = blackhole_run(seed, suspend_siblings=True,
                                         dead_backups_first=dead_first)
        first = first_retirement_on(h, DEAD)
        assert tap.on_path(DEAD, after_ns=fault_ns)          # the hole did swallow packets
        assert tap.on_path(DEAD, after_ns=first) == [], seed
        # no replacement is drawn from the suspected path
        assert [e for e in forward(h, Event.EV_STATE, reason="replacement")
                if e["t_ns"] >= first and (ev_plane(e["ev"]), ev_spine(e["ev"])) == DEAD] == []
        siblings = h.events_of(Event.EV_SUSPECT, reason="sibling_loss")
        assert siblings and all((ev_plane(e["ev"]), ev_spine(e["ev"])) == DEAD for e in siblings)


def test_without_the_option_each_ev_of_the_path_must_lose_its_own_packet():
    # The contrast that makes the test above meaningful: by default the siblings keep carrying
    # packets into the hole after the first loss, until each has lost one.
    late = 0
    for seed in (1, 2, 3):
        h, tap, _ = blackhole_run(seed, suspend_siblings=False)
        late += len(tap.on_path(DEAD, after_ns=first_retirement_on(h, DEAD)))
        assert not h.events_of(Event.EV_SUSPECT, reason="sibling_loss")
    assert late > 0


def test_the_suspicion_ends_when_the_repaired_path_is_probed_back():
    h, tap, fault_ns = blackhole_run(4, suspend_siblings=True, repair_after_ns=40 * MS,
                                     size=12_000_000)
    repaired_ns = fault_ns + 40 * MS
    suspended = {e["ev"] for e in h.events_of(Event.EV_SUSPECT, reason="sibling_loss")}
    cleared = {e["ev"] for e in h.events_of(Event.EV_CLEARED, evidence="path_clear")}
    assert suspended and cleared
    # every sibling suspended for the path returns, unless it was retired by a loss of its own
    retired = {e["ev"] for e in forward(h, Event.EV_STATE, new="ASSUMED_BAD")}
    assert suspended - retired <= cleared
    back = min(e["t_ns"] for e in h.events_of(Event.EV_CLEARED, evidence="path_clear"))
    assert back > repaired_ns
    # between the first loss and the path's return, nothing went into it
    first = first_retirement_on(h, DEAD)
    assert [t for t in tap.on_path(DEAD, after_ns=first) if t < back] == []
    # afterwards the path is available again: its siblings are GOOD and usable (the rotation
    # was refilled from the other spine meanwhile, so they wait as backups: EVSet's rule for
    # an EV back in use), and the backups held off the path are back in the pool
    evs = h.sender.evs
    on_dead = [i for i in evs.evs.values() if (i.plane, i.spine) == DEAD]
    assert not any(i.suspended for i in on_dead)
    assert {i.ev for i in on_dead if i.state == "GOOD"} >= suspended - retired
    assert any(evs.evs[b].spine == DEAD[1] for b in evs.backups[DEAD[0]])
    assert not h.sender.siblings.paths


def measure(seeds=range(1, 9)) -> dict:
    """Time from the fault to the last data packet sent into the dead path, and data packets
    sent into it (all lost), per setting and seed. Not a test: `python -m` this module."""
    out = {}
    for option in (False, True):
        rows = []
        for seed in seeds:
            h, tap, fault_ns = blackhole_run(seed, suspend_siblings=option)
            into = tap.on_path(DEAD, after_ns=fault_ns - 1)
            rows.append({"seed": seed, "last_into_dead_ms": (max(into) - fault_ns) / MS,
                         "lost": len(into)})
        out["suspend_siblings" if option else "default"] = rows
    return out


if __name__ == "__main__":
    import json
    result = measure()
    for name, rows in result.items():
        ms = [r["last_into_dead_ms"] for r in rows]
        lost = [r["lost"] for r in rows]
        print(name, json.dumps(rows))
        print(f"  {name}: last packet into the dead path {min(ms):.1f}-{max(ms):.1f} ms "
              f"(mean {sum(ms) / len(ms):.1f}) after the fault; lost {min(lost)}-{max(lost)} "
              f"(mean {sum(lost) / len(lost):.1f})")
