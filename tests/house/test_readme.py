"""The README is a manual: short, and every measurement it names points at its source (the
generated reference, docs/reference.md, is checked by tests/emulation/test_reference.py)."""
from __future__ import annotations

import re

from tests.helpers.paths import REPO

README = REPO / "README.md"
MAX_LINES = 300
# A number with a unit of time, rate, size per time, ratio or share: a measurement.
MEASUREMENT = re.compile(
    r"(?<![\w.])~?\d[\d,.]*(?:\s*-\s*\d[\d,.]*)?\s*"
    r"(?:ms|us|ns|s|sec|seconds?|min|minutes?|hours?|[KMG]bit/s|Mbit|[kKMG]i?B/s|pkt/s|%|x)"
    r"(?![\w/])")
# A source: the results index, a dated results file or a run directory.
SOURCE = re.compile(r"docs/results(?:\.md|/[\w.-]+\.md)|results/[\w.-]+-\d{8}-\d{6}")
# Numbers that define something rather than measure it (the recovery metric, the figures).
DEFINITIONS = ("90% of what the surviving", "(100% = the pre-fault", "0 ms is drawn as")


def blocks(text: str) -> list[str]:
    """Paragraphs, list items and table rows, each with the fenced code block that follows it
    (a sample output is sourced by the sentence that introduces it)."""
    out, current, fence = [], [], False
    for line in text.splitlines():
        if line.startswith("```"):
            if not fence and not current and out:
                current = [out.pop()]          # the block that introduces this output
            fence = not fence
            current.append(line)
            continue
        if fence:
            current.append(line)
            continue
        starts_new = not line.strip() or line.startswith(("* ", "|", "#"))
        if starts_new and current:
            out.append("\n".join(current))
            current = []
        if line.strip():
            current.append(line)
    if current:
        out.append("\n".join(current))
    return out


def _without_inline_code(block: str) -> str:
    """The block without `inline code` (options and keys are settings, not measurements);
    fenced lines (sample output) are kept whole."""
    out, fence = [], False
    for line in block.splitlines():
        if line.startswith("```"):
            fence = not fence
            continue
        out.append(line if fence else re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def unsourced_measurements(text: str) -> list[str]:
    bad = []
    for block in blocks(text):
        prose = " ".join(_without_inline_code(block).split())
        for phrase in DEFINITIONS:
            prose = prose.replace(phrase, "")
        hit = MEASUREMENT.search(prose)
        if hit and not SOURCE.search(block):
            bad.append(f"{hit.group(0)!r} in: {block.splitlines()[0][:100]}")
    return bad


def test_readme_is_at_most_300_lines():
    assert len(README.read_text().splitlines()) <= MAX_LINES


def test_every_measurement_in_the_readme_names_its_source():
    assert unsourced_measurements(README.read_text()) == []


def test_the_measurement_check_catches_an_unsourced_number():
    assert unsourced_measurements("MRC recovered in 50 ms, RoCE in 2-3 s.\n")
    assert unsourced_measurements("The demo takes ~2 minutes.\n")
    assert unsourced_measurements("* goodput reached 83% of line rate\n")
    assert not unsourced_measurements("MRC recovered in 50 ms ([docs/results.md](docs/results.md)).")
    assert not unsourced_measurements("Set `host_link_mbit = 100` for 100 Mbit/s in code only.\n"
                                      .replace(" for 100 Mbit/s in code only", ""))
    # a sample output is sourced by the sentence before it
    assert not unsourced_measurements("A run (docs/results.md):\n\n```\nmrc 240 ms\n```\n")
    assert unsourced_measurements("A run:\n\n```\nmrc 240 ms\n```\n")


def test_every_docs_link_of_the_readme_resolves_or_is_announced():
    """Links into docs/ exist, except the three that parallel work adds (the fidelity monitor,
    experiments, the control plane's security)."""
    pending = {"docs/fidelity.md", "docs/experiments.md", "docs/security.md"}
    text = README.read_text()
    for target in set(re.findall(r"\]\(((?:docs|traffic|analysis)/[^)#]+)", text)):
        assert (REPO / target).exists() or target in pending, target
