"""`mrclab compare`: the bootstrap interval of the median difference, the refusal of runs of
different scenarios, the table and the overlaid goodput figure, on run directories built by
hand (summary.json, scenario.toml, goodput.csv as the runner writes them)."""
import json

import numpy as np
import pytest

from analysis import compare as C


def make_run(root, name, times_ms, *, scenario="name = \"x\"\n", recovery=(100.0,), retx=10,
             rate_bytes_per_10ms=10_000, verdict="ok", time_scale=1.0):
    run = root / name
    (run / "mrc").mkdir(parents=True)
    (run / "scenario.toml").write_text(scenario)
    mean = sum(times_ms) / len(times_ms)
    (run / "mrc" / "summary.json").write_text(json.dumps({
        "transport": "mrc", "iteration_times_ms": times_ms, "recovery_ms": list(recovery),
        "retransmissions": retx, "evs_retired": 2, "time_scale": time_scale,
        "collective": "allreduce", "message_bytes": 4_000_000, "world_size": 4,
        "fidelity": {"verdict": verdict, "violations": []},
        "nccl": {"time_mean_ms": mean, "busbw_GBps": 1.0}}))
    rows = "".join(f"{i * 10_000_000},{i * rate_bytes_per_10ms}\n" for i in range(101))
    (run / "mrc" / "goodput.csv").write_text("t_ns,rx_bytes_all_hosts\n" + rows)
    return run


def test_constant_samples_give_the_exact_difference_and_a_point_interval():
    d, low, high = C.bootstrap_median_difference([100.0] * 20, [150.0] * 20)
    assert (d, low, high) == (50.0, 50.0, 50.0)


def test_same_distribution_is_not_significant_and_a_shift_is():
    a = list(np.arange(100.0, 130.0))                 # 100..129
    d, low, high = C.bootstrap_median_difference(a, a)
    assert d == 0 and low < 0 < high
    d, low, high = C.bootstrap_median_difference(a, [x + 40 for x in a])
    assert d == 40 and low > 0


def test_compare_rows_by_hand(tmp_path):
    a = make_run(tmp_path, "a", [100.0] * 10, recovery=(100.0, None), retx=10)
    b = make_run(tmp_path, "b", [200.0] * 10, recovery=(250.0,), retx=4)
    result = C.compare(a, b)
    rows = {r["metric"]: r for r in result["rows"]}
    it = rows["median_iteration_ms"]
    assert (it["a"], it["b"], it["difference"], it["significant"]) == (100.0, 200.0, 100.0, "yes")
    # NCCL busbw of an all-reduce of 4e6 B on 4 ranks: 4e6 B / 0.1 s x 2 x 3 / 4 = 60e6 B/s =
    # 480 Mbit/s at 100 ms, 240 at 200 ms
    bus = rows["busbw_mbit"]
    assert (bus["a"], bus["b"]) == (pytest.approx(480.0), pytest.approx(240.0))
    assert bus["difference"] == pytest.approx(-240.0) and bus["significant"] == "yes"
    assert rows["recovery_max_ms"]["difference"] == 150.0
    assert rows["retransmissions"]["difference"] == -6
    assert rows["retransmissions"]["significant"] == "n/a"
    text = C.table(result)
    assert max(len(line) for line in text.splitlines()) <= 100


def test_runs_of_different_scenarios_are_refused_unless_forced(tmp_path, capsys):
    a = make_run(tmp_path, "a", [100.0] * 5, scenario='name = "x"\niterations = 5\n')
    b = make_run(tmp_path, "b", [100.0] * 5, scenario='name = "x"\niterations = 6\n')
    with pytest.raises(C.CompareError, match="line 2: 'iterations = 5' vs 'iterations = 6'"):
        C.compare(a, b)
    assert C.main([str(a), str(b)]) == 2
    assert "--force" in capsys.readouterr().err
    assert C.main([str(a), str(b), "--force", "--figure", str(tmp_path / "g.png")]) == 0
    assert "note (--force)" in capsys.readouterr().out


def test_missing_or_empty_runs_are_named(tmp_path, capsys):
    a = make_run(tmp_path, "a", [100.0] * 5)
    assert C.main([str(a), str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "scenario.toml").write_text('name = "x"\n')
    assert C.main([str(a), str(empty)]) == 2
    assert "no transport directory" in capsys.readouterr().err


def test_goodput_rate_and_the_overlaid_figure(tmp_path):
    a = make_run(tmp_path, "a", [100.0] * 5, rate_bytes_per_10ms=10_000)
    b = make_run(tmp_path, "b", [100.0] * 5, rate_bytes_per_10ms=5_000)
    x, y = C.goodput_rate(a / "mrc")
    # 10,000 B every 10 ms = 1e6 B/s = 8 Mbit/s in every 100 ms bin over 1 s
    assert len(x) == 10 and np.allclose(y, 8.0)
    assert np.allclose(C.goodput_rate(b / "mrc")[1], 4.0)
    result = C.compare(a, b)
    assert C.plot_goodput(result, tmp_path / "g.png").stat().st_size > 1000


def test_a_faster_run_b_is_significant_too(tmp_path):
    a = make_run(tmp_path, "a", [200.0 + i for i in range(10)])
    b = make_run(tmp_path, "b", [100.0 + i for i in range(10)])
    row = next(r for r in C.compare(a, b)["rows"] if r["metric"] == "median_iteration_ms")
    assert row["difference"] == -100.0 and row["high"] < 0 and row["significant"] == "yes"


def test_each_transport_opens_with_both_verdicts_and_a_bad_one_voids_its_rows(tmp_path, capsys):
    a = make_run(tmp_path, "a", [200.0 + i for i in range(10)], time_scale=4.0)
    b = make_run(tmp_path, "b", [100.0 + i for i in range(10)], verdict="invalid")
    result = C.compare(a, b)
    first, second = result["rows"][:2]
    assert (first["metric"], first["a"], first["b"]) == ("fidelity", "ok", "invalid")
    assert (second["metric"], second["a"], second["b"]) == ("time_scale", 4.0, 1.0)
    # B is invalid: a shift of 100 ms is no longer "significant", it is void
    row = next(r for r in result["rows"] if r["metric"] == "median_iteration_ms")
    assert row["difference"] == -100.0 and row["significant"] == C.VOID
    assert result["fidelity"]["mrc"] == {"a": "ok", "b": "invalid", "time_scale_a": 4.0,
                                         "time_scale_b": 1.0}
    assert C.main([str(a), str(b), "--figure", str(tmp_path / "g.png")]) == 0
    out = capsys.readouterr().out
    assert "fidelity" in out and "invalid" in out and "void (fidelity)" in out
    # a run written without a verdict is not vouched for either
    (b / "mrc" / "summary.json").write_text(json.dumps(
        {k: v for k, v in json.loads((b / "mrc" / "summary.json").read_text()).items()
         if k != "fidelity"}))
    rows = C.compare(a, b)["rows"]
    assert rows[0]["b"] == "not assessed" and rows[2]["significant"] == C.VOID


def test_the_95_percent_interval_is_the_2_5th_to_97_5th_percentile_near_the_boundary():
    # A is constant (every resample's median is 0); B holds 5 negative values among 17, so a
    # resample's median (its 9th value) is negative exactly when 9 or more of its 17 draws are
    # negative: P = sum_{k=9..17} C(17,k) (5/17)^k (12/17)^(17-k) = 0.0356, by hand below.
    # That lies between 2.5% and 5%: the 95% interval (2.5th percentile) reaches below 0, the
    # 90% interval (5th percentile) does not. 4000 resamples put the observed share within
    # 0.0356 +- 0.003 (one standard error), over 3.5 of them from either boundary.
    from math import comb
    p_negative = sum(comb(17, k) * (5 / 17) ** k * (12 / 17) ** (17 - k) for k in range(9, 18))
    assert 0.025 + 0.01 < p_negative < 0.05 - 0.01
    a = [0.0] * 5
    b = [-5.0, -4.0, -3.0, -2.0, -1.0] + [float(v) for v in range(1, 13)]
    d, low, high = C.bootstrap_median_difference(a, b)                 # 95%
    assert d == 4.0 and low < 0 < high                  # the median of B is its 9th value, 4
    d, low90, high90 = C.bootstrap_median_difference(a, b, confidence=0.90)
    assert low90 > 0 and high90 <= high


def test_fields_of_the_wrong_type_are_a_clear_error(tmp_path):
    a = make_run(tmp_path, "a", [100.0, 101.0])
    b = make_run(tmp_path, "b", [100.0, 101.0])
    path = b / "mrc" / "summary.json"
    s = json.loads(path.read_text())
    path.write_text(json.dumps({**s, "iteration_times_ms": "123"}))
    with pytest.raises(C.CompareError, match="iteration_times_ms is not a list of numbers"):
        C.compare(a, b)
    path.write_text(json.dumps({**s, "nccl": [1, 2]}))
    with pytest.raises(C.CompareError, match="nccl is not an object"):
        C.compare(a, b)


def test_goodput_is_drawn_on_the_one_time_origin_the_timed_start(tmp_path):
    a = make_run(tmp_path, "a", [100.0] * 5)
    # goodput.csv starts at 0 ns; the timed phase started 200 ms later: the first bin is at -0.2 s
    x, _ = C.goodput_rate(a / "mrc", timed_start_ns=200_000_000)
    assert x[0] == pytest.approx(-0.2) and x[1] == pytest.approx(-0.1)
    assert C.goodput_rate(a / "mrc")[0][0] == 0.0          # no timed start: the first sample
