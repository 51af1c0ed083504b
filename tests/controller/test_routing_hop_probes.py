"""Per-hop self-probes through the routing rules (controller/routing.py), followed through the
fake OpenFlow fabric, which keeps OpenFlow's rule that a plain output never goes back out of
the ingress port."""
import pytest

from controller import routing
from model.topology import FabricSpec, Topology
from tests.helpers.fakeoftable import FakeFabric

SIZES = [
    FabricSpec(planes=1, groups=1, spines=1, hosts_per_group=2),
    FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2),
    FabricSpec(planes=4, groups=3, spines=3, hosts_per_group=3),
]


def hop_packet(topo, host, plane, spine):
    return {"eth_type": 0x86DD, "ip_proto": 41,
            "ipv6_dst": topo.hop_container(host, plane, spine),
            "ipv6_src": topo.nic_addr(host, plane)}


@pytest.mark.parametrize("spec", SIZES, ids=lambda s: f"{s.planes}x{s.groups}x{s.spines}x{s.hosts_per_group}")
@pytest.mark.parametrize("mode", routing.ROUTING_MODES)
def test_every_host_bounces_off_its_t0_and_every_t1_on_every_plane(spec, mode):
    topo = Topology(spec)
    fab = FakeFabric(topo, routing.rules(topo, mode))
    for host in topo.hosts:
        for plane in range(spec.planes):
            for spine in [None, *range(spec.spines)]:
                trace = fab.send(host.index, plane, hop_packet(topo, host.index, plane, spine))
                assert trace.delivered_to == host.name, (spine, trace)
                assert trace.nodes == topo.hop_path(host.index, plane, spine)


def test_the_hop_paths_by_hand():
    """h3 is group 1, local 1 on the 2x2x2x2 fabric: its T0 on plane 1 is t0p1g1."""
    topo = Topology(SIZES[1])
    fab = FakeFabric(topo, routing.rules(topo))
    assert fab.send(3, 1, hop_packet(topo, 3, 1, None)).nodes == ["h3", "t0p1g1", "h3"]
    assert fab.send(3, 1, hop_packet(topo, 3, 1, 0)).nodes == [
        "h3", "t0p1g1", "t1p1s0", "t0p1g1", "h3"]
    assert [link.name for link in topo.hop_links(3, 1, 0)] == ["h3~t0p1g1", "t0p1g1~t1p1s0"]
    assert [link.name for link in topo.hop_links(3, 1, None)] == ["h3~t0p1g1"]


def test_without_the_hop_rules_no_probe_comes_back():
    """The host-to-host routes alone send a bounce out of its ingress port, which OpenFlow
    refuses: the hop rules are what makes the probes possible."""
    topo = Topology(SIZES[1])
    kinds = (routing.KIND_HOP_T0, routing.KIND_HOP_T1)
    rules = {sw: [r for r in rs if routing.cookie_kind(r.cookie) not in kinds]
             for sw, rs in routing.rules(topo).items()}
    fab = FakeFabric(topo, rules)
    for spine in (None, 0, 1):
        assert fab.send(0, 0, hop_packet(topo, 0, 0, spine)).delivered_to is None


def test_the_hop_rules_count():
    """Per T0: one T0 turn per host port and one uplink rule per (host port, spine); per T1: one
    turn per down port. 2 hosts x (1 + 2 spines) = 6 on a T0, 2 groups on a T1."""
    topo = Topology(SIZES[1])
    rules = routing.rules(topo)
    hop = {sw: [r for r in rs if routing.cookie_kind(r.cookie) in
                (routing.KIND_HOP_T0, routing.KIND_HOP_T1)] for sw, rs in rules.items()}
    assert len(hop["t0p0g1"]) == 6 and len(hop["t1p1s0"]) == 2
    assert all(r.match["in_port"] for rs in hop.values() for r in rs)
