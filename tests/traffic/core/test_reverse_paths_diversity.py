"""The receiver's reverse EVs spread over a plane's spines (traffic/core/reverse_paths.py): SACKs
take a plane's reverse EVs in turn, so a plane whose reverse EVs all crossed one T1 would lose
every SACK when that T1 died, until probes found it; at a burst's end the sender then has
nothing but ACK timeouts, and retires healthy EVs of every plane."""
import random

import pytest

from model.topology import ev_plane, ev_spine, make_ev
from traffic.core.evs import PathInfo
from traffic.core.qp_config import MRCConfig
from traffic.core.reverse_paths import ReversePaths, _RetiredEV

pytestmark = pytest.mark.core


def make(seed: int, spines: int, per_plane: int) -> ReversePaths:
    cfg = MRCConfig(base_rtt_ns=1_000_000, reverse_evs_per_plane=per_plane)
    return ReversePaths(0x33, cfg, PathInfo((0, 1), spines), random.Random(seed),
                        {0: True, 1: True}, lambda e: None)


@pytest.mark.parametrize("seed", range(1, 21))
def test_a_planes_first_reverse_evs_take_distinct_spines(seed):
    rp = make(seed, spines=2, per_plane=2)
    for plane in (0, 1):
        assert sorted(ev_spine(r.ev) for r in rp.evs[plane]) == [0, 1]
        assert all(ev_plane(r.ev) == plane for r in rp.evs[plane])
    rp = make(seed, spines=4, per_plane=3)          # fewer EVs than spines: 3 different ones
    assert all(len({ev_spine(r.ev) for r in rp.evs[p]}) == 3 for p in (0, 1))


@pytest.mark.parametrize("seed", range(1, 11))
def test_a_candidate_avoids_retired_spines_first_then_spines_in_use(seed):
    rp = make(seed, spines=4, per_plane=1)
    rp.evs[0][0].ev = make_ev(0, 1, 100)                   # in use on spine 1
    dead = make_ev(0, 2, 200)
    rp.retired[dead] = _RetiredEV(dead, next_probe_ns=0)   # retired on spine 2
    # the private draw is the rule itself; the receiver adopts what it returns once answered
    assert {ev_spine(rp._fresh_ev(0)) for _ in range(20)} <= {0, 3}
    for spine in (0, 3):                                   # both free spines retired too
        rp.retired[make_ev(0, spine, 300)] = _RetiredEV(make_ev(0, spine, 300), 0)
    assert {ev_spine(rp._fresh_ev(0)) for _ in range(20)} == {1}   # in use beats retired
