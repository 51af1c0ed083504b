"""Denylist rules (traffic/core/denylist.py) against the default fabric, expected paths by hand.

Default fabric: 2 planes, 2 groups, 2 spines, 2 hosts per group: h0, h1 under t0p*g0 and h2, h3
under t0p*g1. A path from h1 to h2 on (plane 0, spine 1) is h1 t0p0g0 t1p0s1 t0p0g1 h2.
"""
import pytest

from model.topology import FabricSpec, Topology, make_ev
from traffic.core.denylist import Denylist, DenyRuleError, parse_rule

TOPO = Topology(FabricSpec())
E = 0xC123


def ev(plane, spine):
    return make_ev(plane, spine, E)


def test_a_nic_link_rule_names_every_path_of_that_host_on_that_plane_in_both_directions():
    rule = parse_rule({"link": "t0p0g0~h1"}, TOPO)      # either order
    assert rule.link == "h1~t0p0g0"
    assert rule.matches(TOPO, 1, 2, ev(0, 1))           # h1 -> h2 via t1p0s1
    assert rule.matches(TOPO, 2, 1, ev(0, 0))           # h2 -> h1: the same link, other way
    assert rule.matches(TOPO, 0, 1, ev(0, 0))           # inside the group: h0 t0p0g0 h1
    assert not rule.matches(TOPO, 1, 2, ev(1, 1))       # plane 1: h1's other NIC port
    assert not rule.matches(TOPO, 0, 2, ev(0, 1))       # h0 -> h2 does not touch h1's port
    assert not rule.matches(TOPO, 3, 2, ev(0, 0))


def test_a_fabric_link_rule_names_cross_group_paths_over_that_t0_t1_link_only():
    rule = parse_rule({"link": ["t0p0g0", "t1p0s1"]}, TOPO)
    assert rule.matches(TOPO, 0, 3, ev(0, 1))           # leaves group 0 over it
    assert rule.matches(TOPO, 3, 0, ev(0, 1))           # enters group 0 over it
    assert not rule.matches(TOPO, 2, 3, ev(0, 1))       # group 1 only: t0p0g1~t1p0s1 not used
    assert not rule.matches(TOPO, 0, 3, ev(0, 0))       # other spine
    assert not rule.matches(TOPO, 0, 1, ev(0, 1))       # same group: no T1 on the path


def test_t1_plane_and_ev_rules():
    t1 = parse_rule({"plane": 0, "t1": 1}, TOPO)
    assert t1.matches(TOPO, 0, 2, ev(0, 1)) and t1.matches(TOPO, 3, 1, ev(0, 1))
    assert not t1.matches(TOPO, 0, 2, ev(0, 0)) and not t1.matches(TOPO, 0, 2, ev(1, 1))
    assert not t1.matches(TOPO, 0, 1, ev(0, 1))         # h0 -> h1 never reaches a T1
    plane = parse_rule({"plane": 1}, TOPO)
    assert plane.matches(TOPO, 0, 1, ev(1, 0)) and not plane.matches(TOPO, 0, 1, ev(0, 0))
    one = parse_rule({"ev": ev(1, 1)}, TOPO)
    assert one.matches(TOPO, 0, 2, ev(1, 1))
    assert not one.matches(TOPO, 0, 2, make_ev(1, 1, E + 1))


def test_the_list_denies_when_any_rule_matches_and_add_remove_report_changes():
    d = Denylist(TOPO)
    assert not d.denies(0, 2, ev(0, 1))
    assert d.add({"plane": 0, "t1": 1})[1] is True
    assert d.add({"t1": 1, "plane": 0})[1] is False     # the same rule
    assert d.denies(0, 2, ev(0, 1)) and not d.denies(0, 2, ev(0, 0))
    d.add({"link": "h2~t0p1g1"})
    assert d.denies(0, 2, ev(1, 0))
    assert d.to_list() == [{"link": "h2~t0p1g1"}, {"plane": 0, "t1": 1}]
    assert d.remove({"plane": 0, "t1": 1})[1] is True
    assert not d.denies(0, 2, ev(0, 1))
    assert d.remove({"plane": 0, "t1": 1})[1] is False


@pytest.mark.parametrize("rule,words", [
    ({"link": "h1~t0p0g1"}, "no link between 'h1' and 't0p0g1'"),
    ({"link": "h9~t0p0g0"}, "no node named 'h9'"),
    ({"link": "h1"}, "two node names"),
    ({"t1": 1}, "needs its plane"),
    ({"plane": 2}, "plane 2 out of range 0..1"),
    ({"plane": 0, "t1": 5}, "t1 5 out of range 0..1"),
    ({"plane": True}, "plane must be an integer"),
    ({"ev": make_ev(3, 0, 1)}, "plane 3"),
    ({"plane": 0, "link": "h1~t0p0g0"}, "exactly one of"),
    ({"spine": 0}, "unknown key(s) spine"),
    ("h1~t0p0g0", "JSON object"),
])
def test_bad_rules_are_refused_with_the_reason(rule, words):
    with pytest.raises(DenyRuleError) as err:
        parse_rule(rule, TOPO)
    assert words in str(err.value)


def test_a_rule_that_strands_a_host_pair_is_found_and_one_that_leaves_a_path_is_not():
    rules = Denylist(TOPO, [{"plane": 1}])
    assert rules.stranded_by({"plane": 0, "t1": 0}) is None      # h0 -> h2 still via t1p0s1
    assert rules.stranded_by({"link": "h0~t0p0g0"}) == (0, 1)    # h0's last NIC link
    assert rules.stranded_by({"link": "h3~t0p0g1"}) == (0, 3)    # h3's, first pair reaching it
    rules.add({"link": "t0p0g0~t1p0s0"})
    # group 0 leaves plane 0 over t1p0s0 or t1p0s1: the second denied strands h0 -> h2; the
    # pairs inside group 0 (h0 t0p0g0 h1) cross no T1 and keep their path
    assert rules.stranded_by({"link": "t0p0g0~t1p0s1"}) == (0, 2)
    assert rules.stranded_by({"link": "t0p0g1~t1p0s1"}) == (0, 2)


def test_ev_rules_never_strand_a_pair_since_other_entropies_stay():
    entropies = (1, 2, 3, E)           # the lowest ones too: any one EV a path may be asked by
    rules = Denylist(TOPO, [{"ev": make_ev(p, s, e)} for p in (0, 1) for s in (0, 1)
                            for e in entropies])
    assert rules.stranded_by({"ev": ev(0, 0) + 1}) is None
    assert Denylist(TOPO).stranded_by({"plane": 0}) is None
