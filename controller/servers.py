"""The nodes of a fabric spread over several servers that are not on this machine, and how the
controller's commands reach them: a fault on a switch port or a host of another server runs
there, over mrclab's ssh as root (model/ssh.py), in the same namespace it would use here.

The fabric writes the map (node -> server, for the other servers' nodes only) into a JSON file
the controller reads at start (`--remote-nodes-json`); without one every node is here. A host
of another server is entered there by its shell's PID in that server's PID namespace, which
the controller cannot open a handle on as it does for a host here
(controller/host_namespaces.py): it keeps the number, checked to be a positive integer.
"""
from __future__ import annotations

import json

from model import ssh


class RemoteNodes:
    """RemoteNodes({node: server}) for the nodes on other servers; RemoteNodes() for none."""

    def __init__(self, server_of: dict[str, str] | None = None):
        self._server_of = dict(server_of or {})

    @classmethod
    def from_file(cls, path: str | None, topo) -> "RemoteNodes":
        """The fabric's map; ValueError naming what is wrong in it."""
        if not path:
            return cls()
        with open(path) as f:
            data = json.load(f)
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a JSON object {{node: server}} expected")
        known = set(topo.node_names())
        for node, server in data.items():
            if node not in known:
                raise ValueError(f"{path}: {node!r} is not a node of the fabric")
            if not isinstance(server, str) or not server:
                raise ValueError(f"{path}: the server of {node} must be a name, got {server!r}")
        return cls(data)

    def server_of(self, node: str | None) -> str | None:
        """The node's server, None when it is on this machine (or no node is named)."""
        return self._server_of.get(node) if node is not None else None

    def is_remote(self, node: str | None) -> bool:
        return self.server_of(node) is not None

    def argv(self, node: str | None, argv: list[str]) -> list[str]:
        """argv as it runs for `node`: unchanged here, over ssh as root on its server."""
        server = self.server_of(node)
        return list(argv) if server is None else ssh.root_argv(server, list(argv))

    def host_pids(self, topo, pids: dict) -> dict[str, int]:
        """The other servers' hosts among POST /hosts' {host: pid}, each pid checked; the rest
        is this machine's (controller/host_namespaces.py)."""
        out = {}
        for name, pid in pids.items():
            if not self.is_remote(name):
                continue
            try:
                topo.host(name)
            except (KeyError, TypeError, ValueError):
                raise ValueError(f"{name} is not a host of the fabric") from None
            if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
                raise ValueError(f"pid of {name} must be a positive integer, got "
                                 f"{repr(pid)[:80]}")
            out[name] = pid
        return out
