"""Deny rules (traffic/core/denylist.py) at their edges: each kind as JSON and as text, the ranges
of EV / plane / spine fields at their limits, the messages for malformed rules, EVs on a plane
the fabric does not have, and the list operations replace() / parse_rules().

Default fabric: 2 planes, 2 groups, 2 spines, 2 hosts per group. EV layout (model.topology):
plane in bits 28-31, spine in bits 22-27, entropy in the low 16 bits.
"""
import pytest

from model.topology import FabricSpec, Topology, make_ev
from traffic.core.denylist import RULE_KINDS, Denylist, DenyRuleError, parse_rule, parse_rules

TOPO = Topology(FabricSpec())
E = 0xC123


def test_each_kind_as_json_and_as_text():
    rules = [({"ev": make_ev(1, 1, E)}, {"ev": 0x1040C123}, "EV 0x1040c123"),
             ({"plane": 1}, {"plane": 1}, "plane 1"),
             ({"t1": 1, "plane": 0}, {"plane": 0, "t1": 1}, "T1 t1p0s1"),
             ({"link": "t0p0g0~h1"}, {"link": "h1~t0p0g0"}, "link h1~t0p0g0")]
    for given, as_dict, text in rules:
        rule = parse_rule(given, TOPO)
        assert rule.kind in RULE_KINDS
        assert rule.to_dict() == as_dict and rule.describe() == text


def test_ev_plane_and_spine_fields_at_their_limits():
    assert parse_rule({"ev": 1}, TOPO).ev == 1                        # plane 0, spine 0
    assert parse_rule({"ev": make_ev(1, 1, 0xFFFF)}, TOPO).ev == 0x1040FFFF
    with pytest.raises(DenyRuleError, match="ev 4294967296 out of range 1..4294967295"):
        parse_rule({"ev": 1 << 32}, TOPO)                             # would be plane 0 spine 0
    with pytest.raises(DenyRuleError, match="names plane 2 spine 0, not in this fabric"):
        parse_rule({"ev": make_ev(2, 0, E)}, TOPO)
    with pytest.raises(DenyRuleError, match="names plane 0 spine 2, not in this fabric"):
        parse_rule({"ev": make_ev(0, 2, E)}, TOPO)
    assert parse_rule({"plane": 1, "t1": 1}, TOPO).plane == 1
    with pytest.raises(DenyRuleError, match="plane 2 out of range 0..1"):
        parse_rule({"plane": 2, "t1": 0}, TOPO)


def test_malformed_rules_say_what_is_wrong():
    cases = [({"colour": 1, "size": 2}, "unknown key(s) colour, size in deny rule; use one of: "
                                        "ev, plane, plane+t1, link"),
             ({"t1": 1}, 'a t1 rule needs its plane too: {"plane": P, "t1": S}'),
             ({"reason": "maintenance"}, "a deny rule names exactly one of ev, plane, plane+t1, "
                                         "link; got keys none"),
             ({"ev": 1, "plane": 0}, "a deny rule names exactly one of ev, plane, plane+t1, "
                                     "link; got keys ev, plane")]
    for rule, message in cases:
        with pytest.raises(DenyRuleError) as e:
            parse_rule(rule, TOPO)
        assert str(e.value) == message


def test_an_ev_on_a_plane_the_fabric_lacks_crosses_no_link():
    rule = parse_rule({"link": "h1~t0p0g0"}, TOPO)
    assert not rule.matches(TOPO, 1, 2, make_ev(2, 0, E))
    assert not rule.matches(TOPO, 1, 2, make_ev(3, 1, E))


def test_replace_sets_exactly_the_rules_given():
    d = Denylist(TOPO, [{"plane": 1}])
    d.replace([{"plane": 0, "t1": 1}, {"link": "h1~t0p0g0"}])
    assert d.to_list() == [{"link": "h1~t0p0g0"}, {"plane": 0, "t1": 1}]
    assert not d.denies(0, 1, make_ev(1, 0, E))                       # plane 1 no longer denied


def test_parse_rules_takes_a_list_only():
    assert [r.describe() for r in parse_rules([{"plane": 0}, {"ev": 1}], TOPO)] == \
        ["plane 0", "EV 0x00000001"]
    with pytest.raises(DenyRuleError) as e:
        parse_rules({"plane": 0}, TOPO)
    assert str(e.value) == "rules must be a JSON list of rules, got {'plane': 0}"
