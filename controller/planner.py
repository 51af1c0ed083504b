"""Pure fault planning: (typed fault action, fault state, context) -> commands + new state.

Nothing here runs a command or talks to a switch. A Plan is a sequence of Steps, each the
commands that apply one part of the fault (one direction of a link, say) and the fault state
once they have run; the controller executes the steps in order and keeps the state of the
last one that completed, so a command failing half way leaves the state describing exactly
what was applied. Every check that can refuse a fault runs while planning, before any step.

Facts that only the running system knows come in through PlanContext: which switches have an
OpenFlow connection, the HTB classes of a port about to be degraded (degrade_queries says
which `tc class show` to run first), and which switch ports carry the BPF ECN marker.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping

from controller import faults as F
from controller.actions import (CLEAR_OF_KIND, Blackhole, BlackholeClear, Degrade, DegradeClear,
                                EcnClear, EcnMark, FaultAction, Flap, GrayLoss, GrayLossClear,
                                LinkDown, LinkUp)
from controller.commands import (CancelFlap, Command, DeleteCookie, InstallRules, RunArgv,
                                 StartFlap, run_all)
from model import faults as R
from model.topology import Topology


def _frozen(mapping) -> Mapping:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class DegradedPort:
    """How a degraded egress port is restored: its own HTB leaves set back to the link rate,
    or (own_qdisc) the root HTB the degrade added removed."""
    leaves: tuple[str, ...]
    own_qdisc: bool


@dataclass(frozen=True)
class FaultState:
    """Faults in force. Never changed in place: the planner returns a new one."""
    admin_down: frozenset = frozenset()           # {frozenset({a, b})} taken down by a fault
    active: Mapping = field(default_factory=lambda: _frozen({}))    # (kind, sender, receiver) -> params
    degraded: Mapping = field(default_factory=lambda: _frozen({}))  # (sender, receiver) -> DegradedPort
    blackholes: frozenset = frozenset()           # switch names

    def with_active(self, key, params: dict | None) -> "FaultState":
        active = dict(self.active)
        if params is None:
            del active[key]
        else:
            active[key] = _frozen(params)
        return replace(self, active=_frozen(active))

    def with_degraded(self, key, port: DegradedPort | None) -> "FaultState":
        degraded = dict(self.degraded)
        if port is None:
            del degraded[key]
        else:
            degraded[key] = port
        return replace(self, degraded=_frozen(degraded))


@dataclass(frozen=True)
class PlanContext:
    topo: Topology
    host_pids: Mapping = field(default_factory=dict)  # host -> pid, or path of its open netns
    # switches with an OpenFlow connection; None when the OpenFlow side is not running (the
    # executor reports that when it has to send a flow mod)
    connected: frozenset | None = None
    htb_leaves: Mapping = field(default_factory=dict)     # (sender, receiver) -> leaf class ids
    bpf_marker_ports: frozenset = frozenset()             # switch egress interfaces


@dataclass(frozen=True)
class Step:
    commands: tuple[Command, ...]
    state: FaultState


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    log_extra: Mapping = field(default_factory=lambda: _frozen({}))   # merged into the log entry

    @property
    def state(self) -> FaultState:
        return self.steps[-1].state


# ---------------------------------------------------------------- link state


def link_state_step(state: FaultState, topo: Topology, a: str, b: str, up: bool) -> Step:
    """Set the link administratively up or down (also one step of a flap)."""
    pair = frozenset((a, b))
    down = state.admin_down - {pair} if up else state.admin_down | {pair}
    ends = [node for node, _ in F.switch_ends(topo, a, b)]
    commands = [RunArgv(tuple(argv), node)
                for node, argv in zip(ends, F.link_set_commands(topo, a, b, up, {}))]
    return Step(tuple(commands), replace(state, admin_down=down))


def _plan_link(action, state, ctx, up: bool) -> Plan:
    step = link_state_step(state, ctx.topo, action.a, action.b, up)
    return Plan((replace(step, commands=(CancelFlap(action.a, action.b),) + step.commands),))


def _plan_flap(action: Flap, state, ctx) -> Plan:
    return Plan((Step((CancelFlap(action.a, action.b),
                       StartFlap(action.a, action.b, action.period_s, action.count)), state),))


# ---------------------------------------------------------------- directional faults


def _egress(action, ctx) -> list[tuple[tuple[str, str], list[str], str]]:
    """((sender, receiver), namespace prefix, egress interface) per direction; raises
    FaultError (unknown host namespace) before anything is planned."""
    pairs = action.directed_pairs()
    return [((s, r), F.netns_prefix(ctx.topo, s, ctx.host_pids), F.intf_of(ctx.topo, s, r))
            for s, r in pairs]


def _active_pairs(action, state, kind: str) -> list[tuple[str, str]]:
    pairs = [(s, r) for s, r in action.directed_pairs() if (kind, s, r) in state.active]
    if not pairs:
        raise F.FaultError(f"{action.name}: no {kind} active on {action.a}<->{action.b} "
                           f"({action.direction})")
    return pairs


def _clear_egress(action, state, ctx, kind: str):
    return [((s, r), F.netns_prefix(ctx.topo, s, ctx.host_pids), F.intf_of(ctx.topo, s, r))
            for s, r in _active_pairs(action, state, kind)]


def _plan_gray_loss(action: GrayLoss, state, ctx) -> Plan:
    steps = []
    for (s, r), ns, intf in _egress(action, ctx):
        state = state.with_active(("gray_loss", s, r), {"percent": action.percent})
        steps.append(Step(tuple(run_all(F.gray_loss_commands(ns, intf, action.percent), s)),
                          state))
    return Plan(tuple(steps))


def _plan_nft_clear(action, state, ctx) -> Plan:
    kind = R.CLEARS[action.name]
    steps = []
    for (s, r), ns, intf in _clear_egress(action, state, ctx, kind):
        state = state.with_active((kind, s, r), None)
        cmds = F.nft_clear_commands(ns, R.kind(kind).nft_table, intf)
        steps.append(Step(tuple(run_all(cmds, s)), state))
    return Plan(tuple(steps))


def ecn_marker_note(intf: str, bpf_marker_active: bool) -> str:
    """Which ECN marker a port ends up with: the queue-based marker is the BPF program; the
    nftables rate marker is only the fallback where BPF is unavailable."""
    if bpf_marker_active:
        return (f"ecn_mark on {intf}: the in-fabric BPF virtual-queue marker is active there; "
                f"adding the nftables rate marker (fallback) on top of it")
    return (f"ecn_mark on {intf}: no in-fabric BPF marker on this port; using the nftables "
            f"rate marker as the fallback")


def _plan_ecn_mark(action: EcnMark, state, ctx) -> Plan:
    steps, notes = [], []
    for (s, r), ns, intf in _egress(action, ctx):
        notes.append(ecn_marker_note(intf, not ns and intf in ctx.bpf_marker_ports))
        state = state.with_active(("ecn_mark", s, r), {"rate_mbit": action.rate_mbit})
        steps.append(Step(tuple(run_all(F.ecn_mark_commands(ns, intf, action.rate_mbit), s)),
                          state))
    return Plan(tuple(steps), _frozen({"marker": "nftables-fallback", "notes": notes}))


def degrade_queries(action: FaultAction, state: FaultState,
                    ctx: PlanContext) -> dict[tuple[str, str], list[str]]:
    """`tc class show` argv per direction whose HTB classes the planner needs before it can
    plan `action` (a Degrade of a port not degraded yet); parse the output with
    controller.faults.htb_leaf_classes and pass it as PlanContext.htb_leaves."""
    if not isinstance(action, Degrade):
        return {}
    return {pair: F.tc_class_show_command(ns, intf) for pair, ns, intf in _egress(action, ctx)
            if pair not in state.degraded}


def _plan_degrade(action: Degrade, state, ctx) -> Plan:
    mbit = ctx.topo.link(action.a, action.b).mbit * action.fraction
    steps = []
    for pair, ns, intf in _egress(action, ctx):
        port = state.degraded.get(pair)
        if port is None:
            if pair not in ctx.htb_leaves:
                raise ValueError(f"degrade: HTB classes of {intf} unknown; run "
                                 f"degrade_queries' commands first")
            leaves = tuple(ctx.htb_leaves[pair])
            port = DegradedPort(leaves, own_qdisc=not leaves)
            cmds = F.degrade_commands(ns, intf, list(port.leaves), mbit)
        else:
            cmds = F.degrade_commands(ns, intf, list(port.leaves), mbit)
            if port.own_qdisc:   # the root HTB we added exists already: change its class
                cmds = [[x if x != "add" else "change" for x in c] for c in cmds
                        if "qdisc" not in c]
        state = state.with_degraded(pair, port).with_active(
            ("degrade", *pair), {"fraction": action.fraction, "mbit": mbit})
        steps.append(Step(tuple(run_all(cmds, pair[0])), state))
    return Plan(tuple(steps))


def _plan_degrade_clear(action: DegradeClear, state, ctx) -> Plan:
    link_mbit = ctx.topo.link(action.a, action.b).mbit
    kind = R.CLEARS[action.name]
    steps = []
    for pair, ns, intf in _clear_egress(action, state, ctx, kind):
        port = state.degraded[pair]
        cmds = F.degrade_clear_commands(ns, intf, list(port.leaves), link_mbit, port.own_qdisc)
        state = state.with_degraded(pair, None).with_active((kind, *pair), None)
        steps.append(Step(tuple(run_all(cmds, pair[0])), state))
    return Plan(tuple(steps))


# ---------------------------------------------------------------- OpenFlow faults


def _plan_blackhole(action: Blackhole, state, ctx) -> Plan:
    switch = action.a
    if switch in state.blackholes:
        raise F.FaultError(f"blackhole: {switch} is already a blackhole")
    if ctx.connected is not None and switch not in ctx.connected:
        raise F.FaultError(f"blackhole: switch {switch} is not connected")
    rule = F.blackhole_rule(ctx.topo, switch)
    return Plan((Step((InstallRules(switch, (rule,)),),
                      replace(state, blackholes=state.blackholes | {switch})),))


def _plan_blackhole_clear(action: BlackholeClear, state, ctx) -> Plan:
    switch = action.a
    if switch not in state.blackholes:
        raise F.FaultError(f"blackhole_clear: {switch} is not a blackhole")
    cookie = F.blackhole_rule(ctx.topo, switch).cookie
    return Plan((Step((DeleteCookie(switch, cookie),),
                      replace(state, blackholes=state.blackholes - {switch})),))


# ---------------------------------------------------------------- entry points


def plan(action: FaultAction, state: FaultState, ctx: PlanContext) -> Plan:
    """Commands that apply `action` on top of `state`, and the state after each step.
    Raises FaultError (nothing planned) if the action cannot apply to this state."""
    match action:
        case LinkDown():
            return _plan_link(action, state, ctx, up=False)
        case LinkUp():
            return _plan_link(action, state, ctx, up=True)
        case Flap():
            return _plan_flap(action, state, ctx)
        case GrayLoss():
            return _plan_gray_loss(action, state, ctx)
        case GrayLossClear():
            return _plan_nft_clear(action, state, ctx)
        case EcnMark():
            return _plan_ecn_mark(action, state, ctx)
        case EcnClear():
            return _plan_nft_clear(action, state, ctx)
        case Degrade():
            return _plan_degrade(action, state, ctx)
        case DegradeClear():
            return _plan_degrade_clear(action, state, ctx)
        case Blackhole():
            return _plan_blackhole(action, state, ctx)
        case BlackholeClear():
            return _plan_blackhole_clear(action, state, ctx)
    raise TypeError(f"not a fault action: {action!r}")


# A merged script is one command-line argument, and Linux caps one at 128 KiB (MAX_ARG_STRLEN).
NFT_SCRIPT_BUDGET = 64 * 1024
NFT_JOIN = "; "            # nft's separator between the commands of one script


def _active_changes(before: FaultState, after: FaultState) -> list[tuple[tuple, dict | None]]:
    """(key, params or None for removed) of every directional fault that differs."""
    keys = dict.fromkeys([*before.active, *after.active])
    return [(key, after.active.get(key)) for key in keys
            if before.active.get(key) != after.active.get(key)]


def merge_nft_steps(before: FaultState, steps, budget: int = NFT_SCRIPT_BUDGET,
                    server_of=lambda node: None) -> tuple[Step, ...]:
    """Steps of nftables faults (each one nft command on one port) as one step per network
    namespace: its scripts in their order, one nft transaction, so a fault on many ports costs
    the machine one process per namespace instead of one per port, and each namespace changes
    at one instant. Tables of different namespaces are independent, so only the order within
    a namespace is kept; a script past `budget` bytes starts another step. Each merged step's
    state holds its own changes and those of the steps before it, so a failure leaves the
    state describing what was applied. ValueError for a step that is not one nft command.
    server_of(node): the server a node's commands run on (None: this machine); the root
    namespaces of two servers are two namespaces, merged apart."""
    groups: dict[tuple, list[tuple[str, list]]] = {}
    nodes: dict[tuple, str | None] = {}
    previous = before
    for step in steps:
        if len(step.commands) != 1 or not isinstance(step.commands[0], RunArgv):
            raise ValueError(f"not a single nft command: {step.commands!r}")
        prefix, script = F.split_nft_argv(step.commands[0].argv)
        group = (server_of(step.commands[0].node), prefix)
        nodes.setdefault(group, step.commands[0].node)
        groups.setdefault(group, []).append((script, _active_changes(previous, step.state)))
        previous = step.state
    merged, state = [], before
    for group, items in groups.items():
        prefix = group[1]
        chunk: list[str] = []
        size = 0                          # len("; ".join(chunk)), kept as the chunk grows
        for i, (script, changes) in enumerate(items):
            size += len(script) + (len(NFT_JOIN) if chunk else 0)
            chunk.append(script)
            for key, params in changes:
                state = state.with_active(key, params)
            last = i + 1 == len(items)
            if last or size + len(NFT_JOIN) + len(items[i + 1][0]) > budget:
                merged.append(Step((RunArgv(tuple(F.nft_argv(list(prefix),
                                                              NFT_JOIN.join(chunk))),
                                            nodes[group]),), state))
                chunk, size = [], 0
    if steps and merged[-1].state != previous:
        raise ValueError("merged steps do not reach the state the steps did: a step changed "
                         "more than its directional faults")
    return tuple(merged)


def clear_actions(state: FaultState) -> list[FaultAction]:
    """One clear per directional fault in force (one direction each), for shutdown."""
    return [CLEAR_OF_KIND[kind](a=s, b=r, direction="a->b")
            for kind, s, r in state.active]
