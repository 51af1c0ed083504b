"""No two project modules import each other, directly or around a longer loop, counting the
imports inside functions too. test_layering.py orders the packages; this orders the modules
inside them, so a function-local import can never be the way around a cycle.
"""
from __future__ import annotations

import ast
from pathlib import Path
from tests.helpers.paths import REPO as ROOT

PACKAGES = ("model", "traffic", "controller", "analysis", "emulation")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(tree: ast.AST, known: set[str]) -> set[str]:
    """The modules of `known` that `tree` imports anywhere (`from pkg import module` included)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module in known:
                out.add(node.module)
            out |= {f"{node.module}.{alias.name}" for alias in node.names
                    if f"{node.module}.{alias.name}" in known}
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def project_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    known = set(paths)
    return {name: imported_modules(ast.parse(p.read_text(encoding="utf-8")), known) - {name}
            for name, p in paths.items()}


def test_no_module_imports_itself_around_a_loop():
    assert cycles(project_graph()) == []


def test_the_checker_finds_a_loop_through_a_function_local_import():
    fabric = ast.parse("from emulation.network import cleanup\n"
                       "def start():\n    from emulation.network.ovs_sndbuf import ensure\n")
    sndbuf = ast.parse("from emulation.network.fabric import FabricError\n")
    known = {"emulation.network.fabric", "emulation.network.ovs_sndbuf", "emulation.network.cleanup"}
    graph = {"emulation.network.fabric": imported_modules(fabric, known),
             "emulation.network.ovs_sndbuf": imported_modules(sndbuf, known),
             "emulation.network.cleanup": set()}
    assert graph["emulation.network.fabric"] == {"emulation.network.cleanup", "emulation.network.ovs_sndbuf"}
    assert cycles(graph) == [["emulation.network.fabric", "emulation.network.ovs_sndbuf"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
