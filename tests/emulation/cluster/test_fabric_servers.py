"""The fabric's view of its servers (emulation/cluster/fabric_servers.py) on the 4-host fabric
placed by hand: which server each switch port is on, the Mininet keywords of nodes and links,
the commands per server, and one server unchanged."""
import pytest

from emulation.cluster import fabric_servers as F
from emulation.cluster.placement import place
from model.topology import FabricSpec, Topology

TOPO = Topology(FabricSpec())         # 2 planes x 2 groups x 2 spines x 2 hosts, MTU 1500


def cluster(mode="plane"):
    return F.FabricServers(TOPO, place(TOPO, ["localhost", "b"], mode), error=LookupError)


def test_one_server_is_this_machine_with_mininets_own_classes():
    one = F.FabricServers(TOPO, None)
    assert not one.clustered and one.servers == ["localhost"]
    assert one.node_params("h0", host=True) == {} and one.link_params(TOPO.links[0]) == {}
    assert one.server_of_intf("t1p1s1-e2") == "localhost"
    assert one.controller_listen_host() == "127.0.0.1"
    assert one.in_host_argv("localhost", 42, ["ip", "a"]) == [
        "nsenter", "--target", "42", "--net", "--", "ip", "a"]
    assert one.bridges_on("localhost") == list(TOPO.switches)
    # a placement on one server is the same single-machine fabric
    assert not F.FabricServers(TOPO, place(TOPO, ["localhost"])).clustered


def test_plane_placement_puts_a_switch_port_on_its_planes_server():
    c = cluster()
    # plane 0 and h0, h1 on this machine; plane 1 and h2, h3 on b (test_placement's by hand)
    assert c.server_of_intf("t0p1g0-e1") == "b" and c.server_of_intf("t0p0g0-e1") == "localhost"
    assert c.server_of_intf("h0-p1") == "localhost"      # the host's own end stays with it
    assert c.bridges_on("b") == ["t0p1g0", "t0p1g1", "t1p1s0", "t1p1s1"]
    assert c.controller_listen_host() == "0.0.0.0"


def test_nodes_and_links_get_the_cluster_classes_and_a_tunnels_vni():
    from emulation.cluster.remote_nodes import ClusterHost, ClusterOVSSwitch
    from emulation.cluster.vxlan_link import RemoteVXLANLink
    c = cluster()
    assert c.node_params("h0", host=True) == {"cls": ClusterHost, "server": "localhost"}
    c.commands._addresses["b"] = "10.213.0.2"          # what `ssh -G b` would resolve
    assert c.node_params("t1p1s0", host=False) == {"cls": ClusterOVSSwitch, "server": "b",
                                                   "serverIP": "10.213.0.2"}
    h0_p1 = next(link for link in TOPO.links if link.name == "h0~t0p1g0")
    assert c.link_params(h0_p1) == {"cls": RemoteVXLANLink, "vni": 0x4D0001, "mtu": 1500}
    h0_p0 = next(link for link in TOPO.links if link.name == "h0~t0p0g0")
    assert c.link_params(h0_p0)["vni"] is None          # same server: a veth pair


def test_commands_go_to_the_server_of_their_port(monkeypatch):
    c = cluster("pod")
    sent = []
    monkeypatch.setattr(c.commands, "run_batch",
                        lambda server, argvs, what: sent.append((server, argvs)))
    c.run_per_server([("t1p0s1-e1", ["tc", "a"]), ("t0p0g1-e1", ["tc", "b"]),
                      ("t1p1s1-e1", ["tc", "c"])], "shaping")
    # pod: group 1 (t0p*g1) on b; T1 number p x spines + s on server (2p + s) mod 2: the s1 T1s
    # on b
    assert sent == [("b", [["tc", "a"], ["tc", "b"], ["tc", "c"]])]
    with pytest.raises(LookupError, match="exit 1"):
        c.run_per_server([("t0p0g0-e1", ["false"])], "shaping")


def test_a_process_in_a_host_of_another_server_is_tied_to_its_ssh():
    import shlex
    c = cluster()
    here, tied = c.popen_in_host_argv("localhost", 42, ["tcpdump", "-i", "h0-p0"])
    assert here == ["nsenter", "--target", "42", "--net", "--", "tcpdump", "-i", "h0-p0"]
    assert not tied
    there, tied = c.popen_in_host_argv("b", 42, ["tcpdump", "-i", "h2-p0"])
    assert tied and there[0] == "ssh" and "-n" not in there      # its stdin is the tie
    words = shlex.split(there[-1])
    assert words[words.index("tied") + 1:] == ["nsenter", "--target", "42", "--net", "--",
                                               "tcpdump", "-i", "h2-p0"]
