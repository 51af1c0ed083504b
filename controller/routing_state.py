"""Pure routing state: which links are down, what the switches were sent, and the flow-rule
changes a port-status event or an ECMP reconvergence calls for.

Links go down two ways: a fault takes them down (the fault state's admin_down) or a switch
reports a port down. With dynamic convergence (ecmp only) the controller waits, then routes
around the set of links that were down when the port event arrived: reconverge() returns only
the rules that changed per T0 switch, as OFPFC_ADD replaces a rule with the same match in
place. The rules themselves come from controller.routing.
"""
from __future__ import annotations

from dataclasses import dataclass

from controller import routing as R
from model.topology import Link, Topology


@dataclass(frozen=True)
class PortTransition:
    """A switch port that changed state; link is None for a port not in the spec."""
    switch: str
    port: int
    up: bool
    link: Link | None


class RoutingState:
    def __init__(self, topo: Topology, mode: str, buckets: int):
        if mode not in R.ROUTING_MODES:
            raise ValueError(f"routing must be one of {R.ROUTING_MODES}, got {mode!r}")
        self.topo = topo
        self.mode = mode
        self.buckets = R.check_buckets(buckets)
        self.port_down: set[tuple[str, int]] = set()
        self.routed_around: frozenset = frozenset()
        self.installed: dict[str, list[R.FlowRule]] = {}
        self.ports_of_switch = {name: topo.switch_ports(name) for name in topo.switches}

    def rules_for(self, switch: str) -> list[R.FlowRule]:
        """Every routing rule of a (re)connecting switch, for the links routed around now."""
        rules = R.switch_rules(self.topo, switch, self.mode, self.routed_around, self.buckets)
        self.installed[switch] = rules
        return rules

    def down_links(self, admin_down: frozenset = frozenset()) -> frozenset:
        """Links down by a fault (admin_down) or by a port a switch reported down."""
        down = set(admin_down)
        for switch, port in self.port_down:
            link = self.ports_of_switch.get(switch, {}).get(port)
            if link is not None:
                down.add(frozenset((link.a, link.b)))
        return frozenset(down)

    def port_status(self, switch: str, port: int, up: bool) -> PortTransition | None:
        """Record a port-status report; None if it is no transition (e.g. a MODIFY of another
        attribute of a port already in that state)."""
        if ((switch, port) in self.port_down) != up:
            return None
        if up:
            self.port_down.discard((switch, port))
        else:
            self.port_down.add((switch, port))
        return PortTransition(switch, port, up, self.ports_of_switch.get(switch, {}).get(port))

    def reconverge(self, down: frozenset) -> dict[str, list[R.FlowRule]] | None:
        """Route ECMP around `down`: {T0 switch: rules to resend} (switches with no change
        left out), or None if `down` is what is routed around already."""
        if down == self.routed_around:
            return None
        self.routed_around = down
        updates = {}
        for name, sw in self.topo.switches.items():
            if sw.tier != 0:
                continue
            new = R.switch_rules(self.topo, name, self.mode, down, self.buckets)
            changed = R.changed_rules(self.installed.get(name, []), new)
            self.installed[name] = new
            if changed:
                updates[name] = changed
        return updates
