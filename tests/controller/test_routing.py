"""Routing rules checked by following packets through a fake OpenFlow fabric."""
from collections import Counter

import pytest

from controller import routing
from model.topology import FabricSpec, Topology, make_ev
from tests.helpers.fakeoftable import FakeFabric, lookup

SIZES = [
    FabricSpec(planes=1, groups=1, spines=1, hosts_per_group=2),
    FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2),
    FabricSpec(planes=1, groups=3, spines=4, hosts_per_group=1),
    FabricSpec(planes=4, groups=3, spines=3, hosts_per_group=3),
]


def srv6_packet(topo, src, dst, plane, spine, sport=0x1234):
    return {"eth_type": 0x86DD, "ip_proto": 41,
            "ipv6_dst": topo.usid_container(src, dst, plane, spine),
            "ipv6_src": topo.nic_addr(src, plane)}


def ip_packet(topo, src, dst, plane, sport, proto=17):
    pkt = {"eth_type": 0x86DD, "ip_proto": proto, "ipv6_dst": topo.nic_addr(dst, plane),
           "ipv6_src": topo.nic_addr(src, plane)}
    if proto == 17:
        pkt["udp_src"] = sport
    elif proto == 6:
        pkt["tcp_src"] = sport
    else:
        pkt["icmpv6_type"] = 128
    return pkt


@pytest.mark.parametrize("spec", SIZES, ids=lambda s: f"{s.planes}x{s.groups}x{s.spines}x{s.hosts_per_group}")
@pytest.mark.parametrize("mode", routing.ROUTING_MODES)
def test_every_pair_every_plane_reachable_both_schemes(spec, mode):
    topo = Topology(spec)
    fab = FakeFabric(topo, routing.rules(topo, mode))
    for src, dst in topo.iter_host_pairs():
        for plane in range(spec.planes):
            for spine in range(spec.spines):
                trace = fab.send(src, plane, srv6_packet(topo, src, dst, plane, spine))
                assert trace.delivered_to == f"h{dst}", trace
                # SRv6 EV -> exactly the path the topology promises
                assert trace.nodes == topo.path(src, dst, plane, spine)
            for proto in (17, 6, 58):
                for sport in (1, 7, 0xBEEF):
                    trace = fab.send(src, plane, ip_packet(topo, src, dst, plane, sport, proto))
                    assert trace.delivered_to == f"h{dst}", (proto, sport, trace)


@pytest.mark.parametrize("proto", [17, 6], ids=["udp", "tcp"])
def test_ecmp_path_follows_the_hand_computed_bucket(proto):
    """Prediction by hand, not with the module's tables: 3 spines -> 16 buckets (the smallest
    power of two >= 4 per spine), bucket = low 4 bits of the L4 source port (UDP or TCP), and
    with every spine live, bucket b -> spine b mod 3."""
    spec = FabricSpec(planes=2, groups=3, spines=3, hosts_per_group=2)
    topo = Topology(spec)
    fab = FakeFabric(topo, routing.rules(topo, "ecmp"))
    src, dst = 0, 5  # h0 in group 0 -> h5 in group 2
    for plane in range(spec.planes):
        for sport in [*range(1, 40), 0x7FF0, 0xBEEF, 0xFFFF]:
            spine = (sport % 16) % 3
            trace = fab.send(src, plane, ip_packet(topo, src, dst, plane, sport, proto))
            assert trace.delivered_to == "h5"
            assert trace.nodes[2] == f"t1p{plane}s{spine}", (proto, sport, trace.nodes)
            assert trace.nodes == topo.path(src, dst, plane, spine)


@pytest.mark.parametrize("proto", [17, 6], ids=["udp", "tcp"])
def test_reconverged_ecmp_spreads_over_the_live_spines_by_hand(proto):
    """After t0p0g0-t1p0s1 goes down the controller deals the 16 buckets round robin over the
    live spines [0, 2]: bucket b -> [0, 2][b mod 2]."""
    spec = FabricSpec(planes=1, groups=2, spines=3, hosts_per_group=1)
    topo = Topology(spec)
    down = {frozenset(("t0p0g0", "t1p0s1"))}
    fab = FakeFabric(topo, routing.rules(topo, "ecmp", down_links=down), down_links=down)
    for sport in range(1, 64):
        spine = (0, 2)[(sport % 16) % 2]
        trace = fab.send(0, 0, ip_packet(topo, 0, 1, 0, sport, proto))
        assert trace.delivered_to == "h1"
        assert trace.nodes[2] == f"t1p0s{spine}", (proto, sport, trace.nodes)


@pytest.mark.parametrize("spines", [1, 2, 3, 4, 5, 8])
def test_ecmp_buckets_balanced(spines):
    spec = FabricSpec(planes=1, groups=2, spines=spines, hosts_per_group=1)
    n = routing.default_buckets(spines)
    assert n >= 4 * spines and n & (n - 1) == 0
    counts = Counter(routing.ecmp_uplink(spec, sport, 0, 1) for sport in range(1, 65536))
    assert set(counts) == set(range(spines))
    assert max(counts.values()) - min(counts.values()) <= 65536 // n + 1
    assert max(counts.values()) / min(counts.values()) <= 1.25 + 1e-9


def test_buckets_configurable_and_checked():
    spec = FabricSpec(planes=1, groups=2, spines=2, hosts_per_group=1)
    r = routing.switch_rules(spec, "t0p0g0", "ecmp", buckets=32)
    ecmp = [x for x in r if routing.cookie_kind(x.cookie) == routing.KIND_IP_ECMP]
    assert len(ecmp) == 32 * 2
    for bad in (0, 3, 12, -4, True, 1 << 17):
        with pytest.raises(routing.RoutingError):
            routing.switch_rules(spec, "t0p0g0", "ecmp", buckets=bad)
    with pytest.raises(routing.RoutingError, match="routing mode"):
        routing.rules(spec, "ospf")


def test_nd_and_multicast_dropped_and_miss_drops():
    topo = Topology(FabricSpec(planes=1, groups=2, spines=2, hosts_per_group=2))
    fab = FakeFabric(topo, routing.rules(topo, "srv6"))
    ns = {"eth_type": 0x86DD, "ip_proto": 58, "icmpv6_type": 135,
          "ipv6_dst": topo.nic_addr(3, 0)}
    assert fab.send(0, 0, ns).reason == "dropped by rule"
    mcast = {"eth_type": 0x86DD, "ip_proto": 17, "udp_src": 5, "ipv6_dst": "ff02::1"}
    assert fab.send(0, 0, mcast).reason == "dropped by rule"
    unknown = {"eth_type": 0x86DD, "ip_proto": 17, "udp_src": 5, "ipv6_dst": "2001:db8::1"}
    assert fab.send(0, 0, unknown).reason == "dropped by rule"
    arp = {"eth_type": 0x0806}
    trace = fab.send(0, 0, arp)
    assert trace.reason == "dropped by rule"
    assert lookup(fab.rules["t0p0g0"], arp).cookie >> routing.COOKIE_KIND_SHIFT == routing.KIND_TABLE_MISS
    # ping (echo request) still works: only ND types are dropped
    assert fab.send(0, 0, ip_packet(topo, 0, 3, 0, 0, proto=58)).delivered_to == "h3"


def _all_flows(topo):
    for src, dst in topo.iter_host_pairs():
        for plane in range(topo.spec.planes):
            for sport in range(1, 65):
                yield src, dst, plane, sport


@pytest.mark.parametrize("mode", routing.ROUTING_MODES)
def test_static_routes_lose_only_the_downed_links_paths(mode):
    spec = FabricSpec(planes=2, groups=3, spines=3, hosts_per_group=2)
    topo = Topology(spec)
    down = {frozenset(("t0p1g0", "t1p1s2"))}
    fab = FakeFabric(topo, routing.rules(topo, mode), down_links=down)
    broken = 0
    for src, dst in topo.iter_host_pairs():
        for plane in range(spec.planes):
            for spine in range(spec.spines):
                uses = frozenset(("t0p1g0", "t1p1s2")) in {
                    frozenset(l.ends()) for l in topo.path_links(src, dst, plane, spine)}
                trace = fab.send(src, plane, srv6_packet(topo, src, dst, plane, spine))
                assert (trace.delivered_to == f"h{dst}") == (not uses), (src, dst, plane, spine)
                broken += uses
    assert broken > 0
    ip_broken = 0
    for src, dst, plane, sport in _all_flows(topo):
        trace = fab.send(src, plane, ip_packet(topo, src, dst, plane, sport))
        sg, dg = topo.host(src).group, topo.host(dst).group
        uses = False
        if sg != dg:
            spine = routing.ecmp_uplink(spec, sport, sg, dg, plane=plane)
            uses = frozenset(("t0p1g0", "t1p1s2")) in {
                frozenset(l.ends()) for l in topo.path_links(src, dst, plane, spine)}
        assert (trace.delivered_to == f"h{dst}") == (not uses)
        ip_broken += uses
    assert ip_broken > 0


@pytest.mark.parametrize("down_pair", [("t0p1g0", "t1p1s2"), ("t1p0s0", "t0p0g2")])
def test_reconverged_ecmp_breaks_nothing(down_pair):
    spec = FabricSpec(planes=2, groups=3, spines=3, hosts_per_group=2)
    topo = Topology(spec)
    down = {frozenset(down_pair)}
    fab = FakeFabric(topo, routing.rules(topo, "ecmp", down_links=down), down_links=down)
    for src, dst, plane, sport in _all_flows(topo):
        for proto in (17, 6, 58):
            trace = fab.send(src, plane, ip_packet(topo, src, dst, plane, sport, proto))
            assert trace.delivered_to == f"h{dst}", (src, dst, plane, sport, proto, trace)
    # prediction follows the reconvergence, and the dead spine is no longer used
    dead_spine = int([n for n in down_pair if n.startswith("t1")][0].split("s")[-1])
    dead_plane = int(down_pair[0][3])
    for sport in range(1, 300):
        assert routing.ecmp_uplink(spec, sport, 0, 2, down, plane=dead_plane) != dead_spine


def test_srv6_ignores_down_links_and_changed_rules_only_ecmp():
    spec = FabricSpec(planes=1, groups=3, spines=2, hosts_per_group=1)
    down = {("t0p0g1", "t1p0s1")}
    assert routing.rules(spec, "srv6", down) == routing.rules(spec, "srv6")
    old = routing.switch_rules(spec, "t0p0g0", "ecmp")
    new = routing.switch_rules(spec, "t0p0g0", "ecmp", down)
    changed = routing.changed_rules(old, new)
    assert changed
    assert {routing.cookie_kind(r.cookie) for r in changed} <= {
        routing.KIND_IP_ECMP, routing.KIND_IP_ECMP_DEFAULT}
    # only buckets towards group 1 (whose spine-1 link is down) moved, all onto spine 0 port
    assert all((r.cookie >> 32) & 0xFFFF == 1 for r in changed)
    assert all(r.actions == (("output", 2),) for r in changed)
    assert routing.changed_rules(old, old) == []


def test_ecmp_uplink_argument_errors():
    spec = FabricSpec(planes=1, groups=2, spines=2, hosts_per_group=1)
    with pytest.raises(ValueError, match="same-group"):
        routing.ecmp_uplink(spec, 5, 1, 1)
    with pytest.raises(ValueError, match="dst_group"):
        routing.ecmp_uplink(spec, 5, 0, 7)
    with pytest.raises(ValueError, match="plane"):
        routing.ecmp_uplink(spec, 5, 0, 1, plane=3)
    # all spines dead: static mapping kept rather than an empty table
    dead = {("t0p0g0", "t1p0s0"), ("t0p0g0", "t1p0s1")}
    assert routing.ecmp_uplink(spec, 1, 0, 1, dead) in (0, 1)
