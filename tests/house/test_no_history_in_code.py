"""Code comments and docstrings state the rule and its reason, not the measurements or incidents
behind it: those go in dated files under docs/ (docs/results/), where they can age without
misleading a reader of the code."""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path
from tests.helpers.paths import REPO

PACKAGES = ("model", "traffic", "controller", "analysis", "emulation", "scripts")
# Phrases that report a measurement or tell a story of what once happened.
HISTORY = re.compile("|".join((
    r"\(measured\b", r"\bmeasured: ~?\d", r"\bMeasured\b", r"\bmeasured (?:here|on|in|under)\b",
    r"\d\s*(?:ms|us|ns|s|%)\s+against\s+~?\d",            # "0.67 us against 6.3 us"
    r"\b20\d\d-\d\d-\d\d\b",                               # a date
    r"\bearlier (?:session|run)s?\b", r"\b(?:in|of) (?:two|three|\d+) (?:full |short )?runs\b",
    r"\bper run\b", r"\bbefore (?:the fix|this change)\b", r"\bused to (?:be|retire|send|take)\b",
)))


def comments_and_docstrings(path: Path):
    """(line, text) of every comment and every module/class/function docstring."""
    source = path.read_text()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                start = node.body[0].lineno
                for i, line in enumerate(doc.splitlines()):
                    yield start + i, line


def history_lines(paths) -> list[str]:
    found = []
    for path in paths:
        for line, text in comments_and_docstrings(path):
            hit = HISTORY.search(text)
            if hit:
                found.append(f"{path.relative_to(REPO)}:{line}: {hit.group(0)!r}: {text.strip()[:90]}")
    return found


def test_no_measurements_or_incidents_in_code_comments():
    paths = sorted(p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py"))
    assert history_lines(paths) == []


def test_the_check_finds_a_measurement_diary(tmp_path):
    pkg = tmp_path / "mod.py"
    pkg.write_text('"""Rule. (measured: 160 us/packet)."""\n# 0.67 us against 6.3 us for zlib\n'
                   "x = 1  # the RTT is measured per peer: fine\n# seen 2026-11-27, 3 per run\n")
    global REPO
    old, REPO = REPO, tmp_path
    try:
        found = history_lines([pkg])
    finally:
        REPO = old
    assert sorted(f.split(":")[1] for f in found) == ["1", "2", "4"]
