"""analysis/recovery.py's series helpers by hand: sorting out-of-order samples, summing hosts onto
one grid, and which sliding windows fit the sampled span."""
from __future__ import annotations

import numpy as np

from analysis import recovery

MS = 1_000_000


def test_samples_out_of_order_are_sorted_by_time_keeping_ties_in_order():
    t, cum = recovery._as_arrays([(20, 5), (10, 7)])           # a counter that went back
    assert list(t) == [10, 20] and list(cum) == [7, 5]
    # 600 samples at 3 times, out of order: equal times keep their given order
    samples = [(float(3 - i % 3), float(i)) for i in range(600)]
    t, cum = recovery._as_arrays(samples)
    assert list(t) == [1.0] * 200 + [2.0] * 200 + [3.0] * 200
    assert list(cum) == [float(i) for r in (2, 1, 0) for i in range(r, 600, 3)]


def test_hosts_are_summed_on_one_grid_from_the_first_sample_to_the_last():
    """10 ms grid from 0 to 20 ms. h1 reaches 100 B at 10 ms and keeps it after its last
    sample; h2 starts at 5 ms (0 before) and reaches 50 B at 20 ms: at 10 ms it is halfway
    from 5 to 20 ms, 50 x 5/15."""
    got = recovery.aggregate_cumulative({"h1": [(0, 0), (10 * MS, 100)],
                                         "h2": [(5 * MS, 0), (20 * MS, 50)]}, step_ms=10)
    assert [t for t, _ in got] == [0, 10 * MS, 20 * MS]
    assert [v for _, v in got] == [0.0, 100 + 50 * 5 / 15, 150.0]


def test_the_grid_ends_exactly_at_the_last_sample():
    # 0 .. 9.999999 ms on a 10 ms grid: the last sample's time is added, once
    got = recovery.aggregate_cumulative({"h": [(0, 0), (10 * MS - 1, 100)]}, step_ms=10)
    assert got == [(0, 0.0), (10 * MS - 1, 100.0)]
    one = recovery.aggregate_cumulative({"h": [(7 * MS, 3)]}, step_ms=10)
    assert one == [(7 * MS, 3.0)]
    assert recovery.aggregate_cumulative({"h": []}) == []


def test_sliding_windows_lie_wholly_inside_the_samples():
    """Samples 0 .. 100 ms at 1 MB per 10 ms, 50 ms windows every 10 ms: starts 0 .. 50 ms
    (6 windows), each 5 MB in 50 ms = 1e8 B/s. With the last sample 1 ns earlier the window
    at 50 ms no longer fits: 5 windows."""
    samples = [(k * 10 * MS, k * 1e6) for k in range(11)]
    starts, rates = recovery.window_rates(samples, 0, 100 * MS, window_ms=50, step_ms=10)
    assert list(starts) == [k * 10 * MS for k in range(6)]
    assert np.allclose(rates, 1e8)
    short = samples[:-1] + [(100 * MS - 1, 10e6)]
    starts, _ = recovery.window_rates(short, 0, 100 * MS, window_ms=50, step_ms=10)
    assert list(starts) == [k * 10 * MS for k in range(5)]
    starts, rates = recovery.window_rates([(0, 0)], 0, 100 * MS)
    assert len(starts) == 0 and len(rates) == 0
    # two samples 10 ms apart hold no whole 50 ms window
    starts, rates = recovery.window_rates([(0, 0), (10 * MS, 1)], 0, 100 * MS, window_ms=50)
    assert len(starts) == 0 and len(rates) == 0
