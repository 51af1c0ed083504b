"""scripts/mutation.py's own arithmetic and bookkeeping (no mutmut run): the sampled estimate,
the fixed sample, and keeping verdicts when a module's test selection only grew."""
from __future__ import annotations

import json
import sys

import pytest

from tests.helpers.paths import REPO
sys.path.insert(0, str(REPO / "scripts"))
import mutation  # noqa: E402


def test_the_estimate_weights_each_module_by_its_size():
    # module 1: 100 mutants, all scored, 90 killed; module 2: 300 mutants, 50 sampled, 40 killed
    score, half = mutation.stratified_estimate([(100, 100, 90), (300, 50, 40)])
    assert score == pytest.approx(100 * (0.25 * 0.9 + 0.75 * 0.8))
    # only module 2 is sampled: w = 3/4, p = (40 + 2) / (50 + 4), finite population 250/299
    p = 42 / 54
    assert half == pytest.approx(100 * 1.96 * (0.75 ** 2 * p * (1 - p) / 54 * 250 / 299) ** 0.5)
    assert mutation.stratified_estimate([(100, 100, 90)]) == (pytest.approx(90.0), 0.0)


def test_the_sample_is_fixed_for_a_module_and_size():
    codes = {f"m.x_f__mutmut_{i}": None for i in range(1, 300)}
    a = mutation.sample_names("traffic/core/rtt.py", codes, 50)
    assert a == mutation.sample_names("traffic/core/rtt.py", dict(reversed(codes.items())), 50)
    assert len(set(a)) == 50 and set(a) <= set(codes)
    assert a != mutation.sample_names("traffic/core/evs.py", codes, 50)
    assert sorted(mutation.sample_names("traffic/core/rtt.py", codes, 1000)) == sorted(codes)


def test_a_grown_selection_keeps_the_verdicts_and_any_other_change_does_not(tmp_path, monkeypatch):
    monkeypatch.setattr(mutation, "WORK", tmp_path)
    mutants = mutation.module_dir("traffic/core/rtt.py") / "mutants"
    mutants.mkdir(parents=True)
    old = ["tests/model/test_a.py", "--deselect", "tests/model/test_a.py::slow"]
    grown = ["tests/model/test_b.py", "tests/model/test_a.py", "--deselect",
             "tests/model/test_a.py::slow"]

    def stats_after(recorded, new):
        (mutants / mutation.SELECTION_FILE).write_text(json.dumps(recorded))
        (mutants / "mutmut-stats.json").write_text(json.dumps(
            {"config_fingerprint": {"test_selection": mutation.selection_fingerprint(recorded),
                                    "timeout": "t"}}))
        mutation.keep_verdicts_of_a_grown_selection("traffic/core/rtt.py", new)
        return json.loads((mutants / "mutmut-stats.json").read_text())["config_fingerprint"]

    assert stats_after(old, grown) == {"test_selection": mutation.selection_fingerprint(grown),
                                       "timeout": "t"}
    shrunk = ["tests/model/test_b.py", "--deselect", "tests/model/test_a.py::slow"]
    assert stats_after(old, shrunk)["test_selection"] == mutation.selection_fingerprint(old)
    more_deselected = grown + ["--deselect", "tests/model/test_b.py::x"]
    assert stats_after(old, more_deselected)["test_selection"] == \
        mutation.selection_fingerprint(old)


def test_a_fresh_sample_is_drawn_from_outside_the_census():
    codes = {f"m.x_f__mutmut_{i}": None for i in range(1, 300)}
    census = set(mutation.sample_names("traffic/core/rtt.py", codes, 100))
    fresh = mutation.sample_names("traffic/core/rtt.py", codes, 40, after=100)
    assert len(fresh) == 40 and not census & set(fresh)
    assert fresh == mutation.sample_names("traffic/core/rtt.py", codes, 40, after=100)
    everything_else = mutation.sample_names("traffic/core/rtt.py", codes, 500, after=100)
    assert set(everything_else) == set(codes) - census
