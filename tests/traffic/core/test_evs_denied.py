"""DENIED in the EV set (traffic/core/evs.py): a denied EV leaves the rotation, is never picked, backed
up or probed; allowed again it must earn GOOD through probe_k probes (fake clock)."""
import random

import pytest

from model.events import Event
from model.topology import ev_plane, ev_spine
from traffic.core.evs import ASSUMED_BAD, DENIED, GOOD, EVSet, PathInfo

pytestmark = pytest.mark.core

MS = 1_000_000


def evset(**kw):
    return EVSet(PathInfo(planes=(0, 1), spines=2), random.Random(3), ev_count=16,
                 backup_count=8, probe_period_ns=5 * MS, probe_k=2, **kw)


def on_p0_s0(s):
    return lambda ev: ev_plane(ev) == 0 and ev_spine(ev) == 0


def test_denied_evs_are_never_picked_and_their_slots_go_to_allowed_backups():
    events = []
    s = evset(emit=events.append)
    target = [ev for ev in s.evs if ev_plane(ev) == 0 and ev_spine(ev) == 0]
    assert target                                  # the seed puts some on plane 0 spine 0
    denied, allowed = s.apply_denylist(on_p0_s0(s), 0)
    assert (denied, allowed) == (len(target), 0)
    assert sorted(s.denied()) == sorted(target)
    assert all(s.state(ev) == DENIED for ev in target)
    assert not set(target) & set(s.rotation)
    picks = [s.pick(t * 1000) for t in range(200)]
    assert None not in picks and not set(target) & set(picks)
    assert {ev_plane(ev) for ev in picks} == {0, 1}     # plane 0 still carries traffic (spine 1)
    # every denial is an ev_state event with new = DENIED (what the EV figure draws)
    assert sorted(e["ev"] for e in events if e["event"] == Event.EV_STATE and e["new"] == DENIED) \
        == sorted(target)


def test_a_denied_bad_ev_is_not_probed_until_allowed_then_earns_good():
    events = []
    s = evset(emit=events.append)
    ev = next(e for e in s.rotation if ev_plane(e) == 0 and ev_spine(e) == 0)
    s.mark_lost(ev, "timeout", 0)
    assert s.state(ev) == ASSUMED_BAD
    assert [e for e, _ in s.due_probes(5 * MS)] == [ev]          # probed while ASSUMED_BAD
    s.apply_denylist(lambda e: e == ev, 6 * MS)
    assert s.state(ev) == DENIED and not s.pending_probes          # its probe is forgotten
    for t in range(7, 200, 5):
        s.expire_probes(t * MS)
        assert s.due_probes(t * MS) == []
    assert s.next_probe_deadline() is None
    assert [e["new"] for e in events if e["event"] == Event.EV_STATE and e["ev"] == ev] == \
        [ASSUMED_BAD, DENIED]
    # allowed: ASSUMED_BAD, probed at once, GOOD after probe_k = 2 answered probes
    assert s.apply_denylist(lambda e: False, 200 * MS) == (0, 1)
    assert s.state(ev) == ASSUMED_BAD
    ((probed, seq),) = s.due_probes(200 * MS)
    assert probed == ev
    s.probe_response(seq, ev, 201 * MS)
    ((_, seq),) = s.due_probes(206 * MS)
    s.probe_response(seq, ev, 207 * MS)
    assert s.state(ev) == GOOD


def test_a_plane_with_every_ev_denied_sends_on_the_other_plane_only():
    s = evset()
    s.apply_denylist(lambda e: ev_plane(e) == 0, 0)
    assert all(ev_plane(ev) == 1 for ev in s.rotation)
    assert {ev_plane(s.pick(t)) for t in range(50)} == {1}
    assert s.apply_denylist(lambda e: ev_plane(e) == 0, 1) == (0, 0)   # idempotent


def test_a_plane_with_every_ev_denied_is_not_a_usable_plane():
    s = evset()
    assert s.usable_planes() == [0, 1]
    s.apply_denylist(lambda e: ev_plane(e) == 0, 0)
    assert s.usable_planes() == [1]
