"""Comments, docstrings and scenario notes explain themselves: none sends the reader to a document
that is not in this repository (a design note, a task description, an issue number, a work
session). Cite the paper, the OCP MRC 1.0 specification, a file here, or a measurement instead.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.helpers.paths import REPO as ROOT

SCANNED = ("model", "traffic", "controller", "analysis", "emulation", "tests", "experiments",
           "scripts")
SUFFIXES = {".py", ".toml", ".sh", ".lua", ".c", ".h", ".md"}
OUTSIDE = re.compile(r"\b(?:MRC|DESIGN)\.md\b|\bthe brief\b|\bissues? ?#?\d+|\bissue-\d+"
                     r"|\bsession \d+", re.IGNORECASE)


def _texts():
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and path != Path(__file__).resolve():
                yield path
    for name in ("Makefile", "pyproject.toml", "README.md"):
        yield ROOT / name


def outside_references(text: str) -> list[tuple[int, str]]:
    return [(n, m.group(0)) for n, line in enumerate(text.splitlines(), start=1)
            for m in OUTSIDE.finditer(line)]


@pytest.mark.parametrize("path", list(_texts()), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_text_points_at_a_document_the_reader_does_not_have(path):
    found = outside_references(path.read_text(encoding="utf-8", errors="replace"))
    rel = path.relative_to(ROOT)
    assert not found, "\n".join(f"{rel}:{line}: {what}" for line, what in found)


@pytest.mark.parametrize("text,hits", [
    ("# see MRC.md, \"Monitoring\"", ["MRC.md"]),
    ("(DESIGN.md)", ["DESIGN.md"]),
    ('"""the issue-3 DONE test"""', ["issue-3"]),
    ("# as the brief says", ["the brief"]),
    ("# issues 3 and 6", ["issues 3"]),
    ("# fixed in session 2", ["session 2"]),
    ("start_new_session=True  # OCP MRC 1.0, traffic/WIRE_FORMAT.md", []),
])
def test_the_pattern_finds_each_kind(text, hits):
    assert [what for _, what in outside_references(text)] == hits
