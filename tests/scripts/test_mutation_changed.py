"""scripts/mutation.py's "changed functions" mode (--changed REF): which lines differ from a git
ref, which functions and methods those lines belong to (mutmut's keys), and which mutants are
theirs. Every expected value is read off the small sources below by hand."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers.paths import REPO
sys.path.insert(0, str(REPO / "scripts"))
import mutation  # noqa: E402

SEP = "\u01c1"      # mutmut's separator: a method's key is x<SEP>Class<SEP>method

SOURCE = '''\
LIMIT = 3                                   # 1


def plain(x):                               # 4
    def helper(y):                          # 5
        return y + LIMIT                    # 6
    return helper(x)                        # 7


class Box:                                  # 10
    size = 2                                # 11

    @staticmethod                           # 13
    def make(n):                            # 14
        return Box()                        # 15

    def grow(self):                         # 17
        self.size += 1                      # 18
'''


@pytest.mark.parametrize("ranges, keys", [
    ([(6, 6)], ["x_plain"]),                            # a nested function's line: its outer one
    ([(1, 1)], []),                                     # a constant: mutmut mutates no such line
    ([(11, 11)], []),                                   # a class attribute: neither
    ([(13, 13)], [f"x{SEP}Box{SEP}make"]),              # a decorator belongs to its method
    ([(15, 18)], [f"x{SEP}Box{SEP}make", f"x{SEP}Box{SEP}grow"]),
    ([(8, 9)], []),                                     # blank lines between definitions
    ([(2, 4), (18, 40)], ["x_plain", f"x{SEP}Box{SEP}grow"]),
])
def test_changed_lines_name_the_functions_and_methods_around_them(ranges, keys):
    assert mutation.changed_functions(SOURCE, ranges) == keys


def test_labels_are_the_names_a_reader_knows():
    assert mutation.function_label("x_plain") == "plain"
    assert mutation.function_label(f"x{SEP}Box{SEP}grow") == "Box.grow"


def test_only_the_mutants_of_the_named_functions_are_picked():
    codes = {n: None for n in ["traffic.core.evs.x_pick__mutmut_1", "traffic.core.evs.x_pick__mutmut_12",
                               "traffic.core.evs.x_picked__mutmut_1",
                               f"traffic.core.evs.x{SEP}EVSet{SEP}pick__mutmut_2",
                               "traffic.core.rtt.x_pick__mutmut_1"]}
    assert mutation.names_of_functions("traffic/core/evs.py", codes, ["x_pick"]) == [
        "traffic.core.evs.x_pick__mutmut_1", "traffic.core.evs.x_pick__mutmut_12"]
    assert mutation.names_of_functions("traffic/core/evs.py", codes, [f"x{SEP}EVSet{SEP}pick"]) == [
        f"traffic.core.evs.x{SEP}EVSet{SEP}pick__mutmut_2"]


def git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo,
                   check=True, capture_output=True)


def test_changed_lines_against_a_ref_include_uncommitted_edits_and_deletions(tmp_path, monkeypatch):
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    git(tmp_path, "init", "-q")
    (tmp_path / "m.py").write_text(SOURCE)
    git(tmp_path, "add", "m.py")
    git(tmp_path, "commit", "-qm", "base")
    git(tmp_path, "tag", "base")
    lines = SOURCE.splitlines(keepends=True)
    lines[17] = "        self.size += 2\n"                 # line 18 edited, uncommitted
    del lines[10]                   # line 11 deleted: the new lines 10 and 11 around the gap
    (tmp_path / "m.py").write_text("".join(lines))
    assert mutation.changed_lines("base", "m.py") == [(10, 11), (17, 17)]
    assert mutation.changed_functions("".join(lines), [(10, 11), (17, 17)]) == [
        f"x{SEP}Box{SEP}grow"]
    assert mutation.resolve_ref("base") == "base"
    git(tmp_path, "update-ref", "refs/remotes/origin/trunk", "HEAD")    # a fresh clone's main
    assert mutation.resolve_ref("trunk") == "origin/trunk"
    with pytest.raises(SystemExit, match="no ref 'nosuch'"):
        mutation.resolve_ref("nosuch")


def test_a_module_moved_since_the_ref_is_compared_with_where_it_was(tmp_path, monkeypatch):
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    git(tmp_path, "init", "-q")
    (tmp_path / "m.py").write_text(SOURCE)
    (tmp_path / "other.py").write_text("def f():\n    return 1\n")
    git(tmp_path, "add", "m.py", "other.py")
    git(tmp_path, "commit", "-qm", "base")
    git(tmp_path, "tag", "base")
    (tmp_path / "pkg").mkdir()
    git(tmp_path, "mv", "m.py", "pkg/m.py")                  # moved into a package
    lines = SOURCE.splitlines(keepends=True)
    lines[17] = "        self.size += 2\n"                 # and line 18 edited
    (tmp_path / "pkg" / "m.py").write_text("".join(lines))
    assert mutation.renamed_from("base", "pkg/m.py") == "m.py"
    assert mutation.renamed_from("base", "other.py") is None
    assert mutation.changed_lines("base", "pkg/m.py") == [(18, 18)]
    git(tmp_path, "commit", "-qam", "moved")
    assert mutation.changed_lines("base", "pkg/m.py") == [(18, 18)]


def test_changed_and_sample_do_not_mix():
    with pytest.raises(SystemExit, match="--changed scores the changed functions in full"):
        mutation.main(["--changed", "HEAD", "--sample", "5", "--report-only"])
