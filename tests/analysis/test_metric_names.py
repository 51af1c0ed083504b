"""The one definition of every headline metric (analysis/metric_names.py), values worked by hand
from the stated rules: NCCL's busbw (nccl-tests doc/PERFORMANCE.md), the median iteration, the
goodput summed over hosts over the timed phase."""
import pytest

from analysis import metric_names as M


def test_every_metric_names_its_unit_or_is_a_count_and_keys_are_unique():
    assert len(M.BY_KEY) == len(M.METRICS)
    for m in M.METRICS:
        assert m.header and m.label and m.definition
        if m.key.endswith("_ms"):
            assert "(ms" in m.label and "ms" in m.header
        if m.key.endswith("_mbit"):
            assert "Mbit/s" in m.label and "Mbit/s" in m.header
    # a sum over hosts says so: 6 hosts at 100 Mbit/s read 574.8 Mbit/s
    assert "summed over all hosts" in M.LABELS["goodput_sum_mbit"]
    assert "per rank" in M.LABELS["busbw_mbit"]


def test_iteration_statistics_by_hand():
    times = [10.0, 30.0, 20.0, 40.0, None, 0]        # None and 0: no time, skipped
    assert M.median_iteration_ms(times) == 25.0
    assert M.mean_iteration_ms(times) == 25.0
    assert M.slowest_iteration_ms(times) == 40.0
    # sorted 10 20 30 40: position 0.99 x 3 = 2.97, 30 + 0.97 x 10
    assert M.p99_iteration_ms(times) == pytest.approx(39.7)
    assert M.median_iteration_ms([]) is None and M.p99_iteration_ms(None) is None


def test_busbw_is_ncclS_over_the_median_time_times_the_factor_per_rank():
    # all-reduce of 4,000,000 B on 4 ranks in 100 ms: algbw 40e6 B/s, factor 2 x 3 / 4 = 1.5,
    # busbw 60e6 B/s = 480 Mbit/s
    assert M.busbw_mbit("all_reduce", 4_000_000, 4, 100.0) == pytest.approx(480.0)
    assert M.busbw_mbit("allreduce", 4_000_000, 4, None) is None
    assert M.busbw_mbit("no-such", 4_000_000, 4, 100.0) is None
    # 480 Mbit/s of 2 planes x 400 Mbit/s
    assert M.line_rate_fraction(480.0, 2, 400.0) == pytest.approx(0.6)
    with pytest.raises(ValueError, match="world size"):
        M.busbw_factor("allreduce", 0)


def test_goodput_is_the_delivered_bytes_of_all_hosts_over_the_timed_phase():
    ms = 1_000_000
    # cumulative bytes of all hosts: 0 at 0 ms, 1e6 at 100 ms, 3e6 at 300 ms
    samples = [(0, 0), (100 * ms, 1_000_000), (300 * ms, 3_000_000)]
    # from 50 ms (0.5e6) to 250 ms (2.5e6): 2e6 B in 0.2 s = 80 Mbit/s
    assert M.goodput_sum_mbit(samples, 50 * ms, 250 * ms) == pytest.approx(80.0)
    assert M.goodput_sum_mbit(samples, None, 250 * ms) is None
    assert M.goodput_sum_mbit([], 0, 1) is None


def test_the_time_origin_is_the_timed_start():
    assert M.seconds_from_timed_start(13_030_000_000, 10_000_000_000) == pytest.approx(3.03)
    assert M.seconds_from_timed_start(None, 1) is None


def test_of_summary_reads_the_raw_fields():
    s = {"iteration_times_ms": [100.0, 100.0, 300.0], "collective": "allreduce",
         "message_bytes": 4_000_000, "world_size": 4, "cpu": {"busy_fraction": 0.5},
         "retransmissions": 7, "recovery_ms": [30.0, None]}
    row = M.of_summary(s)
    assert row["median_iteration_ms"] == 100.0 and row["busbw_mbit"] == pytest.approx(480.0)
    assert row["mean_iteration_ms"] == pytest.approx(500 / 3)
    assert row["cpu_busy_percent"] == 50.0 and row["retransmissions"] == 7
    assert row["recovery_ms"] == [30.0, None] and row["goodput_sum_mbit"] is None
    assert set(row) == set(M.BY_KEY)
