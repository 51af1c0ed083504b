"""A fake OpenFlow fabric for unit tests: applies controller.routing rule lists to a packet's
header fields and follows it hop by hop over model.topology links (the idea of Faucet's
fakeoftable, written for this project's plain-data rules).

Semantics kept from OpenFlow: highest priority wins; a masked field matches when
(packet & mask) == (value & mask); a field absent from the match is a wildcard; empty actions
drop. Two different matching rules at the same priority are reported as an error, because real
switches resolve that arbitrarily. A plain output to the port the packet came in on sends
nothing (OpenFlow 1.3, 7.2.5: only the IN_PORT reserved port sends a packet back out of its
ingress port), and an IN_PORT output (controller.routing.IN_PORT) does.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from controller.routing import IN_PORT
from model.topology import Topology

IPV6_FIELDS = ("ipv6_dst", "ipv6_src")


class AmbiguousMatch(AssertionError):
    pass


def _as_int(field: str, value) -> int:
    if field in IPV6_FIELDS and isinstance(value, str):
        return int(ipaddress.IPv6Address(value))
    return int(value)


def _compile(rule):
    fields = []
    for field, value in rule.match.items():
        if isinstance(value, tuple):
            v, m = (_as_int(field, x) for x in value)
        else:
            v, m = _as_int(field, value), -1
        fields.append((field, v & m, m))
    return rule.priority, fields, rule


def _packet_ints(packet: dict) -> dict:
    return {f: _as_int(f, v) for f, v in packet.items()}


def _matches(fields, pkt: dict) -> bool:
    for field, value, mask in fields:
        got = pkt.get(field)
        if got is None or got & mask != value:
            return False
    return True


class CompiledTable:
    """Rules sorted by priority with integer matches, so a lookup is a short scan."""

    def __init__(self, rules):
        self.entries = sorted((_compile(r) for r in rules), key=lambda e: -e[0])

    def lookup(self, packet: dict):
        pkt = _packet_ints(packet)
        best = None
        for priority, fields, rule in self.entries:
            if best is not None and priority < best.priority:
                break
            if not _matches(fields, pkt):
                continue
            if best is None:
                best = rule
            elif rule.actions != best.actions:
                raise AmbiguousMatch(f"{packet} matches two rules at priority {priority}: "
                                     f"{best} and {rule}")
        return best


def lookup(rules, packet: dict):
    """The rule a switch applies to `packet`, or None on a (truly empty) miss."""
    return CompiledTable(rules).lookup(packet)


@dataclass
class Trace:
    nodes: list           # node names visited, starting with the sender
    delivered_to: str | None
    reason: str           # "delivered", "dropped by rule", "link down", "no rule", "loop",
                          # "output to the ingress port"


class FakeFabric:
    """Switch name -> rule list, over a Topology, with a set of physically down links."""

    def __init__(self, topo: Topology, rules_by_switch: dict, down_links=frozenset()):
        self.topo = topo
        self.rules = dict(rules_by_switch)
        self.tables = {sw: CompiledTable(r) for sw, r in self.rules.items()}
        self.down = {frozenset(p) for p in down_links}

    def send(self, src_host: int, plane: int, packet: dict, max_hops: int = 16) -> Trace:
        host = self.topo.host(src_host).name
        nodes = [host]
        link = next(link for link in self.topo.links_of(host) if link.plane == plane)
        node = link.b if link.a == host else link.a
        in_port = link.b_port if link.a == host else link.a_port
        if frozenset(link.ends()) in self.down:
            return Trace(nodes, None, "link down")
        for _ in range(max_hops):
            nodes.append(node)
            if node not in self.topo.switches:
                return Trace(nodes, node, "delivered")
            rule = self.tables[node].lookup(dict(packet, in_port=in_port))
            if rule is None:
                return Trace(nodes, None, "no rule")
            outputs = [a[1] for a in rule.actions if a[0] == "output"]
            if not outputs:
                return Trace(nodes, None, "dropped by rule")
            assert len(outputs) == 1, f"multi-output rule {rule} not modelled"
            out = in_port if outputs[0] == IN_PORT else outputs[0]
            if outputs[0] == in_port:
                return Trace(nodes, None, "output to the ingress port")
            link = self.topo.switch_ports(node)[out]
            if frozenset(link.ends()) in self.down:
                return Trace(nodes, None, "link down")
            if link.a == node:
                node, in_port = link.b, link.b_port
            else:
                node, in_port = link.a, link.a_port
        return Trace(nodes, None, "loop")
