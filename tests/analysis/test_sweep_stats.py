"""A sweep's aggregation: 95% Student-t intervals across repeats (hand-computed), the slowdown
against the baseline point, trusted points, and the tidy rows from summary.json files."""
import json
import math

import pytest

from analysis import sweep_stats as S


def test_t_interval_of_three_values_by_hand():
    """10, 12, 14: mean 12, s = sqrt((4 + 0 + 4) / 2) = 2, t_{0.975,2} = 4.303,
    half width 4.303 x 2 / sqrt(3) = 4.96868..."""
    mean, low, high = S.mean_interval([10, 12, 14])
    half = 4.303 * 2 / math.sqrt(3)
    assert mean == 12
    assert low == pytest.approx(12 - half) and high == pytest.approx(12 + half)
    assert high - low == pytest.approx(9.93735, abs=1e-4)


def test_interval_needs_two_values_and_skips_missing_ones():
    assert S.mean_interval([5.0, None, float("nan")]) == (5.0, None, None)
    assert S.mean_interval([]) == (None, None, None)
    mean, low, high = S.mean_interval([1, None, 3])         # two values: t_{0.975,1} = 12.706
    assert mean == 2 and high - 2 == pytest.approx(12.706 * math.sqrt(2) / math.sqrt(2))


def test_t_quantiles_past_the_table_are_conservative():
    assert S.t_quantile(1) == 12.706 and S.t_quantile(30) == 2.042
    assert S.t_quantile(35) == 2.042            # next smaller tabulated df: wider, not narrower
    assert S.t_quantile(500) == 1.960
    with pytest.raises(ValueError):
        S.t_quantile(0)


def _row(point, x, transport, t_mean, fidelity="ok", repeat=1):
    return {"point": point, "x": x, "transport": transport, "repeat": repeat,
            "time_mean_ms": t_mean, "fidelity": fidelity}


def test_slowdown_is_against_the_same_transports_baseline_mean():
    rows = [_row(0, 0.0, "mrc", 100.0), _row(0, 0.0, "mrc", 120.0, repeat=2),
            _row(1, 1.0, "mrc", 165.0), _row(0, 0.0, "roce", 200.0), _row(1, 1.0, "roce", 900.0)]
    S.add_slowdown(rows, 0.0)
    # mrc's baseline is (100 + 120) / 2 = 110; roce's 200
    assert [r["slowdown"] for r in rows] == pytest.approx([100 / 110, 120 / 110, 1.5, 1.0, 4.5])
    S.add_slowdown(rows, None)
    assert all(r["slowdown"] is None for r in rows)


def test_aggregate_groups_by_point_and_marks_untrusted_points():
    rows = [_row(0, 0.0, "mrc", 10.0), _row(0, 0.0, "mrc", 14.0, repeat=2),
            _row(1, 1.0, "mrc", 20.0), _row(1, 1.0, "mrc", 22.0, "cpu_bound", repeat=2),
            _row(2, 2.0, "mrc", 30.0, "unknown")]
    for r in rows:
        r["policy"] = "ocp"
    agg = {a["point"]: a for a in S.aggregate(rows, ["policy"])}
    assert agg[0]["trusted"] and not agg[1]["trusted"] and not agg[2]["trusted"]
    assert agg[0]["n"] == 2 and agg[0]["time_mean_ms"] == 12.0
    assert agg[0]["time_mean_ms_high"] - 12.0 == pytest.approx(12.706 * math.sqrt(8) / math.sqrt(2))
    assert agg[0]["series"] == "mrc, policy = ocp"


def test_rows_of_a_run_read_nccl_fields_recovery_and_fidelity(tmp_path):
    (tmp_path / "mrc").mkdir()
    (tmp_path / "mrc" / "summary.json").write_text(json.dumps({
        "transport": "mrc", "verified": True, "recovery_ms": [120.0, None, 80.0],
        "nccl": {"time_median_ms": 300.0, "time_mean_ms": 310.0, "algbw_GBps": 0.01,
                 "busbw_GBps": 0.015, "wrong": 0},
        "retransmissions": 42, "evs_retired": 3, "fidelity": {"verdict": "ok"},
        "faults_ok": True}))
    rows = S.rows_of_run(tmp_path, ["mrc", "tcp"], {"point": 4, "x": 1.0}, 2)
    mrc, tcp = rows
    assert mrc["recovery_max_ms"] == 120.0 and mrc["faults_not_recovered"] == 1
    assert mrc["recovery_ms_f2"] == 80.0 and mrc["fidelity"] == "ok" and mrc["faults_ok"]
    assert mrc["busbw_GBps"] == 0.015 and mrc["retransmissions"] == 42 and mrc["repeat"] == 2
    assert tcp["verified"] is False and tcp["fidelity"] == "unknown" and tcp["time_mean_ms"] is None


def test_figure_is_written_and_none_without_data(tmp_path):
    rows = [_row(0, 0.0, "mrc", 10.0), _row(1, 1.0, "mrc", 20.0, "cpu_bound")]
    agg = S.aggregate(rows)
    assert S.plot(agg, "time_mean_ms", "x", "t", tmp_path / "f.png").stat().st_size > 1000
    assert S.plot(agg, "busbw_GBps", "x", "t", tmp_path / "g.png") is None


def test_two_grid_keys_sharing_an_x_stay_two_points():
    # a two-key grid: points 0 and 1 share x = 1.0 and differ in the other key; each point's
    # repeats are averaged on their own: (10 + 14) / 2 = 12 and (30 + 34) / 2 = 32, never the
    # four together (22)
    rows = [_row(0, 1.0, "mrc", 10.0), _row(0, 1.0, "mrc", 14.0, repeat=2),
            _row(1, 1.0, "mrc", 30.0), _row(1, 1.0, "mrc", 34.0, repeat=2)]
    for r, policy in zip(rows, ["ocp", "ocp", "tolerant", "tolerant"]):
        r["policy"] = policy
    agg = {a["point"]: a for a in S.aggregate(rows, ["policy"])}
    assert sorted(agg) == [0, 1]
    assert (agg[0]["n"], agg[0]["time_mean_ms"]) == (2, 12.0)
    assert (agg[1]["n"], agg[1]["time_mean_ms"]) == (2, 32.0)
    assert agg[1]["series"] == "mrc, policy = tolerant"


def test_rows_carry_the_runs_conditions_and_the_paper_metrics(tmp_path):
    """What the results page reads of each run: its time scale, the CPU no role accounts for,
    wall time, machine and commit (run.json), and the tail, efficiency, victim and trim
    numbers of summary.json."""
    (tmp_path / "mrc").mkdir()
    (tmp_path / "mrc" / "summary.json").write_text(json.dumps({
        "transport": "mrc", "verified": True, "time_scale": 8.0,
        "cpu": {"cores": 2, "cores_by_role": {"switches": 1.2, "other": 0.15}},
        "slowest_iteration_ms": 250.0, "line_rate_fraction": 0.4,
        "victim_goodput_mbit": 27.5, "trimmed": 12}))
    (tmp_path / "run.json").write_text(json.dumps({
        "duration_s": 61.5, "git": {"commit": "abc"}, "machine": {"hostname": "vm",
                                                                  "cpu_model": "cpu"}}))
    (row,) = S.rows_of_run(tmp_path, ["mrc"], {"point": 0, "x": 1.0}, 1)
    assert {k: row[k] for k in ("time_scale", "cpu_other_cores", "cores", "wall_s", "commit",
                                "machine", "slowest_iteration_ms", "line_rate_fraction",
                                "victim_goodput_mbit", "trimmed")} == {
        "time_scale": 8.0, "cpu_other_cores": 0.15, "cores": 2, "wall_s": 61.5,
        "commit": "abc", "machine": "vm", "slowest_iteration_ms": 250.0,
        "line_rate_fraction": 0.4, "victim_goodput_mbit": 27.5, "trimmed": 12}
    (tmp_path / "run.json").write_text("not json")
    (row,) = S.rows_of_run(tmp_path, ["mrc"], {"point": 0, "x": 1.0}, 1)
    assert row["wall_s"] is None and row["machine"] is None
