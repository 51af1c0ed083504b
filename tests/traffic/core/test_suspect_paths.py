"""The sender's path suspicion (traffic/core/suspect_paths.py UnexplainedLosses and SuspectPaths) on
a real EVSet, without a network: what suspecting a (plane, spine) path suspends and holds back, and
the three ways the suspicion ends, as the SuspectPaths docstring states them."""
from __future__ import annotations

import random

from model.events import Event
from traffic.core.evs import GOOD, EVSet, PathInfo
from traffic.core.suspect_paths import SuspectPaths, UnexplainedLosses


def ev_set():
    events: list[dict] = []
    evs = EVSet(PathInfo((0, 1), 2), random.Random(5), ev_count=16, backup_count=16,
                emit=events.append)
    return evs, events


def path_of(evs, ev):
    info = evs.evs[ev]
    return info.plane, info.spine


def siblings(evs, ev):
    plane, spine = path_of(evs, ev)
    return {i.ev for i in evs.evs.values() if i.ev != ev and (i.plane, i.spine) == (plane, spine)
            and i.state == GOOD}


def test_unexplained_losses_follow_the_newest_send_time_per_key():
    u = UnexplainedLosses()
    u.lost([7, (0, 1)], 100)
    assert u.suspect(7) and u.suspect((0, 1))
    u.delivered(7, None, 150)                       # the path is not known: only the EV clears
    assert not u.suspect(7) and u.suspect((0, 1))
    u.delivered(8, (0, 1), 90)                      # sent before the loss: says nothing
    assert u.suspect((0, 1))
    u.delivered(8, (0, 1), 120)
    assert not u.suspect((0, 1))
    u.lost([(0, 1)], 110)                           # an older loss than the delivery: no news
    assert not u.suspect((0, 1))
    assert not u.suspect("never seen")
    u.lost([9], 300)
    u.lost([9], 200)                                # an older loss does not replace the newest
    u.delivered(9, None, 250)
    assert u.suspect(9)
    u.lost([10], 400)
    u.delivered(10, None, 400)                      # the lost packet's own send time: no loss
    assert not u.suspect(10)                        # later than the newest delivery


def test_suspecting_a_path_suspends_its_other_evs_and_holds_its_backups():
    evs, events = ev_set()
    culprit = evs.rotation[0]
    plane, spine = path_of(evs, culprit)
    sibs = siblings(evs, culprit)
    same_path_backups = [b for b in evs.backups[plane] if evs.evs[b].spine == spine]
    assert sibs and same_path_backups               # the seed gives the path both
    sp = SuspectPaths(evs, UnexplainedLosses())
    sp.suspect(culprit, 1000)
    assert sp.paths == {(plane, spine): sibs}
    assert all(evs.evs[s].suspended for s in sibs) and not evs.evs[culprit].suspended
    assert not [b for b in evs.backups[plane] if evs.evs[b].spine == spine]
    assert sorted(sp._held[(plane, spine)]) == sorted(same_path_backups)
    suspects = [e for e in events if e["event"] == Event.EV_SUSPECT]
    assert {e["ev"] for e in suspects} == sibs
    assert {(e["t_ns"], e["reason"]) for e in suspects} == {(1000, "sibling_loss")}
    sp.suspect(0xDEAD, 2000)                        # not an EV of this set: nothing
    assert list(sp.paths) == [(plane, spine)]


def test_a_probe_answer_that_brings_an_ev_of_the_path_back_clears_it():
    evs, events = ev_set()
    culprit = evs.rotation[0]
    plane, spine = path_of(evs, culprit)
    sibs = siblings(evs, culprit)
    held_pool = [b for b in evs.backups[plane] if evs.evs[b].spine == spine]
    sp = SuspectPaths(evs, UnexplainedLosses())
    sp.suspect(culprit, 1000)
    keep = min(sibs)                                # this sibling has a verdict of its own open
    evs.evs[culprit].state = "ASSUMED_BAD"
    sp.probed_good(culprit, 1500, [])               # not GOOD yet: nothing changes
    assert (plane, spine) in sp.paths
    evs.evs[culprit].state = GOOD
    sp.probed_good(culprit, 2000, [(keep, 0)])
    assert sp.paths == {}
    assert [s for s in sibs if evs.evs[s].suspended] == [keep]
    assert set(held_pool) <= set(evs.backups[plane])
    cleared = [e for e in events if e["event"] == Event.EV_CLEARED]
    assert {e["ev"] for e in cleared} == sibs - {keep}
    assert {(e["t_ns"], e["evidence"]) for e in cleared} == {(2000, "path_clear")}


def test_a_delivery_after_the_path_loss_clears_it_and_an_open_loss_does_not():
    evs, events = ev_set()
    culprit = evs.rotation[0]
    path = path_of(evs, culprit)
    u = UnexplainedLosses()
    sp = SuspectPaths(evs, u)
    u.lost([culprit, path], 500)
    sp.suspect(culprit, 1000)
    sp.clear_delivered(1100, [])
    assert path in sp.paths                         # the loss is still unexplained
    u.delivered(culprit, path, 600)
    sp.clear_delivered(1200, [])
    assert sp.paths == {}
    cleared = [e for e in events if e["event"] == Event.EV_CLEARED]
    assert cleared and {e["t_ns"] for e in cleared} == {1200}
    assert not any(evs.evs[s].suspended for s in siblings(evs, culprit))
