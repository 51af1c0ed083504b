"""A scenario's [cluster] table: the servers its fabric is spread over and the placement
(emulation/cluster/placement.py), checked against the fabric when the file is read, so an
impossible placement fails with its line before anything starts.

    [cluster]
    servers = ["localhost", "10.0.0.2"]     # the first is the machine mrclab runs on
    placement = "pod"                       # plane (default) | pod | explicit
    [cluster.nodes]                         # explicit only: server = [names or patterns]
    localhost = ["t*p0*", "h0", "h1"]
    "10.0.0.2" = ["t*p1*", "h2", "h3"]
"""
from __future__ import annotations

from dataclasses import dataclass, field

from emulation.cluster.placement import Placement, PlacementError, parse_servers, place
from emulation.config.scenario_schema import CLUSTER, Checker
from model.topology import Topology


@dataclass(frozen=True)
class ClusterSpec:
    servers: tuple[str, ...]
    placement: str = CLUSTER["placement"].default
    nodes: dict = field(default_factory=dict, hash=False)    # explicit: server -> patterns

    def place(self, topo: Topology) -> Placement:
        return place(topo, self.servers, self.placement, self.nodes)


def parse_cluster(data: dict, ck: Checker, topo: Topology) -> ClusterSpec | None:
    """[cluster] of the parsed file, placed on `topo` once to check it; None when absent.
    Problems are noted on `ck` with the key's line."""
    if "cluster" not in data:
        return None
    values = ck.table(data, "cluster", CLUSTER)
    raw = data["cluster"]
    if not isinstance(raw, dict):
        return None                       # ck.table noted it
    if "servers" not in raw:
        ck.note("[cluster] servers", "is required: the servers to spread the fabric over, the "
                "first being the machine mrclab runs on", ck.loc.table("cluster"))
        return None
    if "servers" not in values:
        return None                       # a type error, noted
    try:
        servers = parse_servers(values["servers"])
    except PlacementError as exc:
        ck.note("[cluster] servers", str(exc), ck.loc.key("cluster", "servers"))
        return None
    nodes = raw.get("nodes", {})
    if not isinstance(nodes, dict):
        return None                       # ck.table noted it
    spec = ClusterSpec(servers, values.get("placement", CLUSTER["placement"].default), nodes)
    try:
        spec.place(topo)
    except PlacementError as exc:
        line = (ck.loc.table("cluster.nodes") or ck.loc.key("cluster", "nodes")
                if "[cluster.nodes]" in str(exc) else
                ck.loc.key("cluster", "placement") or ck.loc.key("cluster", "servers"))
        ck.note("[cluster]", str(exc), line)
        return None
    return spec
