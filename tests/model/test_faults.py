"""The fault registry (model/faults.py): its facts as the documentation states them, and one
tie that every place naming fault actions (the controller, the scenario loader, `mrclab link`,
the analysis) names only registered ones."""
from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

from model import faults as R
from model.events import ControllerLog

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- facts, from the docs


@pytest.mark.parametrize("fault, clear", [
    ("link_down", "link_up"), ("gray_loss", "gray_loss_clear"), ("degrade", "degrade_clear"),
    ("ecn_mark", "ecn_clear"), ("blackhole", "blackhole_clear")])
def test_each_fault_is_ended_by_its_clear(fault, clear):
    assert R.kind(fault).cleared_by == clear
    assert R.kind(clear).clears == fault


def test_a_flap_ends_by_itself():
    assert R.kind("flap").cleared_by is None and not R.kind("flap").is_clear


def test_the_controller_refuses_a_clear_of_nothing_but_not_a_link_up():
    """controller/planner.py: "no gray_loss active", "is not a blackhole"; a link_up just sets
    the link up."""
    assert {k.action for k in R.KINDS if k.needs_fault} == {
        "gray_loss_clear", "degrade_clear", "ecn_clear", "blackhole_clear"}


def test_a_blackhole_targets_a_switch_and_every_other_kind_a_link():
    assert R.kind("blackhole").target == R.kind("blackhole_clear").target == R.NODE
    assert {k.action for k in R.KINDS if k.target == R.LINK} == {
        "link_down", "link_up", "flap", "gray_loss", "gray_loss_clear", "degrade",
        "degrade_clear", "ecn_mark", "ecn_clear"}


def test_times_and_rates_as_the_time_scale_doc_lists_them():
    """docs/fidelity-timescale.md: a flap's period_s is x k, ecn_mark's rate_mbit / k; a
    degrade's fraction is a share of the (already scaled) link rate, neither."""
    assert R.kind("flap").time_params == ("period_s",)
    assert R.kind("ecn_mark").rate_params == ("rate_mbit",)
    assert R.kind("degrade").time_params == R.kind("degrade").rate_params == ()
    assert R.TIME_PARAMS == ("period_s",) and R.RATE_PARAMS == ("rate_mbit",)
    flap = {"action": "flap", "a": "x", "b": "y", "period_s": 1.0, "count": 3}
    assert R.time_params_of(flap) == ("period_s",) and R.rate_params_of(flap) == ()
    ecn = {"action": "ecn_mark", "a": "x", "b": "y", "rate_mbit": 5.0, "direction": "both"}
    assert R.time_params_of(ecn) == () and R.rate_params_of(ecn) == ("rate_mbit",)
    assert R.time_params_of({"action": ControllerLog.FLAP_STEP}) == ()


@pytest.mark.parametrize("action, name, ok, bad", [
    # docs/reference.md (`mrclab link ...`): the ranges of each parameter
    ("flap", "period_s", (0.02, 3600), (0.019, 3600.5)),
    ("flap", "count", (1, 10000), (0, 10001, 2.0)),
    ("gray_loss", "percent", (0, 100, 0.01), (-0.01, 100.01)),
    ("degrade", "fraction", (1, 0.001), (0, 1.01)),
    ("ecn_mark", "rate_mbit", (0.001, 100000), (0, 100000.1)),
    ("gray_loss", "direction", ("a->b", "b->a", "both"), ("forward", "a<-b")),
])
def test_parameter_ranges(action, name, ok, bad):
    p = R.kind(action).param(name)
    assert [v for v in ok if p.problem(v) is not None] == []
    assert [v for v in bad if p.problem(v) is None] == []


def test_directional_kinds_default_to_both_directions():
    assert {k.action for k in R.KINDS if k.directional} == {
        "gray_loss", "gray_loss_clear", "degrade", "degrade_clear", "ecn_mark", "ecn_clear"}
    assert all(k.optional == {"direction": "both"} for k in R.KINDS if k.directional)


def test_command_line_spellings():
    """docs/reference.md: `mrclab link down|up|flap|loss|blackhole|degrade|ecn|clear`, and
    `clear {gray_loss,blackhole,degrade,ecn}`."""
    assert {w: k.action for w, k in R.BY_CLI.items()} == {
        "down": "link_down", "up": "link_up", "flap": "flap", "loss": "gray_loss",
        "blackhole": "blackhole", "degrade": "degrade", "ecn": "ecn_mark"}
    assert {w: k.action for w, k in R.BY_CLEAR_WORD.items()} == {
        "gray_loss": "gray_loss_clear", "blackhole": "blackhole_clear",
        "degrade": "degrade_clear", "ecn": "ecn_clear"}


def test_what_recovery_means_for_each_kind():
    """README and analysis/recovery.py: a link down or a blackhole leaves no capacity, a restore
    gives it back, ECN marking takes none away; a flap impairs its link from its first down to
    its last up: period 1 s, count 2 is down at 0, up at 0.5, down at 1, up at 1.5 s."""
    assert R.kind("link_down").capacity == R.kind("blackhole").capacity == R.CAP_ZERO
    assert all(R.kind(c).capacity == R.CAP_RESTORE
               for c in ("link_up", "gray_loss_clear", "degrade_clear", "blackhole_clear"))
    assert R.kind("ecn_mark").capacity is R.kind("ecn_clear").capacity is R.CAP_NONE
    assert R.kind("degrade").capacity_param == "fraction"
    assert R.kind("flap").window == R.WIN_OWN
    assert R.own_window_ns({"action": "flap", "period_s": 1.0, "count": 2}) == 1_500_000_000
    assert R.window_closed_by("link_up") == "link_down"
    assert R.window_closed_by("ecn_clear") is None      # ECN marking impairs no path
    assert R.kind("link_down").display() == "down" and R.kind("gray_loss").display() == "gray_loss"


def test_targets_match_whichever_way_round_a_link_is_given():
    assert R.target_of({"action": "link_down", "a": "x", "b": "y"}) == \
        R.target_of({"action": "link_up", "a": "y", "b": "x"})
    assert R.target_of({"action": "blackhole", "node": "t1p0s0"}) == "t1p0s0"


# ---------------------------------------------------------------- one registry, read everywhere


def test_the_controller_takes_exactly_the_registered_actions():
    """Validation, the typed actions (with the registry's parameters as their fields) and the
    planner's cases all cover every registered action and nothing else."""
    from controller import actions, planner
    from controller import faults as F
    from model.topology import FabricSpec, Topology
    assert tuple(F.ACTIONS) == tuple(actions.BY_NAME) == R.ACTIONS
    assert set(actions.BY_NAME) == {c.name for c in actions.FaultAction.__args__}
    topo = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2))
    for k in R.KINDS:
        cls = actions.BY_NAME[k.action]
        ends = ("a",) if k.target == R.NODE else ("a", "b")
        assert tuple(f.name for f in dataclasses.fields(cls)) == ends + tuple(
            sorted(k.param_names, key=lambda n: n != "direction")), k.action
        cmd = {"action": k.action, "a": "t0p0g0", "b": "t1p0s0"} if k.target == R.LINK else \
            {"action": k.action, "node": "t1p0s0"}
        cmd.update({p.name: p.hi for p in k.params if p.required})
        assert actions.parse(cmd, topo).name == k.action
        assert f"case {cls.__name__}():" in inspect.getsource(planner.plan)


def test_the_scenario_loader_and_the_command_line_name_registered_actions():
    from emulation import cli, cli_controller
    from emulation.config import scenario_faults
    assert set(scenario_faults.CLEARED_BY.items()) <= set(R.CLEARS.items())
    parser = cli.build_parser()
    link = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub = next(a for a in link.choices["link"]._actions
               if isinstance(a, argparse._SubParsersAction)).choices
    assert set(sub) == set(R.BY_CLI) | {"clear"}
    what = next(a for a in sub["clear"]._actions if a.dest == "what")
    assert tuple(what.choices) == tuple(R.BY_CLEAR_WORD)
    for word, k in R.BY_CLI.items():
        args = ["t1p0s0"] if k.target == R.NODE else ["t0p0g0", "t1p0s0"]
        if word != "flap":          # a flap's parameters are options with defaults
            args += ["1" for p in k.params if p.required]
        body = cli_controller.fault_body(parser.parse_args(["link", word, *args]))
        assert body["action"] == k.action
    for word, k in R.BY_CLEAR_WORD.items():
        args = ["clear", word, "t1p0s0"] if k.target == R.NODE else \
            ["clear", word, "t0p0g0", "t1p0s0"]
        body = cli_controller.fault_body(parser.parse_args(["link", *args]))
        assert body["action"] == k.action


def _action_literals(tree: ast.AST) -> set[str]:
    """String constants compared with, or looked up by, the action of a fault command or a
    fault-log entry: `action == "x"`, `rec.get("action") in ("x", "y")`,
    `{"x": ...}.get(f["action"])`. (An attribute `.action` is another vocabulary: argparse's
    subcommand, a verdict's.)"""
    def is_action(node) -> bool:
        if isinstance(node, ast.Name):
            return node.id == "action"
        if isinstance(node, ast.Subscript):
            return isinstance(node.slice, ast.Constant) and node.slice.value == "action"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "get" and node.args:
            return isinstance(node.args[0], ast.Constant) and node.args[0].value == "action"
        return False

    def strings(node) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [s for e in node.elts for s in strings(e)]
        return []

    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(is_action(s) for s in sides):
                found.update(s for side in sides for s in strings(side))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "get" and isinstance(node.func.value, ast.Dict) and \
                node.args and is_action(node.args[0]):
            found.update(s for key in node.func.value.keys for s in strings(key))
    return found


ANALYSIS_AND_CONTROL = ("analysis", "controller", "emulation")


def test_every_action_the_analysis_and_the_controller_compare_is_registered():
    """A fault kind one module knows and the registry does not would be a second list: what a
    module compares a log entry's or a command's action with is a registered fault action or a
    controller log name (model/events.py)."""
    known = set(R.ACTIONS) | set(ControllerLog.ALL)
    unknown = {}
    for package in ANALYSIS_AND_CONTROL:
        for path in sorted((ROOT / package).rglob("*.py")):
            names = _action_literals(ast.parse(path.read_text())) - known
            if names:
                unknown[str(path.relative_to(ROOT))] = sorted(names)
    assert unknown == {}


def test_the_scan_finds_each_form():
    src = ('if action == "a1": pass\n'
           'if rec.get("action") in ("a2", "a3"): pass\n'
           'w = {"a4": 1}.get(f["action"], 0)\n'
           'if cmd["action"] != "a5": pass\n'
           'if other == "not_one" or args.action == "clear": pass\n')
    assert _action_literals(ast.parse(src)) == {"a1", "a2", "a3", "a4", "a5"}
