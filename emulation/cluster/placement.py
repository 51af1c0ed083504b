"""Which server holds each switch and host of a fabric spread over several servers, and which
links cross between servers: each of those becomes a VXLAN tunnel over the management network
(emulation/cluster/vxlan.py), so it is stated and printed before a run.

Placements (`[cluster] placement`, `mrclab run --placement`), for N servers:
  plane     whole planes per server: plane p on server floor(p * N / P) of P planes (contiguous
            blocks whose sizes differ by at most one). Planes meet only at the hosts, so no
            fabric link crosses; the hosts are spread the same way by index (host n on server
            floor(n * N / H)), and a host's port to a plane held elsewhere crosses.
  pod       whole pods per server: group g, its T0 in every plane and its hosts, on server
            floor(g * N / G) of G groups; the T1s are dealt round-robin over the servers (T1
            number p * spines + s on server (p * spines + s) mod N) so each server carries its
            share of the spine. No host link crosses; a T0-T1 link crosses when its T1 is on
            another server than its pod.
  explicit  [cluster.nodes]: server = [node names or shell-style patterns such as "t0p0*" or
            "h[0-3]"]; every node of the fabric on exactly one server.
The first server is the machine `mrclab` runs on (the controller and the run directory live
there); the others are reached over ssh. One server is the single-machine fabric: nothing crosses.

Refused, with the reason: more servers than planes ("plane") or than groups ("pod"), since a
server would hold no plane or pod; an explicit map that leaves a node out, places one twice,
names a node or a server that does not exist, or leaves a server without a node.

Pure: names and arithmetic from model/topology.py only.
"""
from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field

from model.topology import Link, Topology

PLACEMENTS = ("plane", "pod", "explicit")
# VXLAN network identifiers of the tunnels: VNI_BASE + the link's index in the topology, so both
# ends of a tunnel derive the same VNI, and the fabric's tunnels stay out of the low VNIs other
# VXLAN users of the management network number theirs from.
VNI_BASE = 0x4D0000
MAX_VNI = (1 << 24) - 1               # a VNI is 24 bits (RFC 7348)
MAX_SERVERS = 64
# [user@]host: a host name (RFC 1123 labels) or an IPv4 address, and never a leading '-', which
# ssh would read as an option.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_SERVER = re.compile(rf"(?:[a-z_][a-z0-9_-]{{0,31}}@)?{_LABEL}(?:\.{_LABEL})*")
MAX_LISTED_TUNNELS = 12               # describe() lists this many per server pair, then counts


class PlacementError(ValueError):
    """A cluster that cannot be placed; the message says what is wrong and what would do."""


def parse_servers(servers) -> tuple[str, ...]:
    """The server list of `[cluster] servers` or `--servers a,b` (a list, or one comma-separated
    string): each [user@]host listed once; at least one server, at most MAX_SERVERS."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    items = [s.strip() if isinstance(s, str) else s for s in items]
    if not items or items == [""]:
        raise PlacementError("needs at least one server (the first is this machine)")
    if len(items) > MAX_SERVERS:
        raise PlacementError(f"at most {MAX_SERVERS} servers, got {len(items)}")
    seen = {}
    for s in items:
        if not isinstance(s, str) or len(s) > 253 or not _SERVER.fullmatch(s):
            raise PlacementError(f"{s!r} is not a server: use a host name or an IPv4 address, "
                                 "optionally user@ before it")
        key = s.lower()
        if key in seen:
            raise PlacementError(f"server {s!r} is listed twice")
        seen[key] = s
    return tuple(items)


@dataclass(frozen=True)
class CrossLink:
    """A link whose ends are on two servers: a VXLAN tunnel with identifier `vni`."""
    link: Link
    a_server: str
    b_server: str
    vni: int


@dataclass(frozen=True)
class Placement:
    servers: tuple[str, ...]
    mode: str
    server_of: dict = field(hash=False)     # node name -> server
    tunnels: tuple[CrossLink, ...] = ()

    def nodes_on(self, server: str) -> list[str]:
        return [n for n, s in self.server_of.items() if s == server]

    @property
    def local(self) -> str:
        """The server `mrclab` runs on."""
        return self.servers[0]

    def describe(self) -> str:
        """The placement as printed before a run: each server's nodes, then the tunnels."""
        count = len(self.server_of)
        out = [f"cluster: {len(self.servers)} servers, placement \"{self.mode}\" "
               f"({self.servers[0]} runs the controller)"]
        for server in self.servers:
            nodes = self.nodes_on(server)
            hosts = [n for n in nodes if n.startswith("h")]
            switches = [n for n in nodes if not n.startswith("h")]
            out.append(f"  {server}: {len(switches)} switches, {len(hosts)} hosts "
                       f"({len(nodes)} of {count} nodes)")
            out += _pack("    ", switches + hosts, "    ")
        hosts = sum(t.link.kind == "host" for t in self.tunnels)
        out.append(f"tunnels: {len(self.tunnels)} links cross servers (VXLAN over the "
                   f"management network): {hosts} host links, "
                   f"{len(self.tunnels) - hosts} fabric links")
        for pair, links in _by_pair(self.tunnels).items():
            names = [f"{t.link.name} (vni {t.vni})" for t in links[:MAX_LISTED_TUNNELS]]
            more = len(links) - len(names)
            items = [f"{n}," for n in names[:-1]] + names[-1:]
            if more:
                items = [f"{n}," for n in names] + [f"and {more} more"]
            out += _pack(f"  {pair[0]} <-> {pair[1]}: {len(links)}:", items, "    ")
        return "\n".join(out)

    def to_dict(self) -> dict:
        """The placement as run.json records it."""
        return {"servers": list(self.servers), "placement": self.mode,
                "nodes": {s: self.nodes_on(s) for s in self.servers},
                "tunnels": [{"link": t.link.name, "a_server": t.a_server,
                             "b_server": t.b_server, "vni": t.vni} for t in self.tunnels]}


WIDTH = 96                           # describe()'s lines


def _pack(head: str, items: list[str], indent: str) -> list[str]:
    """head, then the items separated by spaces, in lines of at most WIDTH characters cut only
    between items; the lines after the first start with indent."""
    lines, line, fresh = [], head, not head.strip()
    for item in items:
        if not fresh and len(line) + 1 + len(item) > WIDTH:
            lines.append(line)
            line, fresh = indent, True
        line = line + item if fresh else f"{line} {item}"
        fresh = False
    lines.append(line)
    return lines


def _by_pair(tunnels) -> dict[tuple[str, str], list[CrossLink]]:
    out: dict[tuple[str, str], list[CrossLink]] = {}
    for t in tunnels:
        out.setdefault(tuple(sorted((t.a_server, t.b_server))), []).append(t)
    return out


def _block(i: int, count: int, servers: tuple[str, ...]) -> str:
    """Server of item i of `count` items cut into len(servers) contiguous, balanced blocks."""
    return servers[i * len(servers) // count]


def _by_plane(topo: Topology, servers: tuple[str, ...]) -> dict[str, str]:
    spec = topo.spec
    if len(servers) > spec.planes:
        raise PlacementError(f"placement \"plane\" puts whole planes on servers: {len(servers)} "
                             f"servers for {spec.planes} planes would leave a server without "
                             f"one; use at most {spec.planes} servers, or placement \"pod\"")
    out = {h.name: _block(h.index, spec.num_hosts, servers) for h in topo.hosts}
    for sw in topo.switches.values():
        out[sw.name] = _block(sw.plane, spec.planes, servers)
    return out


def _by_pod(topo: Topology, servers: tuple[str, ...]) -> dict[str, str]:
    spec = topo.spec
    if len(servers) > spec.groups:
        raise PlacementError(f"placement \"pod\" puts whole pods (a group's T0s and hosts) on "
                             f"servers: {len(servers)} servers for {spec.groups} groups would "
                             f"leave a server without one; use at most {spec.groups} servers, "
                             f"or placement \"plane\"")
    out = {h.name: _block(h.group, spec.groups, servers) for h in topo.hosts}
    for sw in topo.switches.values():
        if sw.tier == 0:
            out[sw.name] = _block(sw.index, spec.groups, servers)
        else:
            out[sw.name] = servers[(sw.plane * spec.spines + sw.index) % len(servers)]
    return out


def _explicit(topo: Topology, servers: tuple[str, ...], nodes: dict) -> dict[str, str]:
    if not nodes:
        raise PlacementError("placement \"explicit\" needs [cluster.nodes]: server = [node "
                             "names or patterns], every node on one server")
    names = topo.node_names()
    out: dict[str, str] = {}
    for server, patterns in nodes.items():
        if server not in servers:
            raise PlacementError(f"[cluster.nodes] {server}: not one of the servers "
                                 f"({', '.join(servers)})")
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise PlacementError(f"[cluster.nodes] {server}: must be a list of node names or "
                                 f"patterns, got {patterns!r}")
        for pattern in patterns:
            matched = fnmatch.filter(names, pattern)
            if not matched:
                raise PlacementError(f"[cluster.nodes] {server}: {pattern!r} names no node "
                                     f"(hosts h0..h{len(topo.hosts) - 1}, switches "
                                     f"t0p<plane>g<group>, t1p<plane>s<spine>)")
            for name in matched:
                if name in out and out[name] != server:
                    raise PlacementError(f"[cluster.nodes]: {name} is placed on both "
                                         f"{out[name]} and {server}")
                out[name] = server
    missing = [n for n in names if n not in out]
    if missing:
        shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8
                                          else "")
        raise PlacementError(f"[cluster.nodes] places no server for {shown}: every node needs "
                             "one")
    return out


def place(topo: Topology, servers, mode: str = "plane", nodes: dict | None = None) -> Placement:
    """The placement of `topo` on `servers` (parse_servers' rules) by `mode` (PLACEMENTS);
    `nodes`: the explicit map. Raises PlacementError naming what cannot be placed."""
    servers = parse_servers(servers)
    if mode not in PLACEMENTS:
        raise PlacementError(f"placement must be one of {', '.join(PLACEMENTS)}, got {mode!r}")
    if nodes and mode != "explicit":
        raise PlacementError(f"[cluster.nodes] is the explicit placement's map: set placement = "
                             f"\"explicit\" (placement \"{mode}\" decides every node itself)")
    if len(servers) == 1:
        server_of = {name: servers[0] for name in topo.node_names()}
    elif mode == "plane":
        server_of = _by_plane(topo, servers)
    elif mode == "pod":
        server_of = _by_pod(topo, servers)
    else:
        server_of = _explicit(topo, servers, nodes or {})
    idle = [s for s in servers if s not in set(server_of.values())]
    if idle:
        raise PlacementError(f"server {idle[0]} holds no node of the fabric: leave it out of "
                             "the servers, or place nodes on it")
    if len(topo.links) + VNI_BASE > MAX_VNI:
        raise PlacementError(f"{len(topo.links)} links exceed the VXLAN identifiers from "
                             f"{VNI_BASE:#x} to {MAX_VNI:#x}")
    tunnels = tuple(CrossLink(link, server_of[link.a], server_of[link.b], VNI_BASE + i)
                    for i, link in enumerate(topo.links) if server_of[link.a] != server_of[link.b])
    return Placement(servers, mode, server_of, tunnels)


def crossings_per_packet(topo: Topology, placement: Placement) -> float:
    """Mean number of server crossings of one packet, over every ordered host pair, plane and
    spine alike (an all-to-all collective spraying every path evenly): what the management
    network carries per packet the fabric carries, in tunnelled frames."""
    total = paths = 0
    for src, dst in topo.iter_host_pairs():
        for plane in range(topo.spec.planes):
            for spine in range(topo.spec.spines):
                nodes = topo.path(src, dst, plane, spine)
                total += sum(placement.server_of[a] != placement.server_of[b]
                             for a, b in zip(nodes, nodes[1:]))
                paths += 1
    return total / paths
