"""No history where a reader takes the text for the rule: code comments and docstrings, the
comments of scenario files, configuration, C, Lua and shell, and every Markdown page outside
docs/results/ (the README and docs/*.md are the manual). They state the rule and its reason;
measurements and incidents (what a run took, what happened once, what a commit changed) go in
dated files under docs/results/, where they can age without misleading anyone."""
from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Where history belongs, and what is not ours to read (hostile_corpus: deliberately broken files).
EXEMPT = ("docs/results/", "tests/unit/hostile_corpus/")
# The line-comment marker of each commented file type; Markdown is read whole.
COMMENT_MARK = {".toml": "#", ".sh": "#", ".c": "//", ".lua": "--"}
SUFFIXES = (".py", ".md", *COMMENT_MARK)
# Phrases that report a measurement or tell a story of what once happened. A rule may name a
# quantity ("about 190 ms at 30 Mbit/s" is arithmetic); it may not report what a run gave.
HISTORY = re.compile("|".join((
    r"\(measured\b(?!\s*[/x*])", r"\bmeasured: ~?\d", r"\bMeasured(?::| on| in| under| with)",
    r"\bmeasured (?:here|on|in|under)\b",
    r"\d\s*(?:ms|us|ns|s|%)\s+against\s+~?\d",              # "<x> us against <y> us"
    r"(?<![\w/-])20\d\d-\d\d-\d\d\b",                        # a date (not a docs/results/ path)
    r"\bearlier (?:session|run)s?\b", r"\b(?:in|of) (?:one|two|three|\d+) (?:full |short )?runs\b",
    r"\(\d+ runs\)", r"\btimes per run\b", r"\bper short run\b",
    r"\bbefore (?:the fix|this change)\b", r"\bused to (?:be|retire|send|take|cost)\b",
    r"\btook ~?\d", r"\b(?:was|were) ~?\d[\d.,]*\s*(?:ms|us|ns|s|%|x)\b",   # "took <n> s"
    r"\(CPU-bound, \d", r"\d\s*(?:ms|s) on (?:a|the) (?:busy|loaded|idle) (?:machine|VM)\b",
    r"\b\d+ iterations (?:ended|took)\b", r"\bonce, at\b", r"\bcommits? [0-9a-f]{7,40}\b",
)))


def _py(text: str):
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                start = node.body[0].lineno
                for i, line in enumerate(doc.splitlines()):
                    yield start + i, line


def _commented(text: str, mark: str):
    """The comment part of each line: from the marker on (a marker inside a string on the same
    line is read as a comment too: harmless for a check that only looks for phrases)."""
    for i, line in enumerate(text.splitlines(), 1):
        at = line.find(mark)
        if at >= 0:
            yield i, line[at:]


def prose(path: Path):
    """(line, text) of what a reader of `path` takes as explanation."""
    text = path.read_text(errors="replace")
    if path.suffix == ".py":
        return _py(text)
    if path.suffix == ".md":
        return enumerate(text.splitlines(), 1)
    return _commented(text, COMMENT_MARK[path.suffix])


def history_lines(paths, root: Path) -> list[str]:
    found = []
    for path in paths:
        for line, text in prose(path):
            hit = HISTORY.search(text)
            if hit:
                found.append(f"{path.relative_to(root)}:{line}: {hit.group(0)!r}: "
                             f"{text.strip()[:90]}")
    return found


def shipped_files(root: Path) -> list[Path]:
    """Tracked files of the checked types (git ls-files: never .git, build/, .venv/)."""
    names = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True,
                           capture_output=True, text=True).stdout.split("\0")
    return sorted(root / n for n in names
                  if n.endswith(SUFFIXES) and not n.startswith(EXEMPT) and (root / n).is_file())


def test_no_measurements_or_incidents_outside_docs_results():
    assert history_lines(shipped_files(REPO), REPO) == []


def test_every_file_type_is_read(tmp_path):
    """A narration in each checked type is found; a rule next to it is not."""
    files = {
        "mod.py": '"""Rule. (measured: 160 us/packet)."""\n# 0.67 us against 6.3 us for zlib\n'
                  "x = 1  # the RTT is measured per peer: fine\n"
                  "# seen 2026-11-27, 3 times per run\n",
        "experiments/x.toml": '# the median iteration was 1.8 s (CPU-bound, 309 ACK timeouts)\n'
                              'name = "2026-11-27"   # a value, not a comment: fine\n'
                              "iterations = 24    # 16 iterations took 5.0 s on a busy machine\n",
        "pyproject.toml": "# timeouts sized on the loaded RTT: fine\nx = 1\n",
        "trim.c": "// helper calls per field: fine\nint x; // validating it took 44 s\n",
        "mrc.lua": "-- Layout: fine\nlocal x = 1 -- this used to be a table\n",
        "setup.sh": "#!/bin/sh\n# in an earlier session the build failed\n",
        "docs/page.md": "# A manual\n\nThe rule and its reason.\n\nSource: commit f6784ac.\n",
        "docs/results/2026-11-28-x.md": "Measured on 2026-11-28 (3 runs), took 44 s: fine here.\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    found = history_lines(shipped_files(tmp_path), tmp_path)
    assert sorted(":".join(f.split(":")[:2]) for f in found) == [
        "docs/page.md:5", "experiments/x.toml:1", "experiments/x.toml:3", "mod.py:1", "mod.py:2",
        "mod.py:4", "mrc.lua:2", "setup.sh:2", "trim.c:2"]
