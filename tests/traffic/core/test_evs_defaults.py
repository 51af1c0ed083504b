"""An EVSet built without sizes names each distinct path to the peer once (the MRC paper's EVs
each name one path; planes x spines of them), interleaved plane by plane, with one backup per
path; a dead path then costs one EV, and its replacement is a backup on another path of the
same plane. With an explicit count a plane's EVs take its spines in turn, so no path carries
more than ceil(count per plane / spines)."""
from __future__ import annotations

import random
from collections import Counter

from model.events import Event
from model.topology import ev_plane
from traffic.core.evs import EVSet, PathInfo
from traffic.core.qp_config import MRCConfig


def paths_of(evs, ids):
    return [(evs.evs[e].plane, evs.evs[e].spine) for e in ids]


def test_the_default_ev_set_is_one_ev_per_distinct_path():
    assert MRCConfig().ev_count is None and MRCConfig().ev_backup_count is None
    evs = EVSet(PathInfo((0, 1), 8), random.Random(3))
    assert len(evs.rotation) == 16                             # 2 planes x 8 spines
    assert sorted(paths_of(evs, evs.rotation)) == [(p, s) for p in (0, 1) for s in range(8)]
    assert [ev_plane(ev) for ev in evs.rotation[:4]] == [0, 1, 0, 1]
    assert sorted(paths_of(evs, evs.backups[0])) == [(0, s) for s in range(8)]


def test_three_planes_of_two_spines_give_six_evs():
    evs = EVSet(PathInfo((0, 1, 2), 2), random.Random(3))
    assert len(evs.rotation) == 6
    assert [ev_plane(ev) for ev in evs.rotation[:3]] == [0, 1, 2]


def test_an_explicit_count_spreads_evenly_over_the_spines():
    """32 EVs over 2 planes x 2 spines (the demo's shared set): 8 per path exactly."""
    evs = EVSet(PathInfo((0, 1), 2), random.Random(5), ev_count=32, backup_count=16)
    assert set(Counter(paths_of(evs, evs.rotation)).values()) == {8}


def test_a_dead_path_costs_one_ev_and_the_backup_comes_from_another_path():
    """Default set over 2 planes x 4 spines. The EV on (0, s) is lost: the backup put in its
    slot is on plane 0 but not on spine s; then the EV on (0, t) is suspended: its backup
    avoids both s and t."""
    evs = EVSet(PathInfo((0, 1), 4), random.Random(7))
    first = evs.rotation[0]
    s = evs.evs[first].spine
    replacement = evs.mark_lost(first, "timeout", 10)
    assert evs.evs[replacement].plane == 0 and evs.evs[replacement].spine != s
    assert sum(1 for e in evs.rotation if evs.evs[e].spine == s and evs.evs[e].plane == 0) == 0
    second = next(e for e in evs.rotation if evs.evs[e].plane == 0 and e != replacement)
    t = evs.evs[second].spine
    slot = evs.rotation.index(second)
    evs.suspend(second, "sack_gap", 20)
    assert evs.evs[evs.rotation[slot]].spine not in (s, t)


def test_a_path_probed_back_takes_its_slot_back_from_a_doubled_up_replacement():
    """Default set over 1 plane x 2 spines: EVs on spines a and b, backups on a and b. The EV
    on a is lost: its replacement is the backup on b (b now carries two). Probed back, the
    EV on a takes the slot back and the replacement returns to the backups."""
    evs = EVSet(PathInfo((0,), 2), random.Random(3), probe_k=1, probe_period_ns=10)
    lost = evs.rotation[0]
    replacement = evs.mark_lost(lost, "timeout", 0)
    assert evs.evs[replacement].spine != evs.evs[lost].spine
    (ev, seq), = evs.due_probes(10)
    evs.probe_response(seq, ev, 11)
    assert evs.rotation[0] == lost and evs.state(lost) == "GOOD"
    assert sorted(evs.evs[e].spine for e in evs.rotation) == [0, 1]
    assert replacement in evs.backups[0]


def test_a_good_backup_taking_a_slot_is_logged_with_what_it_replaces():
    """Continuing the case above: the replacement went back to the backups GOOD. When the EV
    on a is lost again, that backup takes its slot with no change of state, and the log still
    shows the slot change (ev_state GOOD -> GOOD, replaces = the lost EV): without it the
    second replacement is invisible to the analysis."""
    log = []
    evs = EVSet(PathInfo((0,), 2), random.Random(3), probe_k=1, probe_period_ns=10,
                emit=log.append)
    lost = evs.rotation[0]
    replacement = evs.mark_lost(lost, "timeout", 0)
    (ev, seq), = evs.due_probes(10)
    evs.probe_response(seq, ev, 11)
    assert evs.state(replacement) == "GOOD" and replacement in evs.backups[0]
    log.clear()
    assert evs.mark_lost(lost, "timeout", 20) == replacement
    taken = [e for e in log if e["event"] == Event.EV_STATE and e["ev"] == replacement]
    assert [(e["old"], e["new"], e["replaces"]) for e in taken] == [("GOOD", "GOOD", lost)]
