"""The fabric's view of its servers: which server holds each node and switch port, the Mininet
classes and keywords that put a node or a link there, and the per-server steps of a fabric's
life (its ports' commands, Open vSwitch's TLS key and controller, the bridges' removal).

On one server (no placement) every command runs on this machine, unchanged; over several
(emulation/cluster/placement.py) a node is Mininet's cluster node on its server
(emulation/cluster/remote_nodes.py), a link that crosses servers a VXLAN tunnel
(emulation/cluster/vxlan_link.py), and a root-namespace command runs on the server of the node
it concerns (emulation/cluster/server_commands.py, one ssh per server and step).

Why the controller listens on every address in a cluster: the switches of another server reach
it over the management network, at whichever address of this machine routes to that server.
OpenFlow there is TLS with client certificates of this fabric's own CA required
(emulation/network/control_secrets.py), so a peer without the switch key cannot complete a
connection on any address.
"""
from __future__ import annotations

from emulation.cluster import vxlan
from emulation.cluster.placement import Placement
from emulation.cluster.server_commands import Servers
from emulation.network import control_secrets
from model import ssh
from model.proc import run_checked
from model.topology import Topology

LOCAL = "localhost"            # Mininet's cluster name for the machine it runs on
LOOPBACK = "127.0.0.1"
ANY_ADDRESS = "0.0.0.0"


def _in_netns(pid: int, argv: list[str]) -> list[str]:
    return ["nsenter", "--target", str(pid), "--net", "--", *argv]


class FabricServers:
    """FabricServers(topo, placement or None, error type). `servers` lists them, this machine
    first."""

    def __init__(self, topo: Topology, placement: Placement | None,
                 error: type[Exception] = RuntimeError):
        self.topo = topo
        self.placement = placement if placement is not None and len(placement.servers) > 1 \
            else None
        self.error = error
        self.commands = Servers(self.placement, error) if self.placement else None
        self._node_of_intf = {}
        for link in topo.links:
            self._node_of_intf[link.a_intf] = link.a
            self._node_of_intf[link.b_intf] = link.b
        self._vni = {t.link.name: t.vni for t in self.placement.tunnels} if self.placement \
            else {}

    @property
    def clustered(self) -> bool:
        return self.placement is not None

    @property
    def servers(self) -> list[str]:
        return list(self.placement.servers) if self.placement else [LOCAL]

    def server_of(self, node: str) -> str:
        return self.placement.server_of[node] if self.placement else LOCAL

    def is_local(self, server: str) -> bool:
        return not self.placement or self.commands.is_local(server)

    def server_of_intf(self, intf: str) -> str:
        return self.server_of(self._node_of_intf[intf])

    # ------------------------------------------------------------ Mininet's keywords

    def node_params(self, name: str, host: bool) -> dict:
        """addHost/addSwitch keywords that put node `name` on its server ({} on one server)."""
        if not self.placement:
            return {}
        from emulation.cluster.remote_nodes import (  # deferred: Mininet, only over servers
            ClusterHost, ClusterOVSSwitch)
        server = self.server_of(name)
        cls = ClusterHost if host else ClusterOVSSwitch
        if self.is_local(server):
            return {"cls": cls, "server": LOCAL}
        return {"cls": cls, "server": server, "serverIP": self.commands.address(server)}

    def link_params(self, link) -> dict:
        """addLink keywords: a VXLAN tunnel when the link's ends are on two servers."""
        if not self.placement:
            return {}
        from emulation.cluster.vxlan_link import RemoteVXLANLink  # deferred: Mininet
        return {"cls": RemoteVXLANLink, "vni": self._vni.get(link.name),
                "mtu": self.topo.spec.mtu}

    # ------------------------------------------------------------ commands

    def run(self, server: str, argv: list[str], what: str = "", timeout: float = 60) -> str:
        if self.is_local(server):
            return run_checked(argv, timeout=timeout, what=what, error=self.error)
        return self.commands.run(server, argv, what, timeout)

    def run_per_server(self, argvs_by_intf: list[tuple[str, list[str]]], what: str) -> None:
        """(switch interface, argv) pairs, each run on its interface's server in order; one
        batch per remote server."""
        batches: dict[str, list[list[str]]] = {}
        for intf, argv in argvs_by_intf:
            batches.setdefault(self.server_of_intf(intf), []).append(argv)
        for server, argvs in batches.items():
            if self.is_local(server):
                for argv in argvs:
                    run_checked(argv, what=what, error=self.error)
            else:
                self.commands.run_batch(server, argvs, what)

    def in_host_argv(self, server: str, pid: int, argv: list[str]) -> list[str]:
        """argv in the network namespace of process `pid` (a host's shell) on `server`."""
        inner = _in_netns(pid, argv)
        return inner if self.is_local(server) else self.commands.argv_on(server, inner)

    def remote_nodes(self) -> dict[str, str]:
        """{node: server} of every node not on this machine (what the controller reads)."""
        return {node: server for node, server in self.placement.server_of.items()
                if not self.is_local(server)} if self.placement else {}

    def popen_in_host_argv(self, server: str, pid: int,
                           argv: list[str]) -> tuple[list[str], bool]:
        """(the argv that starts argv in a host's namespace on `server`, whether its stdin must
        be a pipe kept open). On another server the command is tied to its ssh connection
        (model/ssh.py), so killing the ssh here stops it there: it needs ssh's stdin open."""
        if self.is_local(server):
            return _in_netns(pid, argv), False
        tied = ssh.tied_to_connection(_in_netns(pid, argv))
        return self.commands.argv_on(server, tied, stdin=True), True

    def bridges_on(self, server: str) -> list[str]:
        return [sw for sw in self.topo.switches if self.server_of(sw) == server]

    # ------------------------------------------------------------ the control plane

    def controller_listen_host(self) -> str:
        return ANY_ADDRESS if self.placement else LOOPBACK

    def controller_target(self, server: str, of_port: int) -> str:
        """The controller's address as the switches of `server` reach it."""
        if self.is_local(server):
            return control_secrets.controller_target(of_port)
        route = run_checked(vxlan.route_get_argv(self.commands.address(server)),
                            what=f"the route to {server}", error=self.error)
        try:
            source = vxlan.route_source(route, self.commands.address(server))
        except vxlan.TunnelError as exc:
            raise self.error(f"the controller's address for {server}: {exc}") from None
        return f"ssl:{source}:{int(of_port)}"

    def install_switch_keys(self, pki: control_secrets.OpenFlowPki) -> None:
        """The switches' key, certificate and the fabric's CA at the same paths on every other
        server (their Open vSwitch reads them there)."""
        for server in self.servers:
            if self.is_local(server):
                continue
            for path in (pki.switch_key, pki.switch_cert, pki.ca_cert):
                with open(path) as f:
                    self.commands.put(server, path, f.read(), what="the switches' TLS files")

    def remove_switch_keys(self) -> list[str]:
        """Teardown: every server's Open vSwitch without the fabric's TLS setting, and the TLS
        files gone from the other servers (this machine's go with its secrets); returns
        errors."""
        errors = []
        for server in self.servers:
            argvs = [control_secrets.ovs_del_ssl_argv()]
            if not self.is_local(server):
                argvs.append(["rm", "-rf", control_secrets.PKI_DIR])
            for argv in argvs:
                try:
                    self.run(server, argv, what="teardown")
                except self.error as exc:
                    errors.append(str(exc))
        return errors

    def delete_bridges(self) -> list[str]:
        """Teardown: every server's bridges in one Open vSwitch transaction per server (a
        per-bridge del-br, what Mininet's stop does, is one slow transaction per bridge with
        the userspace datapath); returns errors."""
        errors = []
        for server in self.servers:
            argv = ["ovs-vsctl", "--timeout=30"]
            for sw in self.bridges_on(server):
                argv += ["--", "--if-exists", "del-br", sw]
            try:
                self.run(server, argv, what="teardown")
            except self.error as exc:
                errors.append(str(exc))
        return errors
