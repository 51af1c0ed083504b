"""Mininet's cluster RemoteLink (mininet.examples.cluster) with VXLAN tunnels: a link whose
two nodes are on one server is the usual veth pair; across servers each end is a vxlan device
(emulation/cluster/vxlan.py) made in its server's root namespace, over ssh for a remote one
(the node's rcmd), then moved into its node's namespace and named as the link's interface.

Why a subclass: Mininet's own tunnels are ssh taps (a userspace copy of every frame through
ssh) and GRE (a kernel module this project's kernels may lack); VXLAN is in the kernel and
plain UDP. The VNI comes from the placement, so both ends agree without a counter.
"""
from __future__ import annotations

from mininet.examples.cluster import RemoteLink
from mininet.link import Link
from mininet.util import quietRun

from emulation.cluster import vxlan

LOCAL = "localhost"          # Mininet's cluster name of the machine it runs on


class RemoteVXLANLink(RemoteLink):
    """RemoteLink(node1, node2, vni=..., mtu=..., **Link's keywords)."""

    def __init__(self, node1, node2, vni: int | None = None, mtu: int = 1500, **kwargs):
        self.vni, self.mtu = vni, mtu
        RemoteLink.__init__(self, node1, node2, **kwargs)

    def makeIntfPair(self, intfname1, intfname2, addr1=None, addr2=None,  # noqa: N802 Mininet's
                     node1=None, node2=None, deleteIntfs=True):
        node1 = self.node1 if node1 is None else node1
        node2 = self.node2 if node2 is None else node2
        if getattr(node1, "server", LOCAL) == getattr(node2, "server", LOCAL):
            return Link.makeIntfPair(intfname1, intfname2, addr1, addr2, node1, node2,
                                     deleteIntfs=deleteIntfs)
        self.tunnel = self.makeTunnel(node1, node2, intfname1, intfname2, addr1, addr2)
        return self.tunnel

    def makeTunnel(self, node1, node2, intfname1, intfname2,  # noqa: N802 Mininet's name
                   addr1=None, addr2=None):
        """Both ends, each on its own server; returns "vxlan" (stop() then deletes them)."""
        if self.vni is None:
            raise vxlan.TunnelError(f"the link {intfname1} ~ {intfname2} crosses servers and "
                                    "needs a VNI (the placement's)")
        for node, name, mac, peer in ((node1, intfname1, addr1, node2),
                                      (node2, intfname2, addr2, node1)):
            local, remote = self.server_address(node, peer), self.server_address(peer, node)
            node.rcmd(vxlan.delete_argv(name))      # a crashed run's end, if any; else an error
            for argv in vxlan.add_argv(name, self.vni, local, remote, self.mtu, mac):
                out = node.rcmd(argv).strip()
                if out:
                    raise vxlan.TunnelError(f"{' '.join(argv)} on {node.server}: {out}")
            self.moveIntf(name, node)
        return "vxlan"

    @staticmethod
    def server_address(node, peer) -> str:
        """The address `node`'s tunnel end sends from: its server's address, or on the machine
        Mininet runs on, the source address of the route to the peer's server."""
        if getattr(node, "server", LOCAL) != LOCAL:
            return node.serverIP
        out = quietRun(vxlan.route_get_argv(peer.serverIP))
        return vxlan.route_source(out, peer.serverIP)

    def stop(self):
        if self.tunnel:
            self.intf1.delete()
            self.intf2.delete()
        else:
            Link.stop(self)
        self.tunnel = None
