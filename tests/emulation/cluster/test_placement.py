"""Placement of a fabric on servers (emulation/cluster/placement.py): each rule's result on small
fabrics worked out by hand, the tunnels it implies, and every refusal."""
import pytest

from emulation.cluster import placement as P
from model.topology import FabricSpec, Topology

# 2 planes x 2 groups x 2 spines x 2 hosts: h0..h3, 8 switches; topology.links lists the host
# links first (h0-p0, h0-p1, h1-p0, ...: index 2n + p), then the fabric links.
SMALL = Topology(FabricSpec())


def servers_of(placement, names):
    return [placement.server_of[n] for n in names]


def test_plane_puts_whole_planes_on_servers_and_spreads_the_hosts():
    pl = P.place(SMALL, ["a", "b"], "plane")
    assert set(pl.nodes_on("a")) == {"t0p0g0", "t0p0g1", "t1p0s0", "t1p0s1", "h0", "h1"}
    assert set(pl.nodes_on("b")) == {"t0p1g0", "t0p1g1", "t1p1s0", "t1p1s1", "h2", "h3"}
    # a host's port to the other server's plane crosses; no fabric link does
    assert [t.link.name for t in pl.tunnels] == ["h0~t0p1g0", "h1~t0p1g0", "h2~t0p0g1",
                                                 "h3~t0p0g1"]
    assert [t.vni - P.VNI_BASE for t in pl.tunnels] == [1, 3, 4, 6]
    assert [(t.a_server, t.b_server) for t in pl.tunnels] == [("a", "b"), ("a", "b"),
                                                              ("b", "a"), ("b", "a")]


def test_plane_blocks_are_contiguous_and_balanced():
    """4 planes on 3 servers: plane p on floor(3p / 4) = 0, 0, 1, 2; host n of 4 likewise."""
    topo = Topology(FabricSpec(planes=4, groups=2, hosts_per_group=2))
    pl = P.place(topo, ["a", "b", "c"], "plane")
    assert servers_of(pl, ["t0p0g0", "t0p1g0", "t0p2g0", "t1p3s1"]) == ["a", "a", "b", "c"]
    assert servers_of(pl, ["h0", "h1", "h2", "h3"]) == ["a", "a", "b", "c"]


def test_pod_keeps_hosts_with_their_t0s_and_deals_the_t1s():
    pl = P.place(SMALL, ["a", "b"], "pod")
    assert servers_of(pl, ["h0", "h1", "t0p0g0", "t0p1g0"]) == ["a"] * 4
    assert servers_of(pl, ["h2", "h3", "t0p0g1", "t0p1g1"]) == ["b"] * 4
    # T1 number p * spines + s, round-robin: 0 -> a, 1 -> b, 2 -> a, 3 -> b
    assert servers_of(pl, ["t1p0s0", "t1p0s1", "t1p1s0", "t1p1s1"]) == ["a", "b", "a", "b"]
    assert sorted(t.link.name for t in pl.tunnels) == [
        "t0p0g0~t1p0s1", "t0p0g1~t1p0s0", "t0p1g0~t1p1s1", "t0p1g1~t1p1s0"]
    assert all(t.link.kind == "fabric" for t in pl.tunnels)


def test_pod_deals_the_t1s_of_every_plane_in_one_round():
    """3 groups on 3 servers, 2 planes x 2 spines: T1 numbers 0, 1, 2, 3 on a, b, c, a, so
    plane 1's first spine goes to c, which plane 0's spines leave out."""
    topo = Topology(FabricSpec(groups=3))
    pl = P.place(topo, ["a", "b", "c"], "pod")
    assert servers_of(pl, ["t1p0s0", "t1p0s1", "t1p1s0", "t1p1s1"]) == ["a", "b", "c", "a"]


def test_pod_blocks_of_three_groups_on_two_servers():
    topo = Topology(FabricSpec(groups=3))        # group g on floor(2g / 3) = 0, 0, 1
    pl = P.place(topo, ["a", "b"], "pod")
    assert servers_of(pl, ["t0p0g0", "t0p0g1", "t0p0g2", "h4", "h5"]) == ["a", "a", "b", "b", "b"]


def test_explicit_map_with_patterns_equals_the_plane_placement():
    nodes = {"a": ["t*p0*", "h0", "h1"], "b": ["t*p1*", "h[23]"]}
    assert (P.place(SMALL, ["a", "b"], "explicit", nodes).server_of
            == P.place(SMALL, ["a", "b"], "plane").server_of)


def test_one_server_is_the_single_machine_fabric():
    pl = P.place(SMALL, ["localhost"], "pod")
    assert pl.tunnels == () and set(pl.server_of.values()) == {"localhost"}


@pytest.mark.parametrize("servers,mode,nodes,words", [
    (["a", "b", "c"], "plane", None, "3 servers for 2 planes"),
    (["a", "b", "c"], "pod", None, "3 servers for 2 groups"),
    (["a", "b"], "explicit", None, "needs [cluster.nodes]"),
    (["a", "b"], "plane", {"a": ["h0"]}, "set placement = \"explicit\""),
    (["a", "b"], "explicit", {"a": ["t*", "h*"], "c": ["h0"]}, "c: not one of the servers"),
    (["a", "b"], "explicit", {"a": ["t*", "h*"], "b": ["h9"]}, "'h9' names no node"),
    (["a", "b"], "explicit", {"a": ["t*", "h*"], "b": ["h0"]}, "h0 is placed on both a and b"),
    (["a", "b"], "explicit", {"a": ["t*"], "b": ["h0", "h1"]}, "no server for h2, h3"),
    (["a", "b"], "explicit", {"a": ["t*", "h*"]}, "server b holds no node"),
    (["a", "b"], "explicit", {"a": "t*"}, "must be a list"),
    (["a", "b"], "ring", None, "must be one of plane, pod, explicit"),
])
def test_impossible_placements_are_refused_with_the_reason(servers, mode, nodes, words):
    with pytest.raises(P.PlacementError) as info:
        P.place(SMALL, servers, mode, nodes)
    assert words in str(info.value)


def test_server_lists():
    assert P.parse_servers("localhost, root@10.0.0.2") == ("localhost", "root@10.0.0.2")
    assert P.parse_servers(["a.example.org"]) == ("a.example.org",)
    for bad, words in (("", "at least one"), ("a,A", "listed twice"),
                       ("-oProxyCommand=x", "is not a server"), ("a b", "is not a server"),
                       ([3], "is not a server"), ("a," * 65, "at most 64")):
        with pytest.raises(P.PlacementError) as info:
            P.parse_servers(bad)
        assert words in str(info.value)


def test_description_names_servers_nodes_and_tunnels():
    text = P.place(SMALL, ["a", "b"], "plane").describe()
    assert 'cluster: 2 servers, placement "plane" (a runs the controller)' in text
    assert "a: 4 switches, 2 hosts (6 of 12 nodes)" in text
    assert "tunnels: 4 links cross servers" in text and "4 host links, 0 fabric links" in text
    assert f"h0~t0p1g0 (vni {0x4D0001})" in text


def test_description_cuts_a_long_tunnel_list():
    topo = Topology(FabricSpec(groups=4, hosts_per_group=4))    # 16 hosts, one crossing each
    text = P.place(topo, ["a", "b"], "plane").describe()
    assert "a <-> b: 16:" in text and "and 4 more" in text


def test_record_lists_every_node_and_tunnel():
    rec = P.place(SMALL, ["a", "b"], "pod").to_dict()
    assert rec["placement"] == "pod" and len(rec["nodes"]["a"]) + len(rec["nodes"]["b"]) == 12
    assert {"link": "t0p0g0~t1p0s1", "a_server": "a", "b_server": "b",
            "vni": 0x4D0000 + 9} in rec["tunnels"]


def test_crossings_per_packet_by_hand():
    """plane: a packet crosses once at each end whose host is not on its plane's server; each end
    is on it for half the hosts: 1 per packet. pod: a packet between pods crosses once (its T1
    shares a server with one of the two pods), within a pod never: 8 of 12 host pairs, 2/3."""
    assert P.crossings_per_packet(SMALL, P.place(SMALL, ["a", "b"], "plane")) == 1.0
    assert P.crossings_per_packet(SMALL, P.place(SMALL, ["a", "b"], "pod")) == pytest.approx(2 / 3)
    assert P.crossings_per_packet(SMALL, P.place(SMALL, ["a"], "plane")) == 0.0
