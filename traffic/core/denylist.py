"""Control-plane denylist: which paths no endpoint may use (pure: no sockets, no clock).

MRC alone cannot route around a lossy NIC-T0 link inside its plane: every EV of that host on
that plane crosses it, and each must lose a packet before it is replaced by another one that
crosses it too. The paper answers with a denylist pushed by the control plane (fed by
Clustermapper): the endpoints stop using the denied paths until they are allowed again.

A rule names paths in one of four ways (JSON, as the controller API and the endpoints' control
socket carry it):
  {"ev": N}                 one exact 32-bit EV (model.topology EV layout)
  {"plane": P}              every path of plane P
  {"plane": P, "t1": S}     every path through T1 switch S of plane P (t1p<P>s<S>)
  {"link": "A~B"}           every path crossing the link between nodes A and B (either order;
                            ["A", "B"] works too)

An EV of a QP from host `src` to host `dst` takes exactly one path (plane and spine from the EV
bits, nodes from Topology.path); a rule matches the EV when that path is one the rule names.
Paths inside one T0 group cross no T1, so a T1 rule never matches them.
"""
from __future__ import annotations

from dataclasses import dataclass

from model.topology import Topology, ev_plane, ev_spine, make_ev

RULE_KINDS = ("ev", "plane", "t1", "link")


class DenyRuleError(ValueError):
    """A deny/allow rule that names no path of this fabric; the message says what was wrong."""


@dataclass(frozen=True, order=True)
class DenyRule:
    kind: str                 # ev | plane | t1 | link
    ev: int | None = None
    plane: int | None = None
    t1: int | None = None
    link: str | None = None   # Link.name of the topology (canonical a~b order)

    def to_dict(self) -> dict:
        if self.kind == "ev":
            return {"ev": self.ev}
        if self.kind == "plane":
            return {"plane": self.plane}
        if self.kind == "t1":
            return {"plane": self.plane, "t1": self.t1}
        return {"link": self.link}

    def describe(self) -> str:
        if self.kind == "ev":
            return f"EV {self.ev:#010x}"
        if self.kind == "plane":
            return f"plane {self.plane}"
        if self.kind == "t1":
            return f"T1 t1p{self.plane}s{self.t1}"
        return f"link {self.link}"

    def matches(self, topo: Topology, src: int, dst: int, ev: int) -> bool:
        """Does the path EV `ev` takes from host src to host dst fall under this rule?"""
        if self.kind == "ev":
            return ev == self.ev
        plane = ev_plane(ev)
        if plane != self.plane and self.kind != "link":
            return False
        if self.kind == "plane":
            return True
        if plane >= topo.spec.planes:
            return False
        spine = ev_spine(ev) % topo.spec.spines
        if self.kind == "t1":
            if topo.host(src).group == topo.host(dst).group:
                return False
            return spine == self.t1
        return any(link.name == self.link for link in topo.path_links(src, dst, plane, spine))


def _int_field(obj: dict, key: str, lo: int, hi: int) -> int:
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise DenyRuleError(f"{key} must be an integer, got {value!r}")
    if not lo <= value <= hi:
        raise DenyRuleError(f"{key} {value} out of range {lo}..{hi}")
    return value


def parse_rule(obj, topo: Topology) -> DenyRule:
    """Validate one rule (a dict as above) against the fabric; DenyRuleError names the problem."""
    if isinstance(obj, DenyRule):
        return obj
    if not isinstance(obj, dict):
        raise DenyRuleError(f"a deny rule is a JSON object such as {{\"link\": \"h1~t0p0g0\"}}, "
                            f"got {obj!r}")
    keys = set(obj) - {"reason"}
    known = {"ev", "plane", "t1", "link"}
    unknown = keys - known
    if unknown:
        raise DenyRuleError(f"unknown key(s) {', '.join(sorted(unknown))} in deny rule; "
                            f"use one of: ev, plane, plane+t1, link")
    spec = topo.spec
    if keys == {"ev"}:
        ev = _int_field(obj, "ev", 1, 0xFFFFFFFF)
        if ev_plane(ev) >= spec.planes or ev_spine(ev) >= spec.spines:
            raise DenyRuleError(f"EV {ev:#x} names plane {ev_plane(ev)} spine {ev_spine(ev)}, "
                                f"not in this fabric ({spec.planes} planes, {spec.spines} spines)")
        return DenyRule("ev", ev=ev)
    if keys == {"plane"}:
        return DenyRule("plane", plane=_int_field(obj, "plane", 0, spec.planes - 1))
    if keys == {"plane", "t1"}:
        return DenyRule("t1", plane=_int_field(obj, "plane", 0, spec.planes - 1),
                        t1=_int_field(obj, "t1", 0, spec.spines - 1))
    if keys == {"link"}:
        value = obj["link"]
        if isinstance(value, str) and value.count("~") == 1:
            a, b = value.split("~")
        elif isinstance(value, (list, tuple)) and len(value) == 2 and all(
                isinstance(x, str) for x in value):
            a, b = value
        else:
            raise DenyRuleError(f"link must be \"A~B\" or [\"A\", \"B\"] (two node names), "
                                f"got {value!r}")
        try:
            link = topo.link(a, b)
        except KeyError as err:
            raise DenyRuleError(err.args[0]) from None
        return DenyRule("link", plane=link.plane, link=link.name)
    if keys == {"t1"}:
        raise DenyRuleError("a t1 rule needs its plane too: {\"plane\": P, \"t1\": S}")
    raise DenyRuleError(f"a deny rule names exactly one of ev, plane, plane+t1, link; got keys "
                        f"{', '.join(sorted(keys)) or 'none'}")


class Denylist:
    """The set of rules in force; `denies` answers for one EV of one QP."""

    def __init__(self, topo: Topology, rules=()):
        self.topo = topo
        self.rules: set[DenyRule] = set()
        for rule in rules:
            self.add(rule)

    def add(self, rule) -> tuple[DenyRule, bool]:
        """(the parsed rule, whether it was new)."""
        rule = parse_rule(rule, self.topo)
        new = rule not in self.rules
        self.rules.add(rule)
        return rule, new

    def remove(self, rule) -> tuple[DenyRule, bool]:
        """(the parsed rule, whether it was in force)."""
        rule = parse_rule(rule, self.topo)
        present = rule in self.rules
        self.rules.discard(rule)
        return rule, present

    def replace(self, rules) -> None:
        parsed = {parse_rule(r, self.topo) for r in rules}
        self.rules = parsed

    def denies(self, src: int, dst: int, ev: int) -> bool:
        return any(rule.matches(self.topo, src, dst, ev) for rule in self.rules)

    def stranded_by(self, rule) -> tuple[int, int] | None:
        """The first host pair (src, dst) that the rules in force plus `rule` leave with no
        path at all, or None. A denial is a drain: draining a host's last path stops its
        collective outright, which no loss on that path would have done. An EV rule denies one
        EV of a path whose other entropies stay usable, so it strands nobody."""
        rules = [r for r in {*self.rules, parse_rule(rule, self.topo)} if r.kind != "ev"]
        spec = self.topo.spec
        for src, dst in self.topo.iter_host_pairs():
            if all(any(r.matches(self.topo, src, dst, make_ev(plane, spine, 1)) for r in rules)
                   for plane in range(spec.planes) for spine in range(spec.spines)):
                return src, dst
        return None

    def to_list(self) -> list[dict]:
        return [rule.to_dict() for rule in sorted(self.rules)]


def parse_rules(objs, topo: Topology) -> list[DenyRule]:
    if not isinstance(objs, list):
        raise DenyRuleError(f"rules must be a JSON list of rules, got {objs!r}")
    return [parse_rule(o, topo) for o in objs]


__all__ = ["DenyRule", "DenyRuleError", "Denylist", "parse_rule", "parse_rules", "RULE_KINDS"]
