"""Every relative link in the manual (README.md, docs/ and docs/results/) reaches a file of this
checkout, and every #anchor a heading of its page: a moved or renamed page must not leave a
reader at a dead link. Links to other sites are not followed (the tests run offline)."""
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
# [words](target) outside code spans; the target up to a space or the closing parenthesis
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def links(text: str) -> list[str]:
    text = CODE_SPAN.sub("", FENCE.sub("", text))
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def anchors(text: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but '-' and '_' dropped, spaces as '-'."""
    out = set()
    for heading in re.findall(r"^#{1,6}\s+(.*?)\s*#*$", FENCE.sub("", text), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


def dead_links(page: Path) -> list[str]:
    text = page.read_text()
    dead = []
    for target in links(text):
        path, _, anchor = target.partition("#")
        dest = page if not path else (page.parent / path).resolve()
        if not dest.exists():
            dead.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text()):
            dead.append(f"{target}: no heading #{anchor} in {path or page.name}")
    return dead


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_of_the_manual_resolves(page):
    assert dead_links(page) == []


def test_the_checker_finds_a_dead_file_and_a_dead_anchor(tmp_path):
    (tmp_path / "a.md").write_text("# Title here\n\n## Second, part\n")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md) [ok](a.md#second-part) [web](https://x.example/y) `[no](c.md)`\n"
                    "[dead](c.md) [bad anchor](a.md#third) [self](#top) [no self](#gone)\n"
                    "```\n[in code](d.md)\n```\n# Top\n")
    assert dead_links(page) == ["c.md: no such file", "a.md#third: no heading #third in a.md",
                                "#gone: no heading #gone in b.md"]
