"""EV set and path health (traffic/core/evs.py) in isolation, with explicit times."""
import random

import pytest

from model.events import Event
from model.topology import ev_plane
from tests.helpers.core_builders import make_evset as make
from traffic.core.evs import ASSUMED_BAD, DENIED, GOOD, UNKNOWN, EVSet, PathInfo

pytestmark = pytest.mark.core


def test_equal_per_plane_unique_and_interleaved():
    evs, _ = make(planes=4, ev_count=128, backup_count=32)
    planes = [ev_plane(ev) for ev in evs.rotation]
    assert len(evs.rotation) == 128
    assert all(planes.count(p) == 32 for p in range(4))
    assert planes[:4] == [0, 1, 2, 3]          # consecutive packets alternate planes
    assert len(set(ev & 0xFFFF for ev in evs.evs)) == len(evs.evs)  # unique entropy
    assert all(len(b) == 8 for b in evs.backups.values())
    assert all(evs.evs[ev].state == UNKNOWN for b in evs.backups.values() for ev in b)
    assert evs.min_active == 32                 # default ev_count / 4


def test_round_robin_visits_every_active_ev():
    evs, _ = make()
    picks = [evs.pick(0) for _ in range(len(evs.rotation))]
    assert sorted(picks) == sorted(evs.rotation)


def test_loss_marks_assumed_bad_at_once_and_same_plane_backup_replaces():
    evs, events = make()
    victim = evs.rotation[3]
    plane = ev_plane(victim)
    replacement = evs.mark_lost(victim, "timeout", 100)
    assert evs.state(victim) == ASSUMED_BAD
    assert replacement is not None and ev_plane(replacement) == plane
    assert evs.rotation[3] == replacement and evs.state(replacement) == GOOD
    assert victim not in evs.rotation
    changes = [(e["ev"], e["old"], e["new"], e["reason"]) for e in events
               if e["event"] == Event.EV_STATE]
    assert changes == [(victim, GOOD, ASSUMED_BAD, "timeout"),
                       (replacement, UNKNOWN, GOOD, "replacement")]
    assert all(evs.pick(200) != victim for _ in range(50))


def test_without_backup_slot_is_dropped_until_floor_then_kept():
    evs, events = make(ev_count=8, backup_count=0, min_active=6)
    victims = list(evs.rotation)
    for ev in victims[:2]:
        evs.mark_lost(ev, "sack_gap", 10)
    assert len(evs.rotation) == 6 and evs.active_good_count() == 6
    evs.mark_lost(victims[2], "sack_gap", 10)   # would leave 5 < floor: stays in rotation
    assert evs.state(victims[2]) == ASSUMED_BAD
    assert victims[2] in evs.rotation and len(evs.rotation) == 6
    # every path dead: the rotation never empties, so the QP keeps trying (until its retry limit)
    for ev in victims[3:]:
        evs.mark_lost(ev, "timeout", 10)
    assert len(evs.rotation) == 6 and evs.pick(20) is not None


def test_probes_resurrect_after_k_consecutive_successes_and_failure_resets():
    evs, events = make(k=3)
    victim = evs.rotation[0]
    evs.mark_lost(victim, "timeout", 0)
    t = 0
    results = [True, True, False, True, True, True]
    for i, ok in enumerate(results):
        t += 1000
        due = evs.due_probes(t)
        assert [ev for ev, _ in due] == [victim]
        seq = due[0][1]
        if ok:
            assert evs.probe_response(seq, victim, t + 10)
        else:
            evs.expire_probes(t + 600)
        if i < len(results) - 1:
            assert evs.state(victim) == ASSUMED_BAD
    assert evs.state(victim) == GOOD
    probes = [e["ok"] for e in events if e["event"] == Event.PROBE]
    assert probes == results
    # rotation was full (backup took the slot), so the resurrected EV waits in the backups
    assert victim in evs.backups[ev_plane(victim)]
    assert evs.due_probes(t + 10_000) == []


def test_failed_probes_back_off_up_to_the_limit_and_a_success_resets_it():
    evs, events = make(k=3, backoff=4)
    victim = evs.rotation[0]
    evs.mark_lost(victim, "timeout", 0)
    sent = []
    t = 0
    while t < 20_000:
        t += 100
        for ev, seq in evs.due_probes(t):
            sent.append(t)
            evs.expire_probes(t + 500)          # every probe fails
    gaps = [b - a for a, b in zip(sent, sent[1:])]
    # period 1000 ns, timeout 500: after the n-th failure (known at send + 500) the next probe
    # waits (min(2^n, 4) - 1) periods: 1000 after 1 failure, 3000 from then on (the cap)
    assert gaps[0] == 1500 and set(gaps[1:]) == {3500} and len(gaps) > 3, gaps
    # a success resets the backoff: the next probe comes one base period later
    t = sent[-1] + 3500
    (ev, seq), = evs.due_probes(t)
    assert evs.probe_response(seq, ev, t + 10)
    assert evs.due_probes(t + 999) == [] and len(evs.due_probes(t + 1000)) == 1


def test_resurrected_ev_replaces_floor_kept_bad_ev_of_its_plane():
    evs, _ = make(ev_count=4, backup_count=0, min_active=4, k=1)
    a = evs.rotation[0]
    b = evs.rotation[2]           # same plane as a (interleaved 0,1,0,1)
    assert ev_plane(a) == ev_plane(b)
    evs.mark_lost(a, "timeout", 0)   # floor: a stays in rotation as ASSUMED_BAD
    assert a in evs.rotation
    evs.mark_lost(b, "timeout", 0)
    (ev, seq), = [x for x in evs.due_probes(1000) if x[0] == a]
    evs.probe_response(seq, a, 1001)
    assert evs.state(a) == GOOD and a in evs.rotation and b in evs.rotation


def test_ecn_skip_keeps_state_and_expires():
    evs, events = make(ev_count=4, backup_count=0)
    target = evs.rotation[0]
    evs.skip(target, until_ns=5000, now_ns=0)
    assert evs.state(target) == GOOD
    assert all(evs.pick(100) != target for _ in range(12))
    assert target in [evs.pick(6000) for _ in range(4)]
    assert [e for e in events if e["event"] == Event.EV_SKIP][0]["until_ns"] == 5000


def test_skip_once_passes_over_exactly_once():
    """Planes take turns: the target's plane passes over it on its next turn (the plane's
    other EV goes) and takes it on the turn after."""
    evs, _ = make(ev_count=4, backup_count=0)
    target = evs.rotation[0]
    evs.skip_next_turn(target, 0)
    picks = [evs.pick(0) for _ in range(4)]
    same_plane = [ev for ev in picks if ev_plane(ev) == ev_plane(target)]
    assert same_plane[0] != target and same_plane[1] == target
    assert evs.state(target) == GOOD


def test_planes_take_turns_whatever_their_ev_count():
    """Each plane is its own NIC port: after one plane lost EVs for good (no backups left, slots
    dropped), it still gets every other packet, not a share by slot count."""
    evs, _ = make(planes=2, ev_count=16, backup_count=0)
    plane0 = [ev for ev in evs.rotation if ev_plane(ev) == 0]
    for ev in plane0[:5]:
        evs.mark_lost(ev, "timeout", 0)
    assert sum(ev_plane(ev) == 0 for ev in evs.rotation) == 3      # 3 of 8 slots left
    picks = [evs.pick(0) for _ in range(60)]
    assert sum(ev_plane(ev) == 0 for ev in picks) == 30
    assert {ev for ev in picks if ev_plane(ev) == 0} == set(plane0[5:])   # the 3 left, in turn
    # a plane with nothing usable passes its turn to the others
    evs.set_plane_local(0, False)
    assert {ev_plane(evs.pick(0)) for _ in range(10)} == {1}


def test_plane_down_removes_plane_and_up_restores():
    evs, _ = make()
    assert evs.set_plane_local(1, False)
    assert {ev_plane(evs.pick(0)) for _ in range(40)} == {0}
    evs.set_plane_local(1, True)
    evs.set_plane_peer(0, False)
    assert {ev_plane(evs.pick(0)) for _ in range(40)} == {1}
    evs.set_plane_peer(0, True)
    assert {ev_plane(evs.pick(0)) for _ in range(40)} == {0, 1}


def test_deny_and_allow():
    evs, _ = make()
    ev = evs.rotation[1]
    evs.deny(ev, 0)
    assert evs.state(ev) == DENIED and ev not in evs.rotation
    assert ev not in [x for x, _ in evs.due_probes(10_000)]
    evs.allow(ev, 20_000)
    assert evs.state(ev) == ASSUMED_BAD


def test_bad_arguments_raise_clearly():
    with pytest.raises(ValueError, match="ev_count"):
        EVSet(PathInfo((0, 1, 2), 2), random.Random(1), ev_count=2)
    with pytest.raises(ValueError, match="planes"):
        PathInfo((), 2)


def test_suspended_ev_is_replaced_at_once_and_returns_if_cleared():
    """A loss awaiting its verdict: a same-plane backup takes the slot now (failover does not
    wait for the verdict); cleared, the EV is GOOD and usable again (here, one EV per spine: its
    path has none left in the rotation while the replacement doubled up on another, so it takes
    that slot back and the replacement returns to the backups); retired, it is ASSUMED_BAD and
    probed, not in rotation."""
    evs, events = make(planes=2, ev_count=8, backup_count=4)
    a, b = [ev for ev in evs.rotation if ev_plane(ev) == 0][:2]
    evs.suspend(a, "sack_gap", 10)
    assert a not in evs.rotation and evs.state(a) == GOOD
    repl = [e for e in events if e["event"] == Event.EV_STATE and e.get("replaces") == a]
    assert len(repl) == 1 and ev_plane(repl[0]["ev"]) == 0 and repl[0]["ev"] in evs.rotation
    assert len(evs.rotation) == 8
    evs.unsuspend(a, "nack_trimmed", 20)
    assert a in evs.rotation and not evs.evs[a].suspended
    assert repl[0]["ev"] in evs.backups[0]
    assert [e["evidence"] for e in events if e["event"] == Event.EV_CLEARED] == ["nack_trimmed"]
    evs.suspend(b, "timeout", 30)
    evs.mark_lost(b, "timeout", 40)
    assert evs.state(b) == ASSUMED_BAD and b not in evs.rotation
    assert any(ev == b for ev, _ in evs.due_probes(40 + 1000))


def test_denied_ev_replaced_in_its_slot_by_a_same_plane_backup_and_allowed_back_via_probes():
    """Denylist: the EV leaves the rotation at once, a backup FROM THE SAME PLANE takes its slot
    (the slot keeps the planes interleaved), it is never probed; allow() makes it ASSUMED_BAD
    with a fresh probe count, probed from the moment it is allowed, GOOD after k successes."""
    evs, events = make(k=2)
    slot = 3
    ev = evs.rotation[slot]
    plane = ev_plane(ev)
    backups_before = list(evs.backups[plane])
    evs.deny(ev, 100)
    new = evs.rotation[slot]
    assert new != ev and ev_plane(new) == plane and new in backups_before
    assert evs.state(new) == GOOD and len(evs.rotation) == 16
    assert [e["new"] for e in events if e.get("ev") == ev] == [DENIED]
    assert evs.bad() == []
    evs.allow(new, 150)                                   # not denied: nothing happens
    assert evs.state(new) == GOOD
    evs.allow(ev, 200)
    assert evs.state(ev) == ASSUMED_BAD and evs.bad() == [ev]
    assert [x for x, _ in evs.due_probes(200)] == [ev]   # due at once, not a period later


def test_deny_without_backup_shrinks_the_rotation():
    evs, _ = make(backup_count=0)
    ev = evs.rotation[0]
    evs.deny(ev, 0)
    assert ev not in evs.rotation and len(evs.rotation) == 15
    assert not evs.evs[ev].in_rotation


def test_plane_state_changes_are_reported_once():
    evs, _ = make()
    assert evs.set_plane_local(0, False) is True
    assert evs.set_plane_local(0, False) is False          # no change
    assert evs.set_plane_local(7, False) is False          # no such plane
    assert evs.plane_local_up == {0: False, 1: True}
    assert evs.usable_planes() == [1]
    assert evs.set_plane_peer(1, False) is True and evs.set_plane_peer(1, False) is False
    assert evs.usable_planes() == []


def test_path_info_from_a_topology_lists_every_plane_and_spine():
    from model.topology import FabricSpec, Topology
    info = PathInfo.from_topology(Topology(FabricSpec(planes=3, groups=2, spines=5)))
    assert info == PathInfo(planes=(0, 1, 2), spines=5)
    with pytest.raises(ValueError, match="spines must be >= 1, got 0"):
        PathInfo((0,), 0)


def test_skip_suspect_and_cleared_events_carry_what_the_analysis_reads():
    """The event log is the analysis' input (ev_skip / ev_suspect / ev_cleared timelines): each
    carries time, QP, EV, plane and its cause. Suspending twice, or an EV that is not GOOD,
    changes nothing; clearing an EV that is not suspended changes nothing."""
    evs, events = make()
    ev = evs.rotation[2]
    plane = ev_plane(ev)
    evs.skip_next_turn(ev, 10)
    evs.skip_next_turn(0xDEAD, 11)                        # not one of ours: ignored
    evs.suspend(ev, "sack_gap", 20)
    evs.suspend(ev, "timeout", 21)                        # already suspended
    evs.unsuspend(ev, "nack_trimmed", 30)
    evs.unsuspend(ev, "late_delivery", 31)                # no longer suspended
    mine = [e for e in events if e.get("ev") == ev and e["event"] != Event.EV_STATE]
    assert mine == [
        {"t_ns": 10, "event": Event.EV_SKIP, "qp": 9, "ev": ev, "plane": plane, "until_ns": 10,
         "once": True},
        {"t_ns": 20, "event": Event.EV_SUSPECT, "qp": 9, "ev": ev, "plane": plane,
         "reason": "sack_gap"},
        {"t_ns": 30, "event": Event.EV_CLEARED, "qp": 9, "ev": ev, "plane": plane,
         "evidence": "nack_trimmed"}]
    other = evs.rotation[3]
    evs.mark_lost(other, "timeout", 40)
    evs.suspend(other, "timeout", 41)                     # ASSUMED_BAD: not suspended
    assert not evs.evs[other].suspended
    assert not [e for e in events if e["event"] == Event.EV_SUSPECT and e["ev"] == other]
