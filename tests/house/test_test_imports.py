"""No module under tests/ imports a test module (test_*.py): what several test files share lives
in tests/helpers/. A test module imported by another is collected twice over, runs its imports'
side effects in a second place, and ties one file's tests to another file's layout, so moving
or splitting it breaks tests that say nothing about it."""
import ast
from pathlib import Path

from tests.helpers.paths import REPO

TESTS = REPO / "tests"


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def _is_test_module(dotted: str) -> bool:
    return dotted.split(".")[-1].startswith("test_")


def imported_test_modules(source: str, module: str) -> list[str]:
    """The test modules that `source` (the text of module `module`, dotted) imports, anywhere in
    it (a function-level import counts too)."""
    package = module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if any(p.startswith("test_")
                                                        for p in a.name.split("."))]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if any(p.startswith("test_") for p in target.split(".")):
                found.append(target)
            elif target == "tests" or target.startswith("tests."):
                found += [f"{target}.{a.name}" for a in node.names if _is_test_module(a.name)]
    return found


def test_no_module_under_tests_imports_a_test_module():
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        for name in imported_test_modules(path.read_text(), _module_name(path)):
            offenders.append(f"{path.relative_to(REPO)} imports {name}")
    assert not offenders, "move what is shared to tests/helpers/:\n" + "\n".join(offenders)


def test_the_scan_finds_every_form_of_import():
    module = "tests.traffic.core.test_a"
    assert imported_test_modules("from tests.traffic.core.test_b import make\n", module) == \
        ["tests.traffic.core.test_b"]
    assert imported_test_modules("import tests.analysis.test_pcap as p\n", module) == \
        ["tests.analysis.test_pcap"]
    assert imported_test_modules("from tests.analysis import test_pcap\n", module) == \
        ["tests.analysis.test_pcap"]
    assert imported_test_modules("def f():\n    from .test_b import x\n", module) == \
        ["tests.traffic.core.test_b"]
    assert imported_test_modules("from ..nic import test_endpoint_loop\n", module) == \
        ["tests.traffic.nic.test_endpoint_loop"]


def test_the_scan_passes_helpers_and_sources():
    source = ("from tests.helpers.synth import make_run\nfrom tests.helpers import simnet\n"
              "from traffic.core.codec import Codec\nimport pytest\n")
    assert imported_test_modules(source, "tests.analysis.test_pcap") == []
