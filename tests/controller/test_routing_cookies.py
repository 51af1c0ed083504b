"""controller/routing.py by hand: the cookie layout, which rule drops multicast, and the ECMP
bucket count given to ecmp_uplink.

Cookie layout (the module's contract with the controller): kind (8 bits) | plane (8) | a (16)
| b (16) | c (16). Per rule: SRv6 downlink and IPv6 host route a = group, b = host in the
group; SRv6 uplink a = group, b = spine; ECMP a = destination group, b = bucket, c = IP
protocol; the T1 rules a = spine, b = destination group.
"""
from __future__ import annotations

from controller import routing
from model.topology import FabricSpec, Topology
from tests.helpers.fakeoftable import lookup


def test_make_cookie_packs_the_fields_in_their_places():
    assert routing.make_cookie(0x22, 3, 0x1234, 0x5678, 0x9ABC) == 0x22_03_1234_5678_9ABC
    assert routing.make_cookie(0x01) == 0x01 << 56
    assert routing.make_cookie(0x10, 0x1FF, 0x1_0001, 0x1_0002, 0x1_0003) == \
        0x10_FF_0001_0002_0003                      # each field keeps its own bits
    assert routing.cookie_kind(0x22_03_1234_5678_9ABC) == 0x22


def cookies(topo, switch, kind):
    return sorted(r.cookie for r in routing.switch_rules(topo, switch, "ecmp")
                  if routing.cookie_kind(r.cookie) == kind)


def test_every_rule_names_its_kind_plane_and_objects_in_its_cookie():
    topo = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2))
    c = routing.make_cookie
    # T0 of plane 1, group 1: hosts 0 and 1 of the group, spines 0 and 1, other group 0
    sw = "t0p1g1"
    assert cookies(topo, sw, routing.KIND_SRV6_DOWNLINK) == [c(0x10, 1, 1, 0), c(0x10, 1, 1, 1)]
    assert cookies(topo, sw, routing.KIND_IP_HOST) == [c(0x20, 1, 1, 0), c(0x20, 1, 1, 1)]
    assert cookies(topo, sw, routing.KIND_SRV6_UPLINK) == [c(0x11, 1, 1, 0), c(0x11, 1, 1, 1)]
    # 2 spines -> default_buckets = 8 buckets, each for UDP (17) and TCP (6)
    assert cookies(topo, sw, routing.KIND_IP_ECMP) == sorted(
        c(0x22, 1, 0, b, proto) for b in range(8) for proto in (17, 6))
    assert cookies(topo, sw, routing.KIND_IP_ECMP_DEFAULT) == [c(0x23, 1, 0)]
    assert cookies(topo, "t0p1g0", routing.KIND_IP_ECMP_DEFAULT) == [c(0x23, 1, 1)]
    sw1 = "t1p1s0"                                  # T1 of plane 1, spine 0: groups 0 and 1
    assert cookies(topo, sw1, routing.KIND_SRV6_T1) == [c(0x12, 1, 0, 0), c(0x12, 1, 0, 1)]
    assert cookies(topo, sw1, routing.KIND_IP_T1) == [c(0x21, 1, 0, 0), c(0x21, 1, 0, 1)]


def test_multicast_is_dropped_by_its_own_rule_not_by_the_table_miss():
    topo = Topology(FabricSpec(planes=1, groups=2, spines=1, hosts_per_group=1))
    rules = routing.switch_rules(topo, "t0p0g0")
    mcast = {"eth_type": 0x86DD, "ip_proto": 17, "udp_src": 5, "ipv6_dst": "ff02::1"}
    rule = lookup(rules, mcast)
    assert routing.cookie_kind(rule.cookie) == routing.KIND_DROP_CONTROL and rule.actions == ()
    assert rule.match == {"eth_type": 0x86DD, "ipv6_dst": ("ff00::", "ff00::")}


def test_ecmp_uplink_uses_the_bucket_count_it_is_given():
    """3 spines: by default 16 buckets (the smallest power of two >= 4 x 3). Source port 5:
    with 4 buckets bucket 5 & 3 = 1 -> spine 1; with 16, bucket 5 -> spine 5 % 3 = 2."""
    spec = FabricSpec(planes=1, groups=2, spines=3, hosts_per_group=1)
    assert routing.ecmp_uplink(spec, 5, 0, 1, buckets=4) == 1
    assert routing.ecmp_uplink(spec, 5, 0, 1) == 2
    assert routing.ecmp_uplink(spec, 5, 0, 1, buckets=16) == 2


def test_the_whole_fabric_is_source_routed_by_default():
    """In srv6 mode a down link leaves the ECMP buckets alone; ecmp mode moves them."""
    topo = Topology(FabricSpec(planes=1, groups=2, spines=2, hosts_per_group=1))
    down = [("t0p0g0", "t1p0s0")]
    assert routing.rules(topo, down_links=down) == routing.rules(topo, "srv6", down)
    assert routing.rules(topo, down_links=down) != routing.rules(topo, "ecmp", down)


def test_every_rule_is_in_the_one_table_and_a_bad_mode_is_named():
    import pytest
    topo = Topology(FabricSpec(planes=1, groups=2, spines=1, hosts_per_group=1))
    for switch_rules in routing.rules(topo).values():
        assert {r.table for r in switch_rules} == {0}
    with pytest.raises(routing.RoutingError) as err:
        routing.switch_rules(topo, "t0p0g0", "ospf")
    assert str(err.value) == "routing mode must be one of srv6, ecmp, got 'ospf'"
