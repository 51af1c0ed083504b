"""EV pinning (traffic/core/evs.py "Pinning"): the knob that forces several QPs onto one path, and the
scenario keys that set it ([mrc.qp] ev_pin_spine, ev_pin_count)."""
import random

import pytest

from emulation.config import scenario as S
from traffic.core.evs import EVSet, PathInfo
from traffic.core.qp_config import MRCConfig

pytestmark = pytest.mark.core


def spines_of(evs: EVSet, plane: int = 0) -> list[int]:
    return [evs.evs[ev].spine for ev in evs.rotation if evs.evs[ev].plane == plane]


def test_pinned_share_of_each_plane_starts_on_the_pinned_spine():
    # 2 planes x 8 EVs, 6 pinned to spine 1 of 3: per plane 6 on spine 1, the other 2 on
    # spines 0 and 2 (one each, "in turn")
    evs = EVSet(PathInfo((0, 1), 3), random.Random(7), ev_count=16, pin_spine=1, pin_count=6)
    for plane in (0, 1):
        spines = spines_of(evs, plane)
        assert len(spines) == 8
        assert spines.count(1) == 6
        assert sorted(s for s in spines if s != 1) == [0, 2]


def test_two_qps_with_different_seeds_share_the_pinned_path():
    a = EVSet(PathInfo((0,), 2), random.Random(1), ev_count=8, pin_spine=0, pin_count=6)
    b = EVSet(PathInfo((0,), 2), random.Random(2), ev_count=8, pin_spine=0, pin_count=6)
    assert spines_of(a).count(0) == spines_of(b).count(0) == 6


def test_unpinned_evs_are_spread_through_the_rotation():
    # 8 slots, 2 unpinned: never next to each other, so the other path is not used in bursts
    spines = spines_of(EVSet(PathInfo((0,), 2), random.Random(3), ev_count=8, pin_spine=0,
                             pin_count=6))
    unpinned = [i for i, s in enumerate(spines) if s == 1]
    assert len(unpinned) == 2 and unpinned[1] - unpinned[0] == 4


def test_fully_pinned_set_uses_one_path():
    evs = EVSet(PathInfo((0,), 2), random.Random(3), ev_count=8, pin_spine=1, pin_count=8)
    assert spines_of(evs) == [1] * 8


def test_without_pinning_both_spines_are_drawn():
    evs = EVSet(PathInfo((0,), 2), random.Random(3), ev_count=64)
    assert set(spines_of(evs)) == {0, 1}
    assert evs.pin_spine is None


def test_ecn_skip_of_the_pinned_evs_moves_traffic_to_the_other_spine():
    """What the ECN collision experiment relies on: while the pinned path's EVs are skipped
    (ECN echoes), every pick lands on the other spine; after the skip it returns."""
    evs = EVSet(PathInfo((0,), 2), random.Random(5), ev_count=8, pin_spine=0, pin_count=6)
    picks = [evs.evs[evs.pick(0)].spine for _ in range(8)]
    assert picks.count(0) == 6
    for ev in evs.rotation:
        if evs.evs[ev].spine == 0:
            evs.skip(ev, until_ns=1000, now_ns=0)
    assert {evs.evs[evs.pick(10)].spine for _ in range(8)} == {1}
    assert [evs.evs[evs.pick(2000)].spine for _ in range(8)].count(0) == 6


@pytest.mark.parametrize("kw, expect", [
    (dict(pin_spine=2, pin_count=4), "pin_spine 2 is not a spine"),
    (dict(pin_spine=0, pin_count=9), "pin_count must be 1..8"),
    (dict(pin_spine=None, pin_count=3), "needs a pin_spine"),
])
def test_bad_pinning_is_refused_naming_what_is_wrong(kw, expect):
    with pytest.raises(ValueError, match=expect):
        EVSet(PathInfo((0,), 2), random.Random(0), ev_count=8, **kw)


def test_one_spine_cannot_hold_unpinned_evs():
    with pytest.raises(ValueError, match="need a second spine"):
        EVSet(PathInfo((0,), 1), random.Random(0), ev_count=8, pin_spine=0, pin_count=6)


def test_mrcconfig_refuses_a_count_without_a_spine():
    with pytest.raises(ValueError, match="ev_pin_count needs ev_pin_spine"):
        MRCConfig(ev_pin_count=3)


BASE = """
name = "pin"
[fabric]
planes = 2
groups = 2
spines = 2
hosts_per_group = 2
[collective]
kind = "sendrecv"
message_bytes = 4096
iterations = 2
[mrc.qp]
ev_count = 16
"""


def test_scenario_pinning_keys_reach_the_worker_config():
    scn = S.parse(BASE + "ev_pin_spine = 1\nev_pin_count = 6\n", source="pin.toml")
    assert scn.mrc["qp"]["ev_pin_spine"] == 1 and scn.mrc["qp"]["ev_pin_count"] == 6


def test_scenario_pin_spine_alone_pins_every_active_ev():
    scn = S.parse(BASE + "ev_pin_spine = 0\n", source="pin.toml")
    assert scn.mrc["qp"]["ev_pin_count"] == 8       # 16 EVs over 2 planes


@pytest.mark.parametrize("extra, expect", [
    ("ev_pin_spine = 2\n", "pin.toml:14: [mrc.qp] ev_pin_spine: must be a spine of the fabric, 0..1"),
    ("ev_pin_spine = 0\nev_pin_count = 9\n",
     "pin.toml:15: [mrc.qp] ev_pin_count: must be at most the active EVs per plane"),
    ("ev_pin_count = 3\n", "pin.toml:14: [mrc.qp] ev_pin_count: needs ev_pin_spine"),
])
def test_scenario_refuses_pinning_the_fabric_cannot_hold(extra, expect):
    with pytest.raises(S.ScenarioError) as err:
        S.parse(BASE + extra, source="pin.toml")
    assert str(err.value).startswith(expect), str(err.value)


def test_scenario_refuses_unpinned_evs_on_a_one_spine_fabric():
    with pytest.raises(S.ScenarioError, match="ev_pin_count: leaves 2 EVs per plane"):
        S.parse(BASE.replace("spines = 2", "spines = 1") + "ev_pin_spine = 0\nev_pin_count = 6\n",
                source="pin.toml")
