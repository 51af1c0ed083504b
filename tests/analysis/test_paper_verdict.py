"""The results page's verdicts from curves built by hand: disjoint 95% intervals in the expected
order agree, in the other order disagree, overlapping ones (or a point without an interval, or
not trusted, or not run) cannot be told apart; a figure is as good as its worst comparison."""
import pytest

from analysis import paper_verdict as V
from analysis import sweep_stats

AGREES, DISAGREES, UNDECIDED = "agrees", "disagrees", "cannot be told apart"


def rec(transport, x, mean, low, high, trusted=True, metric="time_mean_ms", group=""):
    return {"x": x, "transport": transport, "group": group,
            "series": transport + (f", {group}" if group else ""), "n": 3, "trusted": trusted,
            metric: mean, f"{metric}_low": low, f"{metric}_high": high}


LOWER = {"metric": "time_mean_ms", "expect": "lower", "compare": "transports"}


def test_disjoint_in_the_expected_order_agrees():
    curves = [rec("mrc", 1.0, 100, 90, 110), rec("roce", 1.0, 200, 180, 220)]
    verdict, comps = V.judge(curves, LOWER, ["mrc", "roce"])
    assert verdict == AGREES and [c.verdict for c in comps] == [AGREES]
    assert comps[0].what == "mrc against roce at x = 1"


def test_overlapping_intervals_cannot_be_told_apart():
    curves = [rec("mrc", 1.0, 100, 90, 130), rec("roce", 1.0, 140, 125, 155)]
    verdict, comps = V.judge(curves, LOWER, ["mrc", "roce"])
    assert verdict == UNDECIDED and "overlap" in comps[0].why


def test_touching_intervals_overlap():
    curves = [rec("mrc", 1.0, 100, 90, 120), rec("roce", 1.0, 130, 120, 140)]
    assert V.judge(curves, LOWER, ["mrc", "roce"])[0] == UNDECIDED


def test_disjoint_in_the_other_order_disagrees():
    curves = [rec("mrc", 1.0, 300, 280, 320), rec("roce", 1.0, 200, 180, 220)]
    verdict, comps = V.judge(curves, LOWER, ["mrc", "roce"])
    assert verdict == DISAGREES and comps[0].why.startswith("mrc higher")


def test_expect_higher_reverses_the_order():
    curves = [rec("mrc", 1.0, 300, 280, 320), rec("roce", 1.0, 200, 180, 220)]
    claim = {**LOWER, "expect": "higher"}
    assert V.judge(curves, claim, ["mrc", "roce"])[0] == AGREES


@pytest.mark.parametrize("mrc, why", [
    (rec("mrc", 1.0, 100, None, None), "one run, no interval"),
    (rec("mrc", 1.0, 100, 90, 110, trusted=False), "fidelity not ok"),
    (rec("mrc", 1.0, None, None, None), "no time_mean_ms value"),
])
def test_a_point_that_cannot_speak_leaves_it_undecided(mrc, why):
    verdict, comps = V.judge([mrc, rec("roce", 1.0, 500, 480, 520)], LOWER, ["mrc", "roce"])
    assert verdict == UNDECIDED and why in comps[0].why


def test_a_transport_not_run_cannot_be_told_apart():
    verdict, comps = V.judge([rec("mrc", 1.0, 100, 90, 110)], LOWER, ["mrc", "roce"])
    assert verdict == UNDECIDED and comps[0].why == "roce: not run"


def test_the_figure_disagrees_if_any_point_does_and_agrees_only_if_all_do():
    agree = [rec("mrc", 1.0, 100, 90, 110), rec("roce", 1.0, 200, 180, 220)]
    undecided = [rec("mrc", 2.0, 100, 90, 130), rec("roce", 2.0, 120, 110, 140)]
    disagree = [rec("mrc", 3.0, 300, 280, 320), rec("roce", 3.0, 200, 180, 220)]
    assert V.judge(agree + undecided, LOWER, ["mrc", "roce"])[0] == UNDECIDED
    assert V.judge(agree + undecided + disagree, LOWER, ["mrc", "roce"])[0] == DISAGREES
    # `at` picks the x values judged: x = 1 alone agrees
    assert V.judge(agree + undecided, {**LOWER, "at": [1.0]}, ["mrc", "roce"])[0] == AGREES


def test_the_claims_own_transports_replace_the_sweeps():
    curves = [rec("mrc", 1.0, 100, 90, 110), rec("roce", 1.0, 200, 180, 220),
              rec("tcp", 1.0, 50, 45, 55)]
    assert V.judge(curves, LOWER, ["mrc", "roce", "tcp"])[0] == DISAGREES
    assert V.judge(curves, {**LOWER, "transports": ["mrc", "roce"]},
                   ["mrc", "roce", "tcp"])[0] == AGREES


def test_transports_are_compared_within_a_group():
    curves = [rec("mrc", 1.0, 100, 90, 110, group="p = a"),
              rec("roce", 1.0, 200, 180, 220, group="p = a"),
              rec("mrc", 1.0, 300, 290, 310, group="p = b"),
              rec("roce", 1.0, 200, 180, 220, group="p = b")]
    verdict, comps = V.judge(curves, LOWER, ["mrc", "roce"])
    assert [c.verdict for c in comps] == [AGREES, DISAGREES] and verdict == DISAGREES


def test_along_x_compares_the_last_x_with_the_first_in_each_series():
    claim = {"metric": "time_mean_ms", "expect": "lower", "compare": "x"}
    curves = [rec("mrc", 8.0, 300, 280, 320), rec("mrc", 32.0, 250, 200, 290),
              rec("mrc", 128.0, 100, 90, 110)]
    verdict, comps = V.judge(curves, claim, ["mrc"])
    assert verdict == AGREES and comps[0].what == "mrc: x = 128 against x = 8"
    # at = [8, 32]: overlapping intervals
    assert V.judge(curves, {**claim, "at": [8, 32]}, ["mrc"])[0] == UNDECIDED
    # one x only
    assert V.judge(curves[:1], claim, ["mrc"])[0] == UNDECIDED


def test_verdict_from_a_tidy_table_by_hand():
    """Three repeats each: mrc 100, 110, 120 ms -> mean 110, s = 10, 95% half-width
    4.303 x 10 / sqrt(3) = 24.84: [85.16, 134.84]. roce 200, 210, 220: [185.16, 234.84],
    disjoint and higher: agrees. roce 130, 140, 150: [115.16, 164.84] overlaps: undecided."""
    def rows(roce):
        return [{"point": 0, "x": 1.0, "transport": t, "fidelity": "ok", "time_mean_ms": v}
                for t, vs in (("mrc", (100, 110, 120)), ("roce", roce)) for v in vs]
    curves = sweep_stats.aggregate(rows((200, 210, 220)))
    mrc = next(c for c in curves if c["transport"] == "mrc")
    assert mrc["time_mean_ms_low"] == pytest.approx(85.16, abs=0.01)
    assert V.judge(curves, LOWER, ["mrc", "roce"])[0] == AGREES
    assert V.judge(sweep_stats.aggregate(rows((130, 140, 150))), LOWER,
                   ["mrc", "roce"])[0] == UNDECIDED


def test_unknown_comparison_is_refused():
    with pytest.raises(ValueError, match="compare must be"):
        V.judge([], {**LOWER, "compare": "sideways"}, ["mrc"])
    assert V.overall([]) == UNDECIDED
