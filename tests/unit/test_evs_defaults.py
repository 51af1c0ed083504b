"""An EVSet built without sizes has the MRC paper's EV set: 128 active EVs at QP start (MRC
paper 2.3: "128-256 EVs", production >100 active plus a backup set), the same as MRCConfig's
default, split evenly over the planes and interleaved plane by plane."""
from __future__ import annotations

import random

from model.topology import ev_plane
from traffic.evs import EVSet, PathInfo
from traffic.qp_config import MRCConfig


def test_the_default_ev_set_is_128_active_evs_split_over_the_planes():
    evs = EVSet(PathInfo((0, 1), 2), random.Random(3))
    assert len(evs.rotation) == 128 == MRCConfig().ev_count
    assert [ev_plane(ev) for ev in evs.rotation[:4]] == [0, 1, 0, 1]
    assert sum(ev_plane(ev) == 0 for ev in evs.rotation) == 64


def test_the_128_evs_split_over_three_planes_round_down_to_42_each():
    evs = EVSet(PathInfo((0, 1, 2), 2), random.Random(3))
    assert len(evs.rotation) == 3 * 42
    assert [ev_plane(ev) for ev in evs.rotation[:3]] == [0, 1, 2]
