"""Pure fault logic: validate a fault command against the Topology and build the exact commands
(argv lists, or FlowRules for OpenFlow faults) that apply and clear it. Nothing runs here:
controller.planner puts these commands in order for a typed action (controller.actions), and
controller.executor runs them and checks every return code.

Mechanisms (all verified on this project's kernel, which has no netem/RED):
* link_down/link_up: `ip link set dev X down|up` on the switch ends (both ends of a fabric
  link): the switches see a real port-status event; a host end loses carrier, as with a cable
  pull, and keeps its addresses, routes and neighbours.
* gray_loss: an nftables netdev *egress* table per port and fault, `numgen random mod 10000 < N
  drop` (0.01 % resolution); no carrier change, so no port-status signal.
* ecn_mark: an nftables egress table, `limit rate over R bytes/second` then set CE in the
  outermost IPv6 header, only on ECN-capable packets (ECT(0)/ECT(1)); Not-ECT is never marked.
* degrade: change the rate of the port's HTB class (`tc class change`). Chosen over an OpenFlow
  meter because the links are already shaped by HTB on both ends, a tc change takes effect at
  once on the userspace datapath's veth ports, and it needs no change to the routing flows
  (a meter would need a meter instruction on every rule that outputs to the port).
* blackhole: a top-priority match-all drop flow on the switch (no port goes down).
* flap: link_down/link_up repeated with a period, on the controller's scheduler (cancellable).
"""
from __future__ import annotations

import re

from model import faults as R
from model.topology import Topology
from controller.routing import (
    KIND_FAULT_BLACKHOLE,
    PRIO_FAULT_BLACKHOLE,
    TABLE,
    FlowRule,
    make_cookie,
)

NFT_TABLE_PREFIX = "mrclab_"
DEGRADE_HTB_HANDLE = "7a"   # only used when the port has no HTB class of its own

# action -> (required params, optional params with defaults), from the fault registry
# (model/faults.py, which also holds their bounds); "a"/"b" handled separately.
ACTIONS: dict[str, tuple[tuple[str, ...], dict]] = {
    k.action: (k.required, k.optional) for k in R.KINDS}


class FaultError(ValueError):
    """A fault command that cannot be applied; the message says what is wrong."""


# ---------------------------------------------------------------- validation


def validate(cmd, topo: Topology) -> dict:
    """Check a fault command against the fault registry (model/faults.py) and the topology;
    return it normalized (defaults filled, numbers typed). Raises FaultError naming the
    offending field."""
    if not isinstance(cmd, dict):
        raise FaultError(f"a fault command must be a JSON object, got {type(cmd).__name__}")
    action = cmd.get("action")
    if action not in ACTIONS:
        raise FaultError(f"unknown action {action!r}; actions are {', '.join(ACTIONS)}")
    kind = R.kind(action)
    node_only = kind.target == R.NODE
    cmd = dict(cmd)
    if node_only and "node" in cmd and "a" not in cmd:
        cmd["a"] = cmd.pop("node")
    node_fields = ("a",) if node_only else ("a", "b")
    allowed = {"action", *node_fields, *kind.param_names}
    unknown = sorted(set(cmd) - allowed)
    if unknown:
        raise FaultError(f"{action}: unexpected parameter(s) {', '.join(unknown)}; "
                         f"allowed: {', '.join(sorted(allowed - {'action'}))}")
    missing = [n for n in (*node_fields, *kind.required) if n not in cmd]
    if missing:
        raise FaultError(f"{action}: missing parameter(s) {', '.join(missing)}")
    nodes = set(topo.node_names())
    for n in node_fields:
        if not isinstance(cmd[n], str) or cmd[n] not in nodes:
            raise FaultError(f"{action}: unknown node {cmd[n]!r} in field {n!r}")
    out = {"action": action, **{n: cmd[n] for n in node_fields}}
    if node_only:
        if cmd["a"] not in topo.switches:
            raise FaultError(f"{action}: target {cmd['a']!r} is a host; a blackhole target must "
                             f"be a switch (T0 or T1)")
        return out
    try:
        topo.link(cmd["a"], cmd["b"])
    except KeyError:
        raise FaultError(f"{action}: no link between {cmd['a']!r} and {cmd['b']!r}") from None
    # optional parameters first (their defaults filled), then the required ones in order
    for p in sorted(kind.params, key=lambda p: p.required):
        value = cmd.get(p.name, p.default)
        problem = p.problem(value)
        if problem:
            raise FaultError(f"{action}: {p.name} {problem}")
        out[p.name] = float(value) if p.type == R.NUMBER else value
    if action == "ecn_mark":
        for sender, receiver in directed_pairs(out):
            if receiver in {h.name for h in topo.hosts}:
                raise FaultError(f"ecn_mark: {sender}->{receiver} is a last hop to a host; "
                                 f"ECN marking models a switch queue, mark a fabric hop or "
                                 f"the host's uplink direction instead")
    return out


def directed_pairs(fault: dict) -> list[tuple[str, str]]:
    """(sender, receiver) pairs a directional fault acts on."""
    a, b = fault["a"], fault["b"]
    direction = fault.get("direction", "both")
    return {"a->b": [(a, b)], "b->a": [(b, a)], "both": [(a, b), (b, a)]}[direction]


# ---------------------------------------------------------------- where commands run


def intf_of(topo: Topology, node: str, peer: str) -> str:
    """Interface name of `node`'s end of the link to `peer`."""
    link = topo.link(node, peer)
    return link.a_intf if link.a == node else link.b_intf


def is_host(topo: Topology, node: str) -> bool:
    return node not in topo.switches


def netns_prefix(topo: Topology, node: str, host_pids: dict) -> list[str]:
    """[] for a switch end (root namespace); nsenter into the host's namespace otherwise."""
    if not is_host(topo, node):
        return []
    pid = host_pids.get(node)
    if pid is None:
        raise FaultError(f"{node} is a host and its namespace is unknown: register host shell "
                         f"PIDs with POST /hosts first")
    if isinstance(pid, str):          # an open namespace handle (controller.host_namespaces)
        return ["nsenter", f"--net={pid}"]
    return ["nsenter", "-t", str(int(pid)), "-n"]


def egress_ports(topo: Topology, fault: dict, host_pids: dict) -> list[tuple[list[str], str]]:
    """(namespace prefix, interface) of every egress port a directional fault touches."""
    return [(netns_prefix(topo, sender, host_pids), intf_of(topo, sender, receiver))
            for sender, receiver in directed_pairs(fault)]


# ---------------------------------------------------------------- link state


def switch_ends(topo: Topology, a: str, b: str) -> list[tuple[str, str]]:
    """(switch, peer) of each switch end of the link a-b, the ends link_set_commands sets."""
    return [(node, peer) for node, peer in ((a, b), (b, a)) if not is_host(topo, node)]


def link_set_commands(topo: Topology, a: str, b: str, up: bool, host_pids: dict) -> list[list[str]]:
    """`ip link set dev X up|down` on the switch ends of the link. A host end is never set
    administratively down: that would make the kernel delete the NIC's IPv6 address, its plane
    route and its permanent neighbours (keep_addr_on_down=0), which `up` does not restore. Taking
    the switch end of the veth down drops the host's carrier instead, exactly what a cable pull
    looks like to a NIC (operstate down, IFF_RUNNING clear), and the host keeps its settings.
    host_pids is accepted for symmetry with the other builders and unused."""
    state = "up" if up else "down"
    return [["ip", "link", "set", "dev", intf_of(topo, node, peer), state]
            for node, peer in switch_ends(topo, a, b)]


def flap_schedule(period_s: float, count: int) -> list[tuple[float, bool]]:
    """(offset from start in s, up?) steps: down for half a period, then up, `count` times."""
    steps = []
    for i in range(count):
        steps.append((i * period_s, False))
        steps.append((i * period_s + period_s / 2, True))
    return steps


# ---------------------------------------------------------------- nftables


def nft_table_name(kind: str, intf: str) -> str:
    """Unique per (fault kind, port): mrclab_loss_t0p0g0_e3."""
    return NFT_TABLE_PREFIX + kind + "_" + re.sub(r"[^A-Za-z0-9]", "_", intf)


def _nft_egress_script(table: str, intf: str, rule: str) -> str:
    # "add table; delete table" makes re-applying replace the old fault atomically.
    return (f"add table netdev {table}; delete table netdev {table}; "
            f"add table netdev {table}; "
            f"add chain netdev {table} egress {{ type filter hook egress device \"{intf}\" "
            f"priority 0; policy accept; }}; "
            f"add rule netdev {table} egress {rule}")


LOSS_RESOLUTION = 10000      # numgen random mod this: 0.01 % steps


def nft_argv(ns: list[str], script: str) -> list[str]:
    """The command that runs an nft script (semicolon-separated commands, one transaction) in
    the namespace `ns` (a netns_prefix)."""
    return list(ns) + ["nft", script]


def split_nft_argv(argv) -> tuple[tuple[str, ...], str]:
    """(namespace prefix, script) of a command nft_argv built; ValueError for any other."""
    argv = tuple(argv)
    if len(argv) < 2 or argv[-2] != "nft":
        raise ValueError(f"not an nft script command: {' '.join(argv)}")
    return argv[:-2], argv[-1]


def loss_threshold(percent: float) -> int:
    """Packets with numgen random mod 10000 below this are dropped (0.01 % resolution)."""
    return int(round(percent * 100))


def gray_loss_rule(percent: float) -> str:
    """The nft rule for `percent` loss. numgen's values are 0..9999, and nft refuses a constant
    past that range ("Value 10000 exceeds valid range 0-9999"), so a threshold that rounds to
    every value (100 %, 99.995 %) is a plain drop."""
    threshold = loss_threshold(percent)
    if threshold >= LOSS_RESOLUTION:
        return "counter drop"
    return f"numgen random mod {LOSS_RESOLUTION} < {threshold} counter drop"


def gray_loss_commands(ns: list[str], intf: str, percent: float) -> list[list[str]]:
    table = nft_table_name(R.kind("gray_loss").nft_table, intf)
    return [nft_argv(ns, _nft_egress_script(table, intf, gray_loss_rule(percent)))]


def ecn_rate_bytes(rate_mbit: float) -> int:
    return max(1, int(round(rate_mbit * 1_000_000 / 8)))


def ecn_mark_commands(ns: list[str], intf: str, rate_mbit: float) -> list[list[str]]:
    table = nft_table_name(R.kind("ecn_mark").nft_table, intf)
    rule = (f"meta protocol ip6 limit rate over {ecn_rate_bytes(rate_mbit)} bytes/second "
            f"ip6 ecn != not-ect ip6 ecn set ce counter")
    return [nft_argv(ns, _nft_egress_script(table, intf, rule))]


def nft_clear_commands(ns: list[str], kind: str, intf: str) -> list[list[str]]:
    return [nft_argv(ns, f"delete table netdev {nft_table_name(kind, intf)}")]


# ---------------------------------------------------------------- tc (degrade)


def tc_class_show_command(ns: list[str], intf: str) -> list[str]:
    return ns + ["tc", "class", "show", "dev", intf]


_HTB_CLASS = re.compile(r"^class htb (\S+) (?:root|parent (\S+))", re.M)


def htb_leaf_classes(tc_output: str) -> list[str]:
    """Class ids of the HTB leaf classes in `tc class show` output (classes nobody is parent of)."""
    classes = _HTB_CLASS.findall(tc_output)
    parents = {p for _, p in classes if p}
    return [c for c, _ in classes if c not in parents]


def mbit_arg(mbit: float) -> str:
    return f"{max(1, int(round(mbit * 1000)))}kbit"


def degrade_commands(ns: list[str], intf: str, leaf_classes: list[str], mbit: float) -> list[list[str]]:
    """Set the port's HTB leaf classes to `mbit`; if it has none, add a root HTB of our own."""
    if leaf_classes:
        return [ns + ["tc", "class", "change", "dev", intf, "classid", c, "htb",
                      "rate", mbit_arg(mbit), "burst", "15k"] for c in leaf_classes]
    h = DEGRADE_HTB_HANDLE
    return [ns + ["tc", "qdisc", "add", "dev", intf, "root", "handle", f"{h}:0", "htb", "default", "1"],
            ns + ["tc", "class", "add", "dev", intf, "parent", f"{h}:0", "classid", f"{h}:1", "htb",
                  "rate", mbit_arg(mbit), "burst", "15k"]]


def degrade_clear_commands(ns: list[str], intf: str, leaf_classes: list[str], link_mbit: float,
                           own_qdisc: bool) -> list[list[str]]:
    if own_qdisc:
        return [ns + ["tc", "qdisc", "del", "dev", intf, "root"]]
    return degrade_commands(ns, intf, leaf_classes, link_mbit)


# ---------------------------------------------------------------- OpenFlow faults


def blackhole_rule(topo: Topology, switch: str) -> FlowRule:
    """Match-all drop above every routing rule: the switch silently eats everything."""
    sw = topo.switch(switch)
    return FlowRule(TABLE, PRIO_FAULT_BLACKHOLE, {}, (),
                    make_cookie(KIND_FAULT_BLACKHOLE, sw.plane, sw.tier, sw.index))
