"""The capacity model behind the recovery metric (analysis/recovery.py), fault by fault, on a
2-plane, 2-group, 2-spine fabric with 2 hosts per group (all links the same rate). By hand:
group 0 leaves the fabric over 4 T0 uplinks (2 planes x 2 spines), a host over 2 NIC ports.
Gray loss counts as lost capacity from 5 % loss on; degrade leaves its fraction; each clear
restores the link."""
import pytest

from analysis import recovery as R
from model.topology import FabricSpec, Topology

TOPO = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2))
UPLINK = {"a": "t0p0g0", "b": "t1p0s0"}


def after(*faults):
    state = {}
    for fault in faults:
        state = R.apply_fault_to_capacity(TOPO, state, fault)
    return R.surviving_capacity_fraction(TOPO, state)


def test_gray_loss_is_lost_capacity_from_five_percent():
    assert after({"action": "gray_loss", "percent": 4.9, **UPLINK}) == 1.0
    assert after({"action": "gray_loss", "percent": 5.0, **UPLINK}) == 0.75
    assert after({"action": "gray_loss", **UPLINK}) == 0.75            # no percent: 100 %
    assert after({"action": "gray_loss", "percent": 50, **UPLINK},
                 {"action": "gray_loss_clear", "a": "t1p0s0", "b": "t0p0g0"}) == 1.0


def test_degrade_keeps_its_fraction_and_clears():
    # one uplink of four at 0.5: 3.5 / 4
    assert after({"action": "degrade", "fraction": 0.5, **UPLINK}) == 0.875
    assert after({"action": "degrade", "fraction": 1.5, **UPLINK}) == 1.0    # at most the link
    assert after({"action": "degrade", **UPLINK}) == 1.0                    # no fraction: 1
    assert after({"action": "degrade", "fraction": 0.5, **UPLINK},
                 {"action": "degrade_clear", **UPLINK}) == 1.0


def test_flap_counts_the_link_as_down():
    assert after({"action": "flap", "period_s": 1, "count": 2, **UPLINK}) == 0.75


def test_each_groups_own_uplinks_form_its_cut():
    """Three groups; both group-1 uplinks of plane 0 down: group 1 keeps 2 of its 4 uplinks
    (the others keep all theirs), so the narrowest cut has 0.5 left."""
    topo = Topology(FabricSpec(planes=2, groups=3, spines=2, hosts_per_group=2))
    state = {}
    for spine in ("t1p0s0", "t1p0s1"):
        state = R.apply_fault_to_capacity(topo, state, {"action": "link_down", "a": "t0p0g1",
                                                        "b": spine})
    assert R.surviving_capacity_fraction(topo, state) == 0.5


def test_one_group_has_no_uplink_cut():
    topo = Topology(FabricSpec(planes=2, groups=1, spines=2, hosts_per_group=2))
    state = R.apply_fault_to_capacity(topo, {}, {"action": "blackhole", "a": "t1p0s0"})
    assert R.surviving_capacity_fraction(topo, state) == 1.0   # no cross-group traffic to cut


def test_capacity_fractions_must_be_fractions():
    assert R.surviving_capacity_fraction(TOPO, {("t0p0g0", "t1p0s0"): 1.0}) == 1.0
    with pytest.raises(ValueError, match=r"capacity fraction of link t0p0g0~t1p0s0 must be in "
                                         r"\[0, 1\], got 1.5"):
        R.surviving_capacity_fraction(TOPO, {("t0p0g0", "t1p0s0"): 1.5})


# The collective's demand weighs each cut (analysis/flows.collective_demand). By hand, on TOPO
# (100 Mbit/s links): a host sends and receives over 2 NIC ports, 200 Mbit/s; group 0 (h0, h1)
# reaches group 1 over 4 uplinks, 400 Mbit/s, 300 with one down.
RING = {("h0", "h1"): 1.0, ("h1", "h2"): 1.0, ("h2", "h3"): 1.0, ("h3", "h0"): 1.0}
BISECTION = {("h0", "h2"): 1.0, ("h1", "h3"): 1.0}


def weighed(demand, *faults):
    state = {}
    for fault in faults:
        state = R.apply_fault_to_capacity(TOPO, state, fault)
    return R.surviving_capacity_fraction(TOPO, state, demand)


def test_a_ring_loses_nothing_to_one_uplink_down():
    """The ring crosses group 0's uplinks once each way (h1 -> h2, h3 -> h0): 1 unit on 400,
    then 300 Mbit/s; its top rate stays the NIC ports' 200 Mbit/s per unit: fraction 1 (the
    capacity-only rule said 0.75, and goodput read 133% of "allowed")."""
    assert weighed(RING, {"action": "link_down", **UPLINK}) == 1.0
    assert after({"action": "link_down", **UPLINK}) == 0.75          # without a demand


def test_a_bisection_fills_the_uplinks_and_loses_a_quarter():
    """Both flows leave group 0: 2 units on 400 Mbit/s = 200 per unit, as the NIC ports; with
    one uplink down 300 / 2 = 150: 150 / 200 = 0.75."""
    assert weighed(BISECTION, {"action": "link_down", **UPLINK}) == 0.75


def test_a_ring_host_port_and_a_whole_group_cut():
    """h1 keeps one of its two NIC ports: 100 per unit of 200: 0.5. Every uplink of group 0
    down: nothing crosses: 0."""
    assert weighed(RING, {"action": "link_down", "a": "h1", "b": "t0p0g0"}) == 0.5
    down = [{"action": "link_down", "a": f"t0p{p}g0", "b": f"t1p{p}s{s}"}
            for p in (0, 1) for s in (0, 1)]
    assert weighed(RING, *down) == 0.0


def test_a_demand_no_cut_carries_loses_nothing():
    assert weighed({("h0", "h0"): 1.0}, {"action": "link_down", **UPLINK}) == 1.0
