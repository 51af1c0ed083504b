"""EV set bookkeeping the other EV tests leave open (traffic/core/evs.py): the exact events the
analysis reads (ev_state with reason and `replaces`, ev_skip, probe with its RTT), the round robin
after a slot is dropped, probes answered for the wrong EV, the probe backoff after allow() and
after a success, and a resurrected EV taking the slot of a floor-kept bad one.

Expected values follow the rules in the module docstring and hand arithmetic on small sets
(period 1000 ns, timeout 500 ns), not the code's own helpers.
"""
import random

import pytest

from model.topology import ev_plane
from traffic.core.evs import ASSUMED_BAD, DENIED, GOOD, UNKNOWN, EVSet, PathInfo
from model.events import Event
from tests.helpers.core_builders import make_evset


def make(ev_count=8, **kwargs):
    """test_transport_evs's EV set (same probe timers, events collected), 8 EVs by default."""
    return make_evset(ev_count=ev_count, **kwargs)


def backup_elsewhere(evs, ev):
    """The backup that replaces `ev`: the first of its plane's on another spine (path)."""
    info = evs.evs[ev]
    return next(b for b in evs.backups[info.plane] if evs.evs[b].spine != info.spine)


def state_events(events, ev):
    return [e for e in events if e["event"] == Event.EV_STATE and e["ev"] == ev]


def test_active_lists_only_the_evs_of_usable_planes():
    evs, _ = make()
    assert evs.active() == evs.rotation
    evs.set_plane_local(1, False)
    assert evs.active() == [ev for ev in evs.rotation if ev_plane(ev) == 0]
    evs.set_plane_peer(0, False)
    assert evs.active() == []


def test_skip_event_names_qp_ev_plane_and_end_of_skip():
    evs, events = make()
    ev = evs.rotation[1]
    evs.skip(ev, until_ns=7000, now_ns=100)
    evs.skip(ev, until_ns=3000, now_ns=200)        # an earlier end does not shorten the skip
    evs.skip(0xBEEF, until_ns=9000, now_ns=300)    # not one of ours: ignored
    assert [e for e in events if e["event"] == Event.EV_SKIP] == [
        {"t_ns": 100, "event": Event.EV_SKIP, "qp": 9, "ev": ev, "plane": 1, "until_ns": 7000},
        {"t_ns": 200, "event": Event.EV_SKIP, "qp": 9, "ev": ev, "plane": 1, "until_ns": 7000}]


def test_a_suspension_logs_the_backup_that_replaces_the_ev_at_that_time():
    evs, events = make()
    ev = evs.rotation[0]
    backup = backup_elsewhere(evs, ev)
    evs.suspend(ev, "sack_gap", 50)
    assert state_events(events, backup) == [
        {"t_ns": 50, "event": Event.EV_STATE, "qp": 9, "ev": backup, "plane": 0, "old": UNKNOWN,
         "new": GOOD, "reason": "replacement", "replaces": ev}]


def test_clearing_a_suspended_ev_that_kept_its_slot_leaves_it_there_only():
    """No backup: the suspended EV keeps its slot; cleared, it is used from that slot again and
    does not also turn up among the backups."""
    evs, _ = make(backup_count=0)
    ev = evs.rotation[2]
    evs.suspend(ev, "timeout", 10)
    assert ev in evs.rotation
    evs.unsuspend(ev, "late_delivery", 20)
    assert evs.rotation.count(ev) == 1 and evs.backups == {0: [], 1: []}
    assert len(evs.rotation) == 8


def test_deny_and_allow_events_carry_their_reason_time_and_replacement():
    evs, events = make()
    ev = evs.rotation[3]
    backup = evs.backups[1][0]
    evs.deny(ev, 100)
    assert state_events(events, ev) == [
        {"t_ns": 100, "event": Event.EV_STATE, "qp": 9, "ev": ev, "plane": 1, "old": GOOD,
         "new": DENIED, "reason": "denied"}]
    assert state_events(events, backup) == [
        {"t_ns": 100, "event": Event.EV_STATE, "qp": 9, "ev": backup, "plane": 1, "old": UNKNOWN,
         "new": GOOD, "reason": "replacement", "replaces": ev}]
    evs.allow(ev, 300)
    assert state_events(events, ev)[1] == {
        "t_ns": 300, "event": Event.EV_STATE, "qp": 9, "ev": ev, "plane": 1, "old": DENIED,
        "new": ASSUMED_BAD, "reason": "allowed"}


def test_round_robin_goes_on_with_the_next_ev_after_a_denied_slot_is_dropped():
    """One plane of four EVs, no backups: denying the EV due next, or the one just sent, must
    neither repeat an EV nor skip one."""
    evs, _ = make(planes=1, ev_count=4, backup_count=0)
    e0, e1, e2, e3 = evs.rotation
    assert evs.pick(0) == e0
    evs.deny(e1, 0)                      # the one due next: e2 follows
    assert [evs.pick(0) for _ in range(4)] == [e2, e3, e0, e2]
    evs, _ = make(planes=1, ev_count=4, backup_count=0)
    e0, e1, e2, e3 = evs.rotation
    assert [evs.pick(0), evs.pick(0)] == [e0, e1]
    evs.deny(e1, 0)                      # the one just sent: e2 follows
    assert [evs.pick(0) for _ in range(3)] == [e2, e3, e0]
    evs.deny(e3, 0)                      # one past the next (e2): e2 is still next
    assert [evs.pick(0) for _ in range(3)] == [e2, e0, e2]


def test_apply_denylist_never_puts_an_ev_about_to_be_denied_into_the_rotation():
    """Denying a rotation EV and its plane's first backup at once: the backup goes straight from
    UNKNOWN to DENIED (never GOOD in the rotation), the slot goes to the second backup, and every
    event is stamped with the time of the call."""
    for seed in range(1, 50):
        evs, events = make(seed=seed)
        first_backup = evs.backups[0][0]
        in_rotation = min(ev for ev in evs.rotation if ev_plane(ev) == 0)
        if in_rotation < first_backup:   # by EV value the rotation EV would come first
            break
    else:
        raise AssertionError("no seed gives a rotation EV below the first backup")
    second_backup = evs.backups[0][1]
    slot = evs.rotation.index(in_rotation)
    named = {in_rotation, first_backup}
    assert evs.apply_denylist(lambda ev: ev in named, 500) == (2, 0)
    assert [(e["old"], e["new"], e["t_ns"]) for e in state_events(events, first_backup)] == \
        [(UNKNOWN, DENIED, 500)]
    assert evs.rotation[slot] == second_backup and evs.state(second_backup) == GOOD
    assert all(e["t_ns"] == 500 for e in events)


def test_probe_answers_for_an_unknown_probe_or_the_wrong_ev_are_refused():
    evs, events = make(k=1)
    ev = evs.rotation[0]
    other = evs.rotation[1]
    evs.mark_lost(ev, "timeout", 0)
    (probed, seq), = evs.due_probes(1000)
    assert probed == ev
    assert evs.probe_response(seq + 1, ev, 1100) is False
    assert evs.probe_response(seq, other, 1100) is False
    assert evs.state(ev) == ASSUMED_BAD
    assert evs.probe_response(seq, ev, 1130) is True
    assert evs.state(ev) == GOOD
    assert [e for e in events if e["event"] == Event.PROBE] == [
        {"t_ns": 1130, "event": Event.PROBE, "qp": 9, "ev": ev, "ok": True, "rtt_ns": 130}]
    # resurrected by probe: the state change is stamped with the answer's time
    assert state_events(events, ev)[-1] == {
        "t_ns": 1130, "event": Event.EV_STATE, "qp": 9, "ev": ev, "plane": 0, "old": ASSUMED_BAD,
        "new": GOOD, "reason": "probe_ok"}


def probe_times(evs, ev, outcomes, start):
    """Send-times of the probes of `ev` from `start` on; each probe's fate is the next of
    `outcomes` (True: answered 10 ns later, False: expires at its 500 ns timeout)."""
    sent, t = [], start
    outcomes = list(outcomes)
    while outcomes and t < start + 50_000:
        for probed, seq in evs.due_probes(t):
            if probed != ev:
                continue
            sent.append(t)
            if outcomes.pop(0):
                evs.probe_response(seq, ev, t + 10)
            else:
                evs.expire_probes(t + 500)
        t += 10
    return sent


def test_a_success_resets_the_failure_count_of_the_backoff():
    """period 1000, timeout 500, cap 8: after failures 1 and 2 the next probe waits 1 and 3
    periods from the failure; a success, then one failure: 1 period again (first failure)."""
    evs, _ = make(k=5, backoff=8)
    ev = evs.rotation[0]
    evs.mark_lost(ev, "timeout", 0)
    sent = probe_times(evs, ev, [False, False, True, False, False], 1000)
    gaps = [b - a for a, b in zip(sent, sent[1:])]
    # fail: +500 +1000; fail: +500 +3000; success at +10: next one period after sending;
    # fail: +500 +1000
    assert gaps == [1500, 3500, 1000, 1500]


def test_an_allowed_ev_starts_its_backoff_afresh():
    """An EV whose probes failed three times, then denied and allowed, is probed at once and
    after its first new failure waits one period, not the backoff it had before."""
    evs, _ = make(k=5, backoff=8)
    ev = evs.rotation[0]
    evs.mark_lost(ev, "timeout", 0)
    probe_times(evs, ev, [False, False, False], 1000)
    assert evs.evs[ev].probe_failures == 3
    evs.deny(ev, 20_000)
    evs.allow(ev, 30_000)
    sent = probe_times(evs, ev, [False, False], 30_000)
    assert sent == [30_000, 31_500]


def test_a_resurrected_ev_takes_the_slot_of_a_floor_kept_bad_ev_of_its_plane():
    """Plane 0 holds a, b and one backup c; floor 4 of 4. a is lost: c takes its slot. b is
    lost: no backup, the floor keeps b in the rotation. a is probed back GOOD: the plane's
    rotation is full, so a replaces the bad b in b's slot."""
    evs, events = make(ev_count=4, backup_count=2, min_active=4, k=1)
    a, b = [ev for ev in evs.rotation if ev_plane(ev) == 0]
    c = evs.backups[0][0]
    slot_a, slot_b = evs.rotation.index(a), evs.rotation.index(b)
    evs.mark_lost(a, "timeout", 0)
    assert evs.rotation[slot_a] == c
    evs.mark_lost(b, "timeout", 0)
    assert evs.rotation[slot_b] == b and evs.state(b) == ASSUMED_BAD
    (probed, seq), = [p for p in evs.due_probes(1000) if p[0] == a]
    evs.probe_response(seq, a, 1010)
    assert evs.state(a) == GOOD
    assert evs.rotation[slot_b] == a and evs.rotation[slot_a] == c
    assert b not in evs.rotation and not evs.evs[b].in_rotation and evs.evs[a].in_rotation
    assert a not in evs.backups[0]
    assert state_events(events, a)[-1] == {
        "t_ns": 1010, "event": Event.EV_STATE, "qp": 9, "ev": a, "plane": 0, "old": ASSUMED_BAD,
        "new": GOOD, "reason": "probe_ok"}


def test_defaults_are_one_ev_per_path_and_the_ocp_floor():
    """2 planes x 4 spines: 8 active EVs, one per path (the paper's EVs each name a path), 8
    backups (one per path), floor ev_count / 4 = 2 (OCP examples)."""
    events = []
    evs = EVSet(PathInfo((0, 1), 4), random.Random(2), emit=events.append)
    assert len(evs.rotation) == 8
    assert sorted((evs.evs[e].plane, evs.evs[e].spine) for e in evs.rotation) == [
        (p, s) for p in (0, 1) for s in range(4)]
    assert sum(len(b) for b in evs.backups.values()) == 8 and evs.min_active == 2
    evs.mark_lost(evs.rotation[0], "timeout", 5)
    assert {e["qp"] for e in events} == {0}


def test_pinned_and_unpinned_spines_alternate_evenly():
    """Spines of plane 0's rotation in order, by hand from "the i-th slot is unpinned when the
    unpinned share up to it, (i+1) * unpinned // per_plane, passes the unpinned placed so far":
    4 slots, 1 pinned on spine 0, others 1, 2, 3 in turn: [0, 1, 2, 3];
    8 slots, 2 pinned: [0, 1, 2, 3, 0, 1, 2, 3]."""
    def spines(per_plane, pin_count):
        evs = EVSet(PathInfo((0,), 4), random.Random(3), ev_count=per_plane, pin_spine=0,
                    pin_count=pin_count)
        return [evs.evs[ev].spine for ev in evs.rotation]
    assert spines(4, 1) == [0, 1, 2, 3]
    assert spines(8, 2) == [0, 1, 2, 3, 0, 1, 2, 3]


def test_pinning_limits_and_their_messages():
    one = EVSet(PathInfo((0,), 1), random.Random(1), ev_count=4, pin_spine=0, pin_count=4)
    assert [one.evs[ev].spine for ev in one.rotation] == [0] * 4    # fully pinned: one spine is enough
    single = EVSet(PathInfo((0,), 2), random.Random(1), ev_count=4, pin_spine=1, pin_count=1)
    assert sorted(single.evs[ev].spine for ev in single.rotation) == [0, 0, 0, 1]
    with pytest.raises(ValueError, match=r"not a spine of this fabric \(0\.\.3\)"):
        EVSet(PathInfo((0,), 4), random.Random(1), ev_count=4, pin_spine=4, pin_count=1)
    with pytest.raises(ValueError, match="3 unpinned EVs per plane need a second spine"):
        EVSet(PathInfo((0,), 1), random.Random(1), ev_count=4, pin_spine=0, pin_count=1)


def test_an_unknown_plane_is_not_usable():
    evs, _ = make()
    assert evs.plane_usable(7) is False
    assert evs.plane_usable(0) is True


def test_a_rotation_of_one_ev_is_used():
    evs, _ = make(planes=1, ev_count=1, backup_count=0)
    (only,) = evs.rotation
    assert [evs.pick(0) for _ in range(3)] == [only] * 3
    assert evs.pick(0, exclude=only) is None


def test_three_planes_take_turns_in_order_and_a_refused_plane_passes_to_the_next():
    evs, _ = make(planes=3, ev_count=6, backup_count=0)
    assert [ev_plane(evs.pick(0)) for _ in range(6)] == [0, 1, 2, 0, 1, 2]
    # plane 0's turn, its pacer refuses: plane 1 goes, then plane 2 (not back to 0)
    assert ev_plane(evs.pick(0, plane_ok=lambda p: p != 0)) == 1
    assert ev_plane(evs.pick(0)) == 2


def test_the_excluded_ev_is_never_picked():
    evs, _ = make(planes=1, ev_count=2, backup_count=0)
    e0, e1 = evs.rotation
    assert [evs.pick(0, exclude=e0) for _ in range(3)] == [e1, e1, e1]


def test_each_plane_keeps_its_own_place_in_the_round_robin():
    """Rotation a0 b0 a1 b1 a2 b2 a3 b3 (a: plane 0, b: plane 1), a0 skipped for long. Plane 0
    walks a1 a2 a3 a1 a2, plane 1 walks b0 b1 b2 b3 b0, alternating planes."""
    evs, _ = make(planes=2, ev_count=8, backup_count=0)
    a0, b0, a1, b1, a2, b2, a3, b3 = evs.rotation
    evs.skip(a0, until_ns=10**9, now_ns=0)
    assert [evs.pick(0) for _ in range(10)] == [a1, b0, a2, b1, a3, b2, a1, b3, a2, b0]


def test_passed_over_evs_are_used_best_first_skipped_then_suspended_then_bad():
    """One plane, e0..e3, floor 4 so a lost EV keeps its slot. e0 lost (ASSUMED_BAD), e1
    suspended, e2 and e3 ECN-skipped: the first skipped one in turn goes (e2). Then e2 and e3
    are lost too: from e3 on, the suspended e1 beats the bad e3 and e0."""
    evs, _ = make(planes=1, ev_count=4, backup_count=0, min_active=4)
    e0, e1, e2, e3 = evs.rotation
    evs.mark_lost(e0, "timeout", 0)
    evs.suspend(e1, "sack_gap", 0)
    evs.skip(e2, until_ns=5000, now_ns=0)
    evs.skip(e3, until_ns=5000, now_ns=0)
    assert evs.pick(10) == e2
    evs.mark_lost(e2, "timeout", 20)
    evs.mark_lost(e3, "timeout", 20)
    assert [evs.rotation[i] for i in range(4)] == [e0, e1, e2, e3]
    assert evs.pick(30) == e1


def test_a_trimmed_nack_skip_beats_a_suspended_ev():
    evs, _ = make(planes=1, ev_count=2, backup_count=0)
    e0, e1 = evs.rotation
    evs.suspend(e0, "sack_gap", 0)
    evs.skip_next_turn(e1, 0)
    assert evs.pick(10) == e1
    assert not evs.evs[e1].skip_once


def test_losing_an_unknown_or_already_bad_ev_changes_nothing():
    evs, events = make(k=3)
    assert evs.mark_lost(0xDEAD, "timeout", 0) is None
    ev = evs.rotation[0]
    evs.mark_lost(ev, "timeout", 0)
    t = 1000
    for _ in range(2):                                  # two of the three successes
        (p, seq), = evs.due_probes(t)
        evs.probe_response(seq, ev, t + 10)
        t += 1000
    assert evs.mark_lost(ev, "sack_gap", t) is None      # already ASSUMED_BAD: no new loss
    (p, seq), = evs.due_probes(t)
    evs.probe_response(seq, ev, t + 10)
    assert evs.state(ev) == GOOD
    assert [e["reason"] for e in state_events(events, ev)] == ["timeout", "probe_ok"]


def test_a_lost_ev_is_first_probed_one_period_later():
    evs, _ = make()
    ev = evs.rotation[0]
    evs.mark_lost(ev, "timeout", 5000)
    assert evs.due_probes(5999) == []
    assert [p for p, _ in evs.due_probes(6000)] == [ev]


def test_replacement_on_loss_is_logged_at_the_time_of_the_loss():
    evs, events = make()
    ev = evs.rotation[1]
    backup = backup_elsewhere(evs, ev)
    evs.mark_lost(ev, "sack_gap", 777)
    assert state_events(events, backup) == [
        {"t_ns": 777, "event": Event.EV_STATE, "qp": 9, "ev": backup, "plane": 1, "old": UNKNOWN,
         "new": GOOD, "reason": "replacement", "replaces": ev}]


def test_round_robin_goes_on_after_a_lost_ev_leaves_without_replacement():
    """As for a denied EV: one plane of four, no backups, floor 1."""
    evs, _ = make(planes=1, ev_count=4, backup_count=0, min_active=1)
    e0, e1, e2, e3 = evs.rotation
    assert evs.pick(0) == e0
    evs.mark_lost(e1, "timeout", 0)      # due next: e2 follows
    assert [evs.pick(0) for _ in range(4)] == [e2, e3, e0, e2]
    evs, _ = make(planes=1, ev_count=4, backup_count=0, min_active=1)
    e0, e1, e2, e3 = evs.rotation
    assert [evs.pick(0), evs.pick(0)] == [e0, e1]
    evs.mark_lost(e1, "timeout", 0)      # just sent: e2 follows
    assert [evs.pick(0) for _ in range(3)] == [e2, e3, e0]


def test_a_lost_ev_whose_slot_was_dropped_comes_back_into_the_rotation():
    """No backup, above the floor: the slot is dropped. Probed back GOOD, the plane is below its
    quota, so the EV rejoins the rotation; meanwhile the denylist can still sort it."""
    evs, _ = make(planes=1, ev_count=4, backup_count=0, min_active=1, k=1)
    e0, e1, e2, e3 = evs.rotation
    evs.mark_lost(e1, "timeout", 0)
    assert e1 not in evs.rotation and not evs.evs[e1].in_rotation
    assert evs.apply_denylist(lambda ev: ev in (e1, e2), 10) == (2, 0)
    assert evs.apply_denylist(lambda ev: False, 20) == (0, 2)
    (p, seq), = [x for x in evs.due_probes(20) if x[0] == e1]
    evs.probe_response(seq, e1, 30)
    assert evs.state(e1) == GOOD and e1 in evs.rotation


def test_a_replacement_starts_without_the_skip_it_had_before():
    """e (ECN-skipped until 10 us) is suspended and cleared: it waits among the backups. When
    another EV of its plane is lost, e takes that slot and is used at once, skip forgotten."""
    evs, _ = make(planes=1, ev_count=2, backup_count=1)
    e0, e1 = evs.rotation
    spare = evs.backups[0][0]
    evs.skip(e0, until_ns=10_000, now_ns=0)
    evs.suspend(e0, "sack_gap", 0)                    # spare takes e0's slot
    evs.unsuspend(e0, "late_delivery", 0)             # rotation full: e0 waits as a backup
    assert evs.backups[0] == [e0] and spare in evs.rotation
    evs.mark_lost(e1, "timeout", 0)                   # e0 replaces e1
    assert e0 in evs.rotation
    assert e0 in [evs.pick(0) for _ in range(2)]


def test_next_probe_deadline_counts_probe_timeouts_and_skips_down_planes():
    evs, _ = make()
    ev = evs.rotation[0]                               # plane 0
    evs.mark_lost(ev, "timeout", 0)
    assert evs.next_probe_deadline() == 1000
    evs.due_probes(1000)
    assert evs.next_probe_deadline() == 1500           # the pending probe times out
    evs.expire_probes(1500)
    evs.set_plane_local(0, False)
    assert evs.next_probe_deadline() is None           # nothing to probe on a down plane
