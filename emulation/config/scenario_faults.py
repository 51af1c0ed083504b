"""The [[faults]] schedule of a scenario file: each entry checked against the fabric and the
fault registry (model/faults.py, through controller.faults), a `links` selector expanded into one
command per link, then the checks across entries (a time the run can reach, a clear that has a
fault before it, a time inside the traffic: emulation/config/scenario_timing.py).
emulation/config/scenario.py calls parse_faults() while loading a file;
`coll` is always its CollectiveSpec (read here: iterations, warmup, timeout_s), passed untyped
since scenario.py imports this module."""
from __future__ import annotations

from dataclasses import dataclass

from controller import faults
from emulation.config import scenario_timing as timing
from emulation.config.scenario_schema import FAULT, LINK_SELECTORS, Checker, ScenarioError
from model import faults as fault_kinds
from model.topology import Topology

FAULT_TIMING_KEYS = ("at_s", "at_iteration", "after_s", "links")


@dataclass
class FaultEntry:
    """One scheduled fault (a `links` selector is already expanded into one command per link)."""
    at_s: float | None
    at_iteration: int | None
    commands: list[dict]               # POST /fault bodies, validated
    line: int | None = None
    after_s: float | None = None       # seconds after the previous entry (file order) applied
    declared: str | None = None        # when() as the file says it, under a time scale

    def when(self) -> str:
        if self.declared is not None:
            return self.declared
        if self.at_s is not None:
            return f"at_s={self.at_s}"
        if self.after_s is not None:
            return f"after_s={self.after_s}"
        return f"at_iteration={self.at_iteration}"


def _fault_rules():
    """(validate, {action: parameter names}): controller.faults checks a command against the
    fault registry (model/faults.py), which names every action's parameters."""
    params = {k.action: set(k.param_names) for k in fault_kinds.KINDS}
    return faults.validate, params


def parse_faults(entries: list, ck: Checker, topo: Topology, coll) -> list[FaultEntry]:
    validate, action_params = _fault_rules()
    all_params = tuple(sorted(set().union(*action_params.values())))
    nodes = set(topo.node_names())
    switches = set(topo.switches)
    out = []
    for i, entry in enumerate(entries):
        try:
            out.append(_parse_fault(i, entry, ck, topo, coll, validate, all_params, nodes,
                                    switches))
        except ScenarioError:
            continue            # recorded in ck.errors; check the next entry too
    if len(out) == len(entries):    # the checks across entries need every entry parsed
        _check_fault_times(out, ck, coll)
        try:
            bound = timing.traffic_bound(coll, topo)
        except ValueError:      # a collective already refused (an odd bisection): no bound
            bound = None
        places = timing.placements(out)
        if bound is not None:
            _check_fit(out, places, bound, ck)
        _check_clears(out, places, bound.iteration_s if bound else 0.0, ck)
    return out


def _parse_fault(i: int, entry: dict, ck: Checker, topo: Topology, coll,
                 validate, all_params: tuple, nodes: set, switches: set) -> FaultEntry:
    """One [[faults]] entry, checked; raises ScenarioError (recorded in ck) when it is unusable."""
    line = ck.loc.table("faults", i)
    where = f"[[faults]] #{i + 1}"

    def key_line(key):
        return ck.loc.key("faults", key, i) or line

    before = len(ck.errors)
    entry = ck.keys(entry, "faults", FAULT, occurrence=i, where=where, extra=all_params,
                    his={"at_iteration": coll.iterations - 1})
    if len(ck.errors) > before:
        ck.raise_errors()
    timing = [k for k in ("at_s", "at_iteration", "after_s") if k in entry]
    if len(timing) != 1:
        ck.fail(where, "needs exactly one of at_s, at_iteration or after_s", line)
    if timing == ["after_s"] and i == 0:
        ck.fail(f"{where} after_s", "the first entry has no previous one to follow; use "
                "at_s or at_iteration", key_line("after_s"))
    if "action" not in entry:
        ck.fail(where, "needs action = \"...\" (a string)", line)
    body = {k: v for k, v in entry.items() if k not in FAULT_TIMING_KEYS}
    for end in ("a", "b", "node"):
        name = body.get(end)
        if name is not None and name not in nodes:
            spec = topo.spec
            ck.fail(f"{where} {end}", f"no node {name!r} in this fabric ({spec.planes} planes, "
                    f"{spec.groups} groups, {spec.spines} spines, {spec.hosts_per_group} "
                    f"hosts per group)", key_line(end))
    if "links" in entry:
        commands = _expand_links(entry["links"], body, ck, topo, switches, validate, where,
                                 key_line)
    else:
        commands = [_validated(validate, body, topo, ck, where, key_line)]
    return FaultEntry(at_s=entry.get("at_s"), at_iteration=entry.get("at_iteration"),
                      commands=commands, line=line, after_s=entry.get("after_s"))


RUN_START_ALLOWANCE_S = 60.0     # fabric and endpoints start within this (emulation.run.runner)
# clear -> the fault it ends, for the clears the controller refuses without their fault in force
CLEARED_BY = {k.action: k.clears for k in fault_kinds.KINDS if k.needs_fault}


def longest_run_s(coll) -> float:
    """The longest a run can last: the runner stops the workers then (each iteration, warm-up
    included, waits at most timeout_s)."""
    return RUN_START_ALLOWANCE_S + (coll.warmup + coll.iterations) * coll.timeout_s


def _check_fault_times(entries: list[FaultEntry], ck: Checker,
                       coll) -> list[float | None]:
    """Each entry's time after the timed start (None: known only at run time, at_iteration);
    a time past the longest the run can last is refused, since the fault could never apply."""
    limit = longest_run_s(coll)
    times: list[float | None] = []
    prev = None
    for i, e in enumerate(entries):
        if e.at_s is not None:
            t, key = e.at_s, "at_s"
        elif e.after_s is not None:
            t, key = (prev or 0.0) + e.after_s, "after_s"
        else:
            t, key = None, "at_iteration"
        if t is not None and t > limit:
            ck.fail(f"[[faults]] #{i + 1} {key}",
                    f"comes {t:g} s after the timed start, past the longest this run can last "
                    f"({limit:g} s: {RUN_START_ALLOWANCE_S:g} s start-up + (warmup + iterations) "
                    f"x [collective] timeout_s); it could never apply",
                    ck.loc.key("faults", key, i) or e.line)
        times.append(t)
        prev = t
    return times


def _check_fit(entries: list[FaultEntry], places: list, bound, ck: Checker) -> None:
    """Every entry due inside the traffic at any time scale and for any transport
    (emulation/config/scenario_timing.py); an entry placed by iteration alone always is."""
    for i, (e, place) in enumerate(zip(entries, places)):
        key = "at_s" if e.at_s is not None else "after_s" if e.after_s is not None else \
            "at_iteration"
        problem = timing.misfit(place, bound, key)
        if problem:
            ck.note(f"[[faults]] #{i + 1} {key}", problem, ck.loc.key("faults", key, i) or e.line)


# clear -> the fault it ends, for every clear (link_up included: the controller accepts a
# link_up on a link that is up, but a schedule that may bring a link up before it goes down
# does not test what it says)
FAULT_OF_CLEAR = dict(fault_kinds.CLEARS)


def _check_clears(entries: list[FaultEntry], places: list, iteration_s: float,
                  ck: Checker) -> None:
    """A clear needs its fault on the same target in an entry that comes before it however
    fast or slow the traffic runs (scenario_timing.surely_after). A clear the controller
    refuses without its fault needs one; a link_up is checked against the link_downs of its
    link when there are any."""
    for i, e in enumerate(entries):
        for cmd in e.commands:
            fault = FAULT_OF_CLEAR.get(cmd["action"])
            if fault is None:
                continue
            target = fault_kinds.target_of(cmd)
            faults_on = [j for j, f in enumerate(entries) if j != i and any(
                c["action"] == fault and fault_kinds.target_of(c) == target for c in f.commands)]
            if any(timing.surely_after(places[i], places[j], iteration_s) for j in faults_on):
                continue
            what = cmd.get("a") if isinstance(target, str) else f"{cmd.get('a')}~{cmd.get('b')}"
            line = ck.loc.key("faults", "action", i) or e.line
            either = [j for j in faults_on if places[j].anchor != places[i].anchor]
            if either:
                ck.fail(f"[[faults]] #{i + 1}", f"{cmd['action']} on {what} may come before "
                        f"the {fault} of entry #{either[0] + 1}: entries placed by different "
                        f"iterations (at_s counts from iteration 0) can come in either order "
                        f"depending on how fast the traffic runs; place it after_s after that "
                        f"entry, or at a later at_iteration", line)
            elif faults_on or cmd["action"] in CLEARED_BY:
                ck.fail(f"[[faults]] #{i + 1}", f"{cmd['action']} on {what} clears nothing: no "
                        f"{fault} on it comes before (add one, or remove this entry)", line)


def _expand_links(selector: str, body: dict, ck: Checker, topo: Topology, switches: set,
                  validate, where: str, key_line) -> list[dict]:
    """One command per selected link. The controller's rules depend on the action's parameters
    and on which end of the link is a host, both the same for every link of one kind, so one
    link of each kind is validated and the others reuse its normalized command, so validation
    costs the same on the largest fabric (49,152 links) as on the smallest."""
    if selector not in LINK_SELECTORS and selector not in switches:
        ck.fail(f"{where} links", f"must be one of {', '.join(LINK_SELECTORS)} or a switch "
                f"of this fabric (e.g. {min(switches)}), got {selector!r}", key_line("links"))
    if {"a", "b", "node"} & set(body):
        ck.fail(where, "give either links = ... or a/b, not both", key_line("links"))
    if selector in switches:         # every link of one switch: the switch goes down
        targets = [lk for lk in topo.links if selector in (lk.a, lk.b)]
    else:
        targets = [lk for lk in topo.links if selector == "all" or lk.kind == selector]
    checked: dict[str, dict] = {}
    commands = []
    for lk in targets:
        if lk.kind not in checked:
            checked[lk.kind] = _validated(validate, dict(body, a=lk.a, b=lk.b), topo, ck, where,
                                          key_line)
        commands.append(dict(checked[lk.kind], a=lk.a, b=lk.b))
    return commands


def _validated(validate, cmd: dict, topo: Topology, ck: Checker, where: str, key_line) -> dict:
    try:
        return validate(cmd, topo)
    except ValueError as exc:
        ck.fail(where, str(exc), key_line("action"))


def schedule_order(faults: list[FaultEntry]) -> list[FaultEntry]:
    """Iteration-triggered entries keep file order among themselves; timed ones sort by time."""
    return sorted(faults, key=lambda f: (f.at_s is None, f.at_s or 0.0, f.at_iteration or 0))
