"""The package layering contract, checked on the source (every import, function-local ones too).

    model <- traffic <- controller <- emulation
    model <- analysis              <- emulation

`model` (names, addresses, EV bit layout, uSIDs, DSCP values, the switch port policy, the command
runner) imports no other project package; `traffic` (wire format, transport, endpoints,
collectives) sees only `model`; `controller` (routing, faults, OpenFlow app, the denylist it pushes
to endpoints over their control protocol) sees `model` and `traffic`; `analysis` reads what
traffic writes, through what `model` states of it alone (log names, the lateness bucket layout,
the defaults a run is judged by); `emulation` (fabric, runner, CLI, benches) orchestrates
everything. A cycle would make every package depend on every other one, which is what this
layering forbids.

A project import inside a function is allowed only where deferring it is the point (a heavy or
root-only dependency such as Mininet, matplotlib or os-ken), and the line then says so with a
`# deferred:` comment.
"""
from __future__ import annotations

import ast

import pytest
from tests.helpers.paths import REPO as ROOT

PACKAGES = ("model", "traffic", "controller", "analysis", "emulation")
ALLOWED = {
    "model": set(),
    "traffic": {"model"},
    "controller": {"model", "traffic"},
    "analysis": {"model"},
    "emulation": {"model", "traffic", "controller", "analysis"},
}


def _modules():
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            yield pkg, path


def _project_imports(tree: ast.AST):
    """(line, top-level package, inside a function?) for every import of a project package."""
    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    top = alias.name.split(".")[0]
                    if top in PACKAGES:
                        yield child.lineno, top, in_function
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                top = child.module.split(".")[0]
                if top in PACKAGES:
                    yield child.lineno, top, in_function
            yield from visit(child, nested)
    yield from visit(tree, False)


def test_every_package_exists():
    for pkg in PACKAGES:
        assert (ROOT / pkg / "__init__.py").is_file(), pkg


@pytest.mark.parametrize("pkg,path", list(_modules()), ids=lambda v: str(v))
def test_imports_follow_the_layering(pkg, path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = [f"{path.relative_to(ROOT)}:{line}: {pkg} imports {top}"
           for line, top, _ in _project_imports(tree) if top != pkg and top not in ALLOWED[pkg]]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("pkg,path", list(_modules()), ids=lambda v: str(v))
def test_function_local_project_imports_say_why(pkg, path):
    lines = path.read_text(encoding="utf-8").splitlines()
    tree = ast.parse("\n".join(lines))
    bad = [f"{path.relative_to(ROOT)}:{line}: {lines[line - 1].strip()}"
           for line, _top, local in _project_imports(tree)
           if local and "# deferred:" not in lines[line - 1]]
    assert not bad, "function-local project imports without a '# deferred:' reason:\n" + "\n".join(bad)


def test_the_checker_sees_a_violation():
    """The walker must find imports nested in functions and classes, or the tests above prove nothing."""
    src = "import os\nclass A:\n    def f(self):\n        from emulation.network.fabric import Fabric\n"
    found = list(_project_imports(ast.parse(src)))
    assert found == [(4, "emulation", True)]
