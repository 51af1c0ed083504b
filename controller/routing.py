"""Pure routing: fabric spec + routing mode + down links -> OpenFlow rules per switch, as data.

Both forwarding schemes are always installed on every switch (so kernel traffic such as ping and
TCP works whatever the endpoints do):

* SRv6 uSID. OpenFlow cannot shift the uSID container like a real uSID switch, so each tier
  matches the slot it owns with a masked ipv6_dst match (locator + slot). The forwarding result is
  the same as shift-and-lookup: one container = one physical path.
    T0: slot3 == self and slot4 == downlink -> host port        (last hop, also same-group paths)
        slot1 == self and slot2 == T1       -> uplink to that T1
    T1: slot2 == self and slot3 == T0       -> down port to that T0
  Per-hop self-probes (Clustermapper's hop probes, container from Topology.hop_container: slot 1
  == slot 3 == the host's own T0) come back to the port they came in on. OpenFlow never sends
  a packet out of its ingress port through a plain output action, so each turn is its own rule
  with the in_port match and the IN_PORT output, above the routes:
    T0: in_port == host port, slots [self, 0, self, that host]   -> IN_PORT (T0 bounce)
        in_port == host port, slots [self, T1, self, that host]  -> uplink to that T1
    T1: in_port == down port to T0, slots [T0, self, T0]         -> IN_PORT (T1 bounce)
    back at the T0 the ordinary last-hop rule (slot3 == self, slot4 == host) delivers it.
* Plain IPv6 with ECMP. The "hash" is the low bits of the L4 source port (UDP sport carries the
  EV entropy, TCP sport is random) over N buckets (power of two) mapped onto the live uplinks.
    T0: host exact address -> host port; group prefix + sport bucket -> uplink
    T1: group prefix -> down port

IPv6 multicast and neighbour discovery are dropped (hosts use permanent neighbours), and the
table-miss rule drops. Nothing here imports os-ken: the app turns FlowRule into OFPFlowMod.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from model.topology import (
    USID_HOST_BASE,
    USID_LOCATOR,
    USID_T0_BASE,
    USID_T1_BASE,
    FabricSpec,
    Topology,
    group_prefix,
    nic_addr,
    t0_host_port,
    t0_name,
    t0_uplink_port,
    t1_down_port,
    t1_name,
    usid_slot_mask,
)

ROUTING_MODES = ("srv6", "ecmp")

ETH_TYPE_IPV6 = 0x86DD
IP_PROTO_TCP = 6
IP_PROTO_UDP = 17
IP_PROTO_ICMPV6 = 58
ND_ICMPV6_TYPES = (133, 134, 135, 136, 137)  # RS, RA, NS, NA, redirect

TABLE = 0

# Priorities (higher wins). Fault rules (blackhole) sit above everything routing installs.
PRIO_FAULT_BLACKHOLE = 60000
PRIO_HOP_PROBE = 41000
PRIO_DROP_CONTROL = 50000
PRIO_SRV6_DOWNLINK = 40000
PRIO_SRV6_UPLINK = 39000
PRIO_SRV6_T1 = 38000
PRIO_IP_HOST = 30000
PRIO_IP_T1 = 30000
PRIO_IP_ECMP = 20000
PRIO_IP_ECMP_DEFAULT = 10000  # non-UDP/TCP traffic (ping) between groups: bucket 0's uplink
PRIO_TABLE_MISS = 0

# Cookie: kind in the top byte, then plane, then the object the rule is about.
COOKIE_KIND_SHIFT = 56
COOKIE_KIND_MASK = 0xFF << COOKIE_KIND_SHIFT
KIND_TABLE_MISS = 0x01
KIND_DROP_CONTROL = 0x02
KIND_SRV6_DOWNLINK = 0x10
KIND_SRV6_UPLINK = 0x11
KIND_SRV6_T1 = 0x12
KIND_HOP_T0 = 0x13
KIND_HOP_T1 = 0x14
KIND_IP_HOST = 0x20
KIND_IP_T1 = 0x21
KIND_IP_ECMP = 0x22
KIND_IP_ECMP_DEFAULT = 0x23
KIND_FAULT_BLACKHOLE = 0xF0

ALL_ONES_128 = (1 << 128) - 1
# The output port that means "the port the packet came in on" (OpenFlow OFPP_IN_PORT; the
# adapter, controller/openflow_app.py, turns it into the protocol's constant).
IN_PORT = "in_port"


def make_cookie(kind: int, plane: int = 0, a: int = 0, b: int = 0, c: int = 0) -> int:
    """kind(8) | plane(8) | a(16) | b(16) | c(16): e.g. ECMP: a = dst group, b = bucket, c = proto."""
    return (kind << COOKIE_KIND_SHIFT) | (plane & 0xFF) << 48 | (a & 0xFFFF) << 32 \
        | (b & 0xFFFF) << 16 | (c & 0xFFFF)


def cookie_kind(cookie: int) -> int:
    return (cookie >> COOKIE_KIND_SHIFT) & 0xFF


@dataclass(frozen=True)
class FlowRule:
    """One OpenFlow rule as plain data. match uses os-ken OFPMatch field names; a masked field
    is a (value, mask) tuple. actions: [("output", port)], port a number or IN_PORT; an empty
    list drops."""

    table: int
    priority: int
    match: dict = field(hash=False)
    actions: tuple
    cookie: int

    def key(self) -> tuple:
        """What makes two rules the same OpenFlow entry (a new ADD with it replaces the old)."""
        return self.table, self.priority, tuple(sorted(self.match.items()))


class RoutingError(ValueError):
    """Bad routing parameters (mode, bucket count)."""


# ---------------------------------------------------------------- helpers


def _topo(spec_or_topo) -> Topology:
    if isinstance(spec_or_topo, Topology):
        return spec_or_topo
    if isinstance(spec_or_topo, FabricSpec):
        return Topology(spec_or_topo)
    raise TypeError(f"expected FabricSpec or Topology, got {type(spec_or_topo).__name__}")


def default_buckets(spines: int) -> int:
    """Smallest power of two >= 4 * spines: every uplink gets at least 4 buckets, so the
    worst-case imbalance between uplinks is one bucket in four."""
    n = 1
    while n < 4 * spines:
        n <<= 1
    return n


def check_buckets(buckets: int) -> int:
    if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 1 \
            or buckets & (buckets - 1) or buckets > 1 << 16:
        raise RoutingError(f"ECMP bucket count must be a power of two in 1..65536, got {buckets!r}")
    return buckets


def normalize_down_links(down_links) -> frozenset:
    """Accept pairs in any order/container; return frozenset of frozenset({a, b})."""
    out = set()
    for pair in down_links or ():
        pair = frozenset(pair)
        if len(pair) != 2:
            raise RoutingError(f"a down link needs two distinct node names, got {sorted(pair)}")
        out.add(pair)
    return frozenset(out)


def _v6(address: str) -> int:
    return int(ipaddress.IPv6Address(address))


def _v6str(value: int) -> str:
    return str(ipaddress.IPv6Address(value))


def _usid_match(slots: dict[int, int]) -> tuple[str, str]:
    """(value, mask) for ipv6_dst matching the locator and the given {slot: uSID} values."""
    value = USID_LOCATOR << 96
    mask = 0
    for slot, usid in slots.items():
        shift, slot_mask = usid_slot_mask(slot)
        value |= usid << shift
        mask |= slot_mask
    return _v6str(value), _v6str(mask)


def _prefix_match(prefix: str) -> tuple[str, str]:
    net = ipaddress.IPv6Network(prefix)
    return str(net.network_address), str(net.netmask)


def live_spines(spec_or_topo, plane: int, src_group: int, dst_group: int,
                down_links=frozenset()) -> list[int]:
    """Spines through which src T0 can reach dst T0 with both fabric links up."""
    topo = _topo(spec_or_topo)
    down = normalize_down_links(down_links)
    src_t0, dst_t0 = t0_name(plane, src_group), t0_name(plane, dst_group)
    out = []
    for s in range(topo.spec.spines):
        t1 = t1_name(plane, s)
        if frozenset((src_t0, t1)) in down or frozenset((t1, dst_t0)) in down:
            continue
        out.append(s)
    return out


def bucket_map(spec_or_topo, plane: int, src_group: int, dst_group: int,
               down_links=frozenset(), buckets: int | None = None) -> list[int]:
    """bucket -> spine. Buckets go round robin over the live spines; if none is live the
    static mapping stays (traffic is lost either way, and it keeps rules stable)."""
    topo = _topo(spec_or_topo)
    n = check_buckets(buckets if buckets is not None else default_buckets(topo.spec.spines))
    live = live_spines(topo, plane, src_group, dst_group, down_links)
    if not live:
        live = list(range(topo.spec.spines))
    return [live[b % len(live)] for b in range(n)]


def ecmp_uplink(spec, entropy_or_sport: int, src_group: int, dst_group: int,
                down_links=frozenset(), *, plane: int = 0, buckets: int | None = None) -> int:
    """Spine (T0 uplink index) a plain-IPv6 UDP/TCP packet with this L4 source port takes from
    src_group's T0 to dst_group's T0 on `plane`, given the links the controller has routed
    around (empty for static routing). An EV may be passed: only its low 16 bits (the sport)
    count. Same-group traffic never goes up: ValueError."""
    topo = _topo(spec)
    if src_group == dst_group:
        raise ValueError("same-group traffic does not use an uplink")
    for name, g in (("src_group", src_group), ("dst_group", dst_group)):
        if not 0 <= g < topo.spec.groups:
            raise ValueError(f"{name} {g} out of range 0..{topo.spec.groups - 1}")
    if not 0 <= plane < topo.spec.planes:
        raise ValueError(f"plane {plane} out of range 0..{topo.spec.planes - 1}")
    table = bucket_map(topo, plane, src_group, dst_group, down_links, buckets)
    sport = entropy_or_sport & 0xFFFF
    return table[sport & (len(table) - 1)]


# ---------------------------------------------------------------- rules


def _common_rules() -> list[FlowRule]:
    rules = [
        FlowRule(TABLE, PRIO_TABLE_MISS, {}, (), make_cookie(KIND_TABLE_MISS)),
        FlowRule(TABLE, PRIO_DROP_CONTROL,
                 {"eth_type": ETH_TYPE_IPV6, "ipv6_dst": ("ff00::", "ff00::")}, (),
                 make_cookie(KIND_DROP_CONTROL, a=1)),
    ]
    for icmp_type in ND_ICMPV6_TYPES:
        rules.append(FlowRule(TABLE, PRIO_DROP_CONTROL,
                              {"eth_type": ETH_TYPE_IPV6, "ip_proto": IP_PROTO_ICMPV6,
                               "icmpv6_type": icmp_type}, (),
                              make_cookie(KIND_DROP_CONTROL, a=2, b=icmp_type)))
    return rules


def _t0_rules(topo: Topology, plane: int, group: int, mode: str, down: frozenset,
              buckets: int) -> list[FlowRule]:
    spec = topo.spec
    self_usid = USID_T0_BASE | plane << 8 | group
    rules = []
    for local in range(spec.hosts_per_group):
        port = t0_host_port(spec, local)
        rules.append(FlowRule(
            TABLE, PRIO_SRV6_DOWNLINK,
            {"eth_type": ETH_TYPE_IPV6,
             "ipv6_dst": _usid_match({3: self_usid, 4: USID_HOST_BASE | local})},
            (("output", port),), make_cookie(KIND_SRV6_DOWNLINK, plane, group, local)))
        host = topo.hosts[group * spec.hosts_per_group + local]
        rules.append(FlowRule(
            TABLE, PRIO_IP_HOST,
            {"eth_type": ETH_TYPE_IPV6, "ipv6_dst": nic_addr(host, plane)},
            (("output", port),), make_cookie(KIND_IP_HOST, plane, group, local)))
    for s in range(spec.spines):
        rules.append(FlowRule(
            TABLE, PRIO_SRV6_UPLINK,
            {"eth_type": ETH_TYPE_IPV6,
             "ipv6_dst": _usid_match({1: self_usid, 2: USID_T1_BASE | plane << 8 | s})},
            (("output", t0_uplink_port(spec, s)),), make_cookie(KIND_SRV6_UPLINK, plane, group, s)))
    ecmp_down = down if mode == "ecmp" else frozenset()
    mask = buckets - 1
    for dst_group in range(spec.groups):
        if dst_group == group:
            continue
        prefix = _prefix_match(group_prefix(plane, dst_group))
        table = bucket_map(topo, plane, group, dst_group, ecmp_down, buckets)
        for b, spine in enumerate(table):
            out = (("output", t0_uplink_port(spec, spine)),)
            for proto, field_name in ((IP_PROTO_UDP, "udp_src"), (IP_PROTO_TCP, "tcp_src")):
                rules.append(FlowRule(
                    TABLE, PRIO_IP_ECMP,
                    {"eth_type": ETH_TYPE_IPV6, "ipv6_dst": prefix, "ip_proto": proto,
                     field_name: (b, mask)},
                    out, make_cookie(KIND_IP_ECMP, plane, dst_group, b, proto)))
        rules.append(FlowRule(
            TABLE, PRIO_IP_ECMP_DEFAULT, {"eth_type": ETH_TYPE_IPV6, "ipv6_dst": prefix},
            (("output", t0_uplink_port(spec, table[0])),),
            make_cookie(KIND_IP_ECMP_DEFAULT, plane, dst_group)))
    return rules


def _t0_hop_rules(topo: Topology, plane: int, group: int) -> list[FlowRule]:
    """The T0's turns of its hosts' hop probes (module docstring)."""
    spec = topo.spec
    self_usid = USID_T0_BASE | plane << 8 | group
    rules = []
    for local in range(spec.hosts_per_group):
        port = t0_host_port(spec, local)
        down = USID_HOST_BASE | local
        rules.append(FlowRule(
            TABLE, PRIO_HOP_PROBE,
            {"eth_type": ETH_TYPE_IPV6, "in_port": port,
             "ipv6_dst": _usid_match({1: self_usid, 2: 0, 3: self_usid, 4: down})},
            (("output", IN_PORT),), make_cookie(KIND_HOP_T0, plane, group, local, 0)))
        for s in range(spec.spines):
            t1 = USID_T1_BASE | plane << 8 | s
            rules.append(FlowRule(
                TABLE, PRIO_HOP_PROBE,
                {"eth_type": ETH_TYPE_IPV6, "in_port": port,
                 "ipv6_dst": _usid_match({1: self_usid, 2: t1, 3: self_usid, 4: down})},
                (("output", t0_uplink_port(spec, s)),),
                make_cookie(KIND_HOP_T0, plane, group, local, s + 1)))
    return rules


def _t1_hop_rules(topo: Topology, plane: int, spine: int) -> list[FlowRule]:
    """The T1's turns of hop probes, one per down port (module docstring)."""
    self_usid = USID_T1_BASE | plane << 8 | spine
    rules = []
    for g in range(topo.spec.groups):
        t0 = USID_T0_BASE | plane << 8 | g
        rules.append(FlowRule(
            TABLE, PRIO_HOP_PROBE,
            {"eth_type": ETH_TYPE_IPV6, "in_port": t1_down_port(g),
             "ipv6_dst": _usid_match({1: t0, 2: self_usid, 3: t0})},
            (("output", IN_PORT),), make_cookie(KIND_HOP_T1, plane, spine, g)))
    return rules


def _t1_rules(topo: Topology, plane: int, spine: int) -> list[FlowRule]:
    self_usid = USID_T1_BASE | plane << 8 | spine
    rules = []
    for g in range(topo.spec.groups):
        port = t1_down_port(g)
        rules.append(FlowRule(
            TABLE, PRIO_SRV6_T1,
            {"eth_type": ETH_TYPE_IPV6,
             "ipv6_dst": _usid_match({2: self_usid, 3: USID_T0_BASE | plane << 8 | g})},
            (("output", port),), make_cookie(KIND_SRV6_T1, plane, spine, g)))
        rules.append(FlowRule(
            TABLE, PRIO_IP_T1,
            {"eth_type": ETH_TYPE_IPV6, "ipv6_dst": _prefix_match(group_prefix(plane, g))},
            (("output", port),), make_cookie(KIND_IP_T1, plane, spine, g)))
    return rules


def switch_rules(spec_or_topo, switch: str, mode: str = "srv6", down_links=frozenset(),
                 buckets: int | None = None) -> list[FlowRule]:
    """Every rule one switch needs. down_links only changes ECMP buckets, and only in ecmp mode
    (the caller passes the set it has decided to route around: empty for static routing)."""
    topo = _topo(spec_or_topo)
    if mode not in ROUTING_MODES:
        raise RoutingError(f"routing mode must be one of {', '.join(ROUTING_MODES)}, got {mode!r}")
    n = check_buckets(buckets if buckets is not None else default_buckets(topo.spec.spines))
    down = normalize_down_links(down_links)
    sw = topo.switch(switch)
    rules = _common_rules()
    if sw.tier == 0:
        rules += _t0_rules(topo, sw.plane, sw.index, mode, down, n)
        rules += _t0_hop_rules(topo, sw.plane, sw.index)
    else:
        rules += _t1_rules(topo, sw.plane, sw.index)
        rules += _t1_hop_rules(topo, sw.plane, sw.index)
    return rules


def rules(spec_or_topo, mode: str = "srv6", down_links=frozenset(),
          buckets: int | None = None) -> dict[str, list[FlowRule]]:
    """switch name -> its rules, for the whole fabric."""
    topo = _topo(spec_or_topo)
    return {name: switch_rules(topo, name, mode, down_links, buckets) for name in topo.switches}


def changed_rules(old: list[FlowRule], new: list[FlowRule]) -> list[FlowRule]:
    """Rules of `new` whose match exists in `old` with other actions, or is new: what an
    OFPFC_ADD must resend (same match + priority replaces in place, so no delete is needed)."""
    before = {r.key(): r.actions for r in old}
    return [r for r in new if before.get(r.key()) != r.actions]
