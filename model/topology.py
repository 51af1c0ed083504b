"""Pure description of a multi-plane two-tier Clos fabric.

Everything here is computed from the spec alone, before any switch exists: node names,
interface names (<= 15 characters, the Linux limit), OpenFlow datapath ids, port numbers,
MAC and IPv6 addresses, SRv6 uSID containers and the entropy-value (EV) -> path mapping.
No Mininet, os-ken or socket import: the controller, the Mininet builder, the endpoints and
the analysis all derive the same facts from the same spec.

Shape (MRC paper, OCP MRC 1.0): every host has one NIC port per plane; port p attaches to
plane p's T0 (leaf) of the host's group; every T0 links to every T1 (spine) of its plane;
planes meet only at the hosts.

Numbering (all zero-based in names, one-based for OpenFlow ports):
  host      h{n}            n = group * hosts_per_group + index
  host NIC  h{n}-p{plane}
  T0        t0p{p}g{g}      ports 1..H to hosts (port i+1 = host index i), H+1..H+S to T1 s
  T1        t1p{p}s{s}      ports 1..G to the T0 of group g (port g+1)
  switch interface  {switch}-e{port}
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Iterator

# The UDP port and the EV's bit fields are the wire table's (model/wire.py); re-exported here
# for the modules that map EVs to paths.
from model.wire import (EV_PLANE_MASK, EV_PLANE_SHIFT, EV_SPINE_MASK,  # noqa: F401
                        EV_SPINE_SHIFT, ROCE_UDP_PORT)

# Ceilings keep every derived name and address field in range (interface names <= 15 chars,
# one hex digit of plane in a uSID, one byte each of group/spine/host in uSIDs and MACs).
MAX_PLANES = 8
MAX_GROUPS = 64
MAX_SPINES = 64
MAX_HOSTS_PER_GROUP = 32
# Port MTU bounds: IPv6's minimum link MTU (RFC 8200) up to a 9000-byte jumbo frame.
DEFAULT_MTU = 1500
MIN_MTU = 1280
MAX_MTU = 9000
# One link's one-way propagation delay, ms of the spec's world (model/propagation.py): a
# scenario declares at most SCENARIO_MAX_LINK_DELAY_MS per link; the wall spec of a run at time
# scale k holds k times that, so the spec itself takes up to k = 1000 times it.
SCENARIO_MAX_LINK_DELAY_MS = 100.0
MAX_LINK_DELAY_MS = 1000 * SCENARIO_MAX_LINK_DELAY_MS

# SRv6 uSID container: 32-bit locator block, then one 16-bit uSID per hop.
# The block fcbb:bb00::/32 is the documentation example of RFC 9800 (uSID) style deployments.
USID_LOCATOR = 0xFCBBBB00
USID_T0_BASE = 0x1000   # 0x1000 | plane << 8 | group
USID_T1_BASE = 0x2000   # 0x2000 | plane << 8 | spine
USID_HOST_BASE = 0x3000  # 0x3000 | host index within its group (last-hop downlink)

# EV layout: model/wire.py (EV). Entropy is never 0 so the UDP source port is never 0. Senders
# draw it from 0xC000..0xFFFF, the range Linux's RoCEv2 stack uses for its entropy source ports
# (rdma_flow_label_to_udp_sport), so capture tools never mistake an EV for a well-known port
# (53 -> DNS).
ENTROPY_MIN = 0xC000
ENTROPY_MAX = 0xFFFF


class SpecError(ValueError):
    """A fabric spec that cannot be built; the message names the offending field."""


@dataclass(frozen=True)
class FabricSpec:
    """Size and link rates of the fabric. Rates in Mbit/s (HTB on both ends of each link)."""

    planes: int = 2
    groups: int = 2
    spines: int = 2
    hosts_per_group: int = 2
    host_link_mbit: float = 100.0
    fabric_link_mbit: float = 100.0
    # IP MTU of every host and switch port. Userspace OVS costs per packet, not per byte, so
    # bigger frames carry more data per unit of CPU (RoCE's own MTU is 4096 B of payload).
    mtu: int = DEFAULT_MTU
    # One-way propagation delay of every host-T0 link and every T0-T1 link, ms: emulated in the
    # endpoints' receive path (model/propagation.py), not by the switches.
    host_link_delay_ms: float = 0.0
    fabric_link_delay_ms: float = 0.0

    def __post_init__(self) -> None:
        for name, value, ceiling in (
            ("planes", self.planes, MAX_PLANES),
            ("groups", self.groups, MAX_GROUPS),
            ("spines", self.spines, MAX_SPINES),
            ("hosts_per_group", self.hosts_per_group, MAX_HOSTS_PER_GROUP),
        ):
            if isinstance(value, bool) or not isinstance(value, int):
                raise SpecError(f"{name} must be an integer, got {value!r}")
            if not 1 <= value <= ceiling:
                raise SpecError(f"{name} must be between 1 and {ceiling}, got {value}")
        for name, value in (("host_link_mbit", self.host_link_mbit),
                            ("fabric_link_mbit", self.fabric_link_mbit)):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise SpecError(f"{name} must be a number, got {value!r}")
            if not 0.1 <= value <= 10000:
                raise SpecError(f"{name} must be between 0.1 and 10000 Mbit/s, got {value}")
        if isinstance(self.mtu, bool) or not isinstance(self.mtu, int) or not (
                MIN_MTU <= self.mtu <= MAX_MTU):
            raise SpecError(f"mtu must be an integer number of bytes between {MIN_MTU} and "
                            f"{MAX_MTU}, got {self.mtu!r}")
        for name, value in (("host_link_delay_ms", self.host_link_delay_ms),
                            ("fabric_link_delay_ms", self.fabric_link_delay_ms)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    0 <= value <= MAX_LINK_DELAY_MS):
                raise SpecError(f"{name} must be a number of ms between 0 and "
                                f"{MAX_LINK_DELAY_MS:g}, got {value!r}")
        if self.num_hosts < 2:
            raise SpecError("the fabric needs at least 2 hosts (groups * hosts_per_group >= 2)")

    @property
    def num_hosts(self) -> int:
        return self.groups * self.hosts_per_group

    def to_dict(self) -> dict:
        return {
            "planes": self.planes, "groups": self.groups, "spines": self.spines,
            "hosts_per_group": self.hosts_per_group,
            "host_link_mbit": self.host_link_mbit, "fabric_link_mbit": self.fabric_link_mbit,
            "mtu": self.mtu, "host_link_delay_ms": self.host_link_delay_ms,
            "fabric_link_delay_ms": self.fabric_link_delay_ms,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "FabricSpec":
        known = set(cls.__dataclass_fields__)
        unknown = set(data) - known
        if unknown:
            raise SpecError(f"unknown fabric key(s): {', '.join(sorted(unknown))}; "
                            f"known: {', '.join(sorted(known))}")
        return cls(**data)

    @classmethod
    def from_fabric_table(cls, table: dict) -> "FabricSpec":
        """The spec in a scenario's [fabric] table or a run's saved spec: keys that are not
        spec fields (routing, trimming, buffer sizes) belong to others and are ignored; a bad
        value raises SpecError (a wrong type too)."""
        known = set(cls.__dataclass_fields__)
        try:
            return cls(**{k: v for k, v in table.items() if k in known})
        except TypeError as exc:
            raise SpecError(f"fabric description unusable: {exc}") from None


# ---------------------------------------------------------------- names


@dataclass(frozen=True)
class Host:
    index: int          # global host number n
    group: int
    local: int          # index within the group

    @property
    def name(self) -> str:
        return f"h{self.index}"


def host_name(n: int) -> str:
    return f"h{n}"


def host_intf(n: int, plane: int) -> str:
    return f"h{n}-p{plane}"


def t0_name(plane: int, group: int) -> str:
    return f"t0p{plane}g{group}"


def t1_name(plane: int, spine: int) -> str:
    return f"t1p{plane}s{spine}"


def switch_intf(switch: str, port: int) -> str:
    return f"{switch}-e{port}"


@dataclass(frozen=True)
class Switch:
    name: str
    tier: int           # 0 = T0 (leaf), 1 = T1 (spine)
    plane: int
    index: int          # group for T0, spine for T1
    dpid: int

    @property
    def usid(self) -> int:
        base = USID_T0_BASE if self.tier == 0 else USID_T1_BASE
        return base | (self.plane << 8) | self.index


@dataclass(frozen=True)
class Link:
    """One physical link. a/b are node names; ports are OpenFlow port numbers (0 for a host end)."""

    a: str
    a_port: int
    a_intf: str
    b: str
    b_port: int
    b_intf: str
    plane: int
    kind: str           # "host" (host - T0) or "fabric" (T0 - T1)
    mbit: float

    @property
    def name(self) -> str:
        return f"{self.a}~{self.b}"

    def ends(self) -> tuple[str, str]:
        return self.a, self.b


class Topology:
    """All derived facts of one FabricSpec."""

    def __init__(self, spec: FabricSpec):
        self.spec = spec
        s = spec
        self.hosts = [Host(index=g * s.hosts_per_group + i, group=g, local=i)
                      for g in range(s.groups) for i in range(s.hosts_per_group)]
        self.switches: dict[str, Switch] = {}
        for p in range(s.planes):
            for g in range(s.groups):
                name = t0_name(p, g)
                self.switches[name] = Switch(name, 0, p, g, dpid_of(0, p, g))
            for sp in range(s.spines):
                name = t1_name(p, sp)
                self.switches[name] = Switch(name, 1, p, sp, dpid_of(1, p, sp))
        self.links: list[Link] = []
        for h in self.hosts:
            for p in range(s.planes):
                t0 = t0_name(p, h.group)
                port = t0_host_port(s, h.local)
                self.links.append(Link(h.name, 0, host_intf(h.index, p), t0, port,
                                       switch_intf(t0, port), p, "host", s.host_link_mbit))
        for p in range(s.planes):
            for g in range(s.groups):
                t0 = t0_name(p, g)
                for sp in range(s.spines):
                    t1 = t1_name(p, sp)
                    up = t0_uplink_port(s, sp)
                    down = t1_down_port(g)
                    self.links.append(Link(t0, up, switch_intf(t0, up), t1, down,
                                           switch_intf(t1, down), p, "fabric", s.fabric_link_mbit))
        self._links_by_pair = {}
        for link in self.links:
            self._links_by_pair[frozenset(link.ends())] = link
        self._hosts_by_name = {h.name: h for h in self.hosts}

    # -- lookup

    def host(self, name_or_index) -> Host:
        if isinstance(name_or_index, int):
            if not 0 <= name_or_index < len(self.hosts):
                raise KeyError(f"no host {name_or_index}; hosts are h0..h{len(self.hosts) - 1}")
            return self.hosts[name_or_index]
        try:
            return self._hosts_by_name[name_or_index]
        except KeyError:
            raise KeyError(f"no host named {name_or_index!r}; hosts are "
                           f"h0..h{len(self.hosts) - 1}") from None

    def switch(self, name: str) -> Switch:
        try:
            return self.switches[name]
        except KeyError:
            raise KeyError(f"no switch named {name!r}; switches are "
                           f"{', '.join(sorted(self.switches))}") from None

    def node_names(self) -> list[str]:
        return [h.name for h in self.hosts] + list(self.switches)

    def link(self, a: str, b: str) -> Link:
        """The link between two nodes, in either order; KeyError naming both if there is none."""
        for n in (a, b):
            if n not in self._hosts_by_name and n not in self.switches:
                raise KeyError(f"no node named {n!r} in this fabric")
        try:
            return self._links_by_pair[frozenset((a, b))]
        except KeyError:
            raise KeyError(f"no link between {a!r} and {b!r}") from None

    def links_of(self, node: str) -> list[Link]:
        return [link for link in self.links if node in link.ends()]

    def switch_ports(self, switch: str) -> dict[int, Link]:
        """OpenFlow port number -> link, for one switch."""
        out = {}
        for link in self.links_of(switch):
            out[link.a_port if link.a == switch else link.b_port] = link
        return out

    # -- addresses

    def nic_addr(self, host: int, plane: int) -> str:
        return nic_addr(self.host(host), plane)

    def nic_mac(self, host: int, plane: int) -> str:
        return nic_mac(self.host(host), plane)

    # -- paths

    def path(self, src: int, dst: int, plane: int, spine: int) -> list[str]:
        """Node names a packet visits from host src to host dst on (plane, spine)."""
        hs, hd = self.host(src), self.host(dst)
        self._check_plane_spine(plane, spine)
        if hs.group == hd.group:
            return [hs.name, t0_name(plane, hs.group), hd.name]
        return [hs.name, t0_name(plane, hs.group), t1_name(plane, spine),
                t0_name(plane, hd.group), hd.name]

    def path_links(self, src: int, dst: int, plane: int, spine: int) -> list[Link]:
        nodes = self.path(src, dst, plane, spine)
        return [self.link(a, b) for a, b in zip(nodes, nodes[1:])]

    def usid_container(self, src: int, dst: int, plane: int, spine: int) -> str:
        """Outer IPv6 destination: locator + [src T0, T1 (0 if same group), dst T0, downlink]."""
        hs, hd = self.host(src), self.host(dst)
        self._check_plane_spine(plane, spine)
        src_t0 = USID_T0_BASE | plane << 8 | hs.group
        dst_t0 = USID_T0_BASE | plane << 8 | hd.group
        t1 = 0 if hs.group == hd.group else USID_T1_BASE | plane << 8 | spine
        down = USID_HOST_BASE | hd.local
        return usid_address([src_t0, t1, dst_t0, down])

    def hop_path(self, host: int, plane: int, spine: int | None) -> list[str]:
        """Node names a per-hop self-probe of `host` visits on `plane` (Clustermapper's hop
        probes): host -> T0 -> host when spine is None, host -> T0 -> T1 `spine` -> T0 -> host
        otherwise. It tests the hop's links and nothing else."""
        h = self.host(host)
        self._check_plane_spine(plane, 0 if spine is None else spine)
        t0 = t0_name(plane, h.group)
        if spine is None:
            return [h.name, t0, h.name]
        return [h.name, t0, t1_name(plane, spine), t0, h.name]

    def hop_links(self, host: int, plane: int, spine: int | None) -> list[Link]:
        """The links a hop probe crosses (each once, both directions): hop_path's."""
        nodes = self.hop_path(host, plane, spine)
        half = nodes[:len(nodes) // 2 + 1]
        return [self.link(a, b) for a, b in zip(half, half[1:])]

    def hop_container(self, host: int, plane: int, spine: int | None) -> str:
        """Outer IPv6 destination of a hop probe: locator + [own T0, T1 `spine` (0: bounce at
        the T0), own T0, own downlink]. Slot 1 == slot 3 marks a bounce: no host-to-host path
        has it (controller/routing.py installs the rules that turn it around)."""
        h = self.host(host)
        self._check_plane_spine(plane, 0 if spine is None else spine)
        t0 = USID_T0_BASE | plane << 8 | h.group
        t1 = 0 if spine is None else USID_T1_BASE | plane << 8 | spine
        return usid_address([t0, t1, t0, USID_HOST_BASE | h.local])

    def _check_plane_spine(self, plane: int, spine: int) -> None:
        if not 0 <= plane < self.spec.planes:
            raise ValueError(f"plane {plane} out of range 0..{self.spec.planes - 1}")
        if not 0 <= spine < self.spec.spines:
            raise ValueError(f"spine {spine} out of range 0..{self.spec.spines - 1}")

    def iter_host_pairs(self) -> Iterator[tuple[int, int]]:
        for a in self.hosts:
            for b in self.hosts:
                if a.index != b.index:
                    yield a.index, b.index


# ---------------------------------------------------------------- numbering helpers


def dpid_of(tier: int, plane: int, index: int) -> int:
    """Deterministic 64-bit datapath id: 0x0000_00TT_PPPP_IIII style, never 0."""
    return (1 << 32) | (tier << 24) | (plane << 16) | (index + 1)


def t0_host_port(spec: FabricSpec, local: int) -> int:
    return local + 1


def t0_uplink_port(spec: FabricSpec, spine: int) -> int:
    return spec.hosts_per_group + spine + 1


def t1_down_port(group: int) -> int:
    return group + 1


def nic_addr(host: Host, plane: int) -> str:
    """Address of one NIC port: fd00:<plane>:<group>:<local>::1 (a /64 per NIC port)."""
    return f"fd00:{plane:x}:{host.group:x}:{host.local:x}::1"


def plane_prefix(plane: int) -> str:
    return f"fd00:{plane:x}::/32"


def group_prefix(plane: int, group: int) -> str:
    return f"fd00:{plane:x}:{group:x}::/48"


def nic_mac(host: Host, plane: int) -> str:
    return f"02:00:00:{plane:02x}:{host.group:02x}:{host.local:02x}"


def usid_address(usids: list[int]) -> str:
    if len(usids) > 6:
        raise ValueError("a /128 container holds at most 6 uSIDs after a 32-bit locator")
    value = USID_LOCATOR << 96
    for i, u in enumerate(usids):
        if not 0 <= u <= 0xFFFF:
            raise ValueError(f"uSID {u:#x} is not 16 bits")
        value |= u << (80 - 16 * i)
    return str(ipaddress.IPv6Address(value))


def usid_slots(address: str) -> tuple[int, list[int]]:
    """(locator, [uSID slot 1..6]) of a uSID container."""
    value = int(ipaddress.IPv6Address(address))
    return value >> 96, [(value >> (80 - 16 * i)) & 0xFFFF for i in range(6)]


def usid_slot_mask(slot: int) -> tuple[int, int]:
    """(value shift, 128-bit mask) selecting the locator and uSID slot `slot` (1-based)."""
    shift = 80 - 16 * (slot - 1)
    return shift, (0xFFFFFFFF << 96) | (0xFFFF << shift)


# ---------------------------------------------------------------- entropy values


def make_ev(plane: int, spine: int, entropy: int) -> int:
    if not 0 <= plane <= EV_PLANE_MASK:
        raise ValueError(f"plane {plane} does not fit the EV")
    if not 0 <= spine <= EV_SPINE_MASK:
        raise ValueError(f"spine {spine} does not fit the EV")
    if not 1 <= entropy <= 0xFFFF:
        raise ValueError(f"entropy {entropy} must be 1..65535")
    return plane << EV_PLANE_SHIFT | spine << EV_SPINE_SHIFT | entropy


def random_entropy(rng) -> int:
    """An entropy value in the RoCEv2 source-port range; rng is a random.Random."""
    return rng.randint(ENTROPY_MIN, ENTROPY_MAX)


def ev_plane(ev: int) -> int:
    return (ev >> EV_PLANE_SHIFT) & EV_PLANE_MASK


def ev_spine(ev: int) -> int:
    return (ev >> EV_SPINE_SHIFT) & EV_SPINE_MASK


def ev_entropy(ev: int) -> int:
    return ev & 0xFFFF


def ev_udp_sport(ev: int) -> int:
    return ev & 0xFFFF


def ev_flow_label(ev: int) -> int:
    """High 16 bits of the EV in the 20-bit IPv6 flow label."""
    return (ev >> 16) & 0xFFFF


def ev_from_wire(udp_sport: int, flow_label: int) -> int:
    return ((flow_label & 0xFFFF) << 16) | (udp_sport & 0xFFFF)
