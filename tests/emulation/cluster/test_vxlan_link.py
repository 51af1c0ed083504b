"""Mininet's cluster RemoteLink with VXLAN ends (emulation/cluster/vxlan_link.py), on fake nodes
that record the commands each server would run."""
import pytest

from emulation.cluster import vxlan_link as L
from emulation.cluster.vxlan import TunnelError


class FakeNode:
    def __init__(self, name, server, server_ip, pid, fail_on=None):
        self.name, self.server, self.serverIP, self.pid = name, server, server_ip, pid
        self.ran, self.fail_on = [], fail_on

    def rcmd(self, cmd):
        argv = cmd.split() if isinstance(cmd, str) else list(cmd)
        self.ran.append(argv)
        if self.fail_on and self.fail_on in argv:
            return "RTNETLINK answers: File exists\r\n"
        return ""


def bare_link(node1, node2, vni=0x4D0001, mtu=9000):
    """The link object without Link.__init__'s interface set-up (which needs real nodes)."""
    link = L.RemoteVXLANLink.__new__(L.RemoteVXLANLink)
    link.node1, link.node2, link.vni, link.mtu, link.tunnel = node1, node2, vni, mtu, None
    return link


def test_a_link_across_servers_is_a_vxlan_pair_in_the_nodes_namespaces(monkeypatch):
    monkeypatch.setattr(L, "quietRun", lambda argv: "10.0.0.2 dev mgmt0 src 10.0.0.1 uid 0")
    host = FakeNode("h0", "localhost", "127.0.0.1", 101)
    switch = FakeNode("t0p1g0", "b", "10.0.0.2", 202)
    link = bare_link(host, switch)
    assert link.makeIntfPair("h0-p1", "t0p1g0-e1", addr1="02:00:00:01:00:00") == "vxlan"
    assert link.tunnel == "vxlan"
    assert host.ran[0] == ["ip", "link", "delete", "dev", "h0-p1"]
    assert host.ran[1][:12] == ["ip", "link", "add", "h0-p1", "type", "vxlan", "id",
                                str(0x4D0001), "local", "10.0.0.1", "remote", "10.0.0.2"]
    assert host.ran[2][-2:] == ["address", "02:00:00:01:00:00"]
    assert host.ran[-1] == ["ip", "link", "set", "h0-p1", "netns", "101"]
    # the remote end sends from its own address to this machine's route source
    assert switch.ran[1][8:12] == ["local", "10.0.0.2", "remote", "10.0.0.1"]
    assert switch.ran[2] == ["ip", "link", "set", "dev", "t0p1g0-e1", "mtu", "9000"]
    assert switch.ran[-1] == ["ip", "link", "set", "t0p1g0-e1", "netns", "202"]


def test_two_remote_servers_use_their_own_addresses():
    a = FakeNode("t0p0g0", "a", "10.0.0.3", 1)
    b = FakeNode("t1p0s1", "b", "10.0.0.4", 2)
    bare_link(a, b).makeIntfPair("t0p0g0-e4", "t1p0s1-e1")
    assert a.ran[1][8:12] == ["local", "10.0.0.3", "remote", "10.0.0.4"]
    assert b.ran[1][8:12] == ["local", "10.0.0.4", "remote", "10.0.0.3"]


def test_a_failed_command_names_server_and_output():
    a = FakeNode("t0p0g0", "a", "10.0.0.3", 1, fail_on="add")
    with pytest.raises(TunnelError, match="on a: RTNETLINK answers: File exists"):
        bare_link(a, FakeNode("t1p0s1", "b", "10.0.0.4", 2)).makeIntfPair("t0p0g0-e4",
                                                                         "t1p0s1-e1")


def test_a_crossing_link_without_vni_is_refused():
    with pytest.raises(TunnelError, match="needs a VNI"):
        bare_link(FakeNode("x", "a", "10.0.0.3", 1), FakeNode("y", "b", "10.0.0.4", 2),
                  vni=None).makeIntfPair("x-e1", "y-e1")


def test_a_link_on_one_server_is_the_usual_pair(monkeypatch):
    made = []
    monkeypatch.setattr(L.Link, "makeIntfPair",
                        classmethod(lambda cls, *a, **kw: made.append(a) or "veth"))
    a, b = FakeNode("h0", "b", "10.0.0.2", 1), FakeNode("t0p0g0", "b", "10.0.0.2", 2)
    link = bare_link(a, b)
    assert link.makeIntfPair("h0-p0", "t0p0g0-e1") == "veth" and link.tunnel is None
    assert made and a.ran == [] and b.ran == []
