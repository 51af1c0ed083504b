"""Log names are written once, in model/events.py: every producer and consumer of the event logs
and of the controller's fault log uses those constants, so a typo or a rename cannot leave a
reader matching nothing.

The scan reads the source (AST) of every project package and of the tests and reports a string
literal used as a log name where a log line is written (`emit("goodput", ...)`, a dict with an
"event" key) or read (`e["event"] == ...`, `e.get("phase") in (...)`, `df["event"].isin([...])`,
`events_of(df, ...)`, a name assigned from `e.get("event")` and compared later, a module constant
whose NAME says it holds events).
"""
from __future__ import annotations

import ast

import pytest

from model.events import ControllerLog, Event, Phase
from tests.helpers.paths import REPO as ROOT

SCANNED = ("traffic", "controller", "analysis", "emulation", "model", "tests")
DEFINITIONS = ROOT / "model" / "events.py"
# The field of a log line -> the names it may hold.
# The fault actions are left out: they are the fault API's input vocabulary (scenario files,
# `mrclab link`), listed in model/faults.py, and tests send them as a user would.
FIELDS = {"event": Event.ALL, "phase": frozenset(Phase.ALL), "action": ControllerLog.ALL}


def _sources():
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if path != DEFINITIONS:
                yield path


def _str_constants(node):
    """Every str constant of `node` itself or, for a tuple/list/set display, of its elements."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for elt in node.elts:
            yield from _str_constants(elt)


def _names_held(node):
    """The str constants a constant holds as names: a dict's keys, a collection's elements
    (also inside frozenset(...)/set(...)/tuple(...)), not the values a dict maps them to."""
    if isinstance(node, ast.Dict):
        return [k for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    if isinstance(node, ast.Call) and node.args:
        return _names_held(node.args[0])
    return list(_str_constants(node))


def _field_read(node) -> str | None:
    """'event' for `x["event"]` or `x.get("event")` (likewise "phase", "action"), else None."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        key = node.slice.value
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
          and node.func.attr == "get" and node.args and isinstance(node.args[0], ast.Constant)):
        key = node.args[0].value
    else:
        return None
    return key if key in FIELDS else None


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def literal_log_names(source: str) -> list[tuple[int, str]]:
    """(line, name) of every log name written as a string literal in `source`."""
    return sorted({(node.lineno, node.value) for node, _field in literal_nodes(ast.parse(source))})


def literal_nodes(tree: ast.AST) -> list[tuple[ast.Constant, str]]:
    """(string constant, the log field it names) of every log name written as a literal."""
    # names assigned from a field read (kind = e.get("event")) are compared later like the read
    aliases = {target.id: field for node in ast.walk(tree) if isinstance(node, ast.Assign)
               and (field := _field_read(node.value)) for target in node.targets
               if isinstance(target, ast.Name)}

    def field_of(node):
        if isinstance(node, ast.Name):
            return aliases.get(node.id)
        return _field_read(node)

    found = []

    def flag(field, nodes):
        found.extend((c, field) for c in nodes if c.value in FIELDS[field])

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _callee(node)
            if name == "emit":
                if node.args:
                    flag("event", _str_constants(node.args[0]))
                for kw in node.keywords:
                    if kw.arg in ("event", "phase"):
                        flag(kw.arg, _str_constants(kw.value))
            elif "event" in name.lower():
                for arg in [*node.args, *(kw.value for kw in node.keywords)]:
                    flag("event", _str_constants(arg))
            if (name == "isin" and isinstance(node.func, ast.Attribute)
                    and (field := field_of(node.func.value))):
                for arg in node.args:
                    flag(field, _str_constants(arg))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value in FIELDS and value is not None:
                    flag(key.value, _str_constants(value))
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for field in {f for f in map(field_of, operands) if f}:
                for operand in operands:
                    flag(field, _str_constants(operand))
        elif isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Name) and t.id.isupper() and "EVENT" in t.id
                   for t in node.targets):
                flag("event", _names_held(node.value))
    return found


@pytest.mark.parametrize("path", list(_sources()), ids=lambda p: str(p.relative_to(ROOT)))
def test_log_names_come_from_model_events(path):
    found = literal_log_names(path.read_text(encoding="utf-8"))
    rel = path.relative_to(ROOT)
    assert not found, "log names written as literals (use model.events):\n" + "\n".join(
        f"{rel}:{line}: {name!r}" for line, name in found)


@pytest.mark.parametrize("source,expected", [
    ('log.emit("goodput", rx_bytes=1)', [(1, "goodput")]),
    ('log.emit(Event.PHASE, phase="warmup_done")', [(1, "warmup_done")]),
    ('x = {"t_ns": 1, "event": "ev_state", "new": "ASSUMED_BAD"}', [(1, "ev_state")]),
    ('ok = [e for e in log if e["event"] == "iteration"]', [(1, "iteration")]),
    ('ok = e.get("event") in ("ev_suspect", "ev_cleared")', [(1, "ev_cleared"), (1, "ev_suspect")]),
    ('ok = df[df["event"].isin(["retransmit"])]', [(1, "retransmit")]),
    ('rows = events_of(df, "counters")', [(1, "counters")]),
    ('kind = e.get("event")\nif kind == "error":\n    pass', [(2, "error")]),
    ('ok = e.get("action") == "port_status"', [(1, "port_status")]),
    ('SHADOWED_EVENTS = frozenset({"goodput"})', [(1, "goodput")]),
    ('EVENT_NEEDS = {"goodput": ("rx_bytes",), "ev_state": ("qp", "ev")}',
     [(1, "ev_state"), (1, "goodput")]),
])
def test_the_scan_finds_each_kind_of_literal(source, expected):
    assert literal_log_names(source) == expected


@pytest.mark.parametrize("source", [
    'log.emit(Event.GOODPUT, rx_bytes=1)',
    'x = {"event": Event.EV_STATE, "reason": "timeout"}',
    'ok = e["event"] == Event.ITERATION and e["reason"] == "gbn"',
    'client.call("counters")',                       # a control-socket op, not a log name
    'x = {"port": "port", "qp": 3}',
])
def test_the_scan_passes_constants_and_other_strings(source):
    assert literal_log_names(source) == []


def test_the_names_are_the_log_format_on_disk():
    """The values are what run directories hold: runs written earlier, and readers outside this
    code (a notebook, a script), depend on them, so renaming one must be a deliberate change."""
    assert Event.ALL == {
        "ev_state", "ev_skip", "ev_suspect", "ev_cleared", "probe", "port", "retransmit",
        "completion", "qp_error", "qp", "denylist", "tx_error", "rx_error", "base_rtt", "lateness",
        "goodput", "counters", "phase", "iteration", "error"}
    assert Phase.ALL == ("connecting", "connected", "warmup_done", "done")

