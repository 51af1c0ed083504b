"""The one definition of recovery time, on synthetic goodput traces."""
import pytest

from analysis import recovery as R
from model.topology import FabricSpec, Topology

MS = 1_000_000


def trace(rate_of_t_ms, end_ms, step_ms=10):
    """Cumulative byte samples for a rate (bytes/s) given per millisecond."""
    out, cum = [], 0.0
    for t in range(0, end_ms + 1, step_ms):
        out.append((t * MS, cum))
        cum += rate_of_t_ms(t) * step_ms / 1000
    return out


def outage(start, stop, rate=1e6, after=1e6):
    return lambda t: 0.0 if start <= t < stop else (rate if t < start else after)


def test_outage_recovers_when_goodput_returns():
    samples = trace(outage(1000, 1300), 4000)
    rec = R.recovery_time_ms(samples, 1000 * MS, 1e6)
    # exact answer 300 ms; the 100 ms window lets goodput count as back up to 10 ms early
    assert 285 <= rec <= 300


def test_no_disruption_means_zero_and_never_means_none():
    assert R.recovery_time_ms(trace(lambda t: 1e6, 3000), 1000 * MS, 1e6) == 0.0
    assert R.recovery_time_ms(trace(outage(1000, 99999), 3000), 1000 * MS, 1e6) is None


def test_recovery_must_be_sustained():
    # goodput comes back for 200 ms at 1300, drops again, and is back for good at 2000
    def rate(t):
        if t < 1000 or 1300 <= t < 1500 or t >= 2000:
            return 1e6
        return 0.0
    rec = R.recovery_time_ms(trace(rate, 5000), 1000 * MS, 1e6)
    assert 985 <= rec <= 1000


def test_partial_goodput_counts_against_the_expected_rate():
    samples = trace(outage(1000, 1200, after=0.8e6), 4000)
    assert R.recovery_time_ms(samples, 1000 * MS, 1e6) is None          # 80% < 90%
    assert R.recovery_time_ms(samples, 1000 * MS, 0.85e6) is not None   # >= 90% of 0.85


def test_next_fault_bounds_the_evaluation():
    samples = trace(outage(1000, 1800), 4000)
    assert R.recovery_time_ms(samples, 1000 * MS, 1e6, until_ns=1500 * MS) is None


def test_steady_goodput_and_aggregation():
    a = trace(lambda t: 1e6, 2000)
    b = [(t + 3 * MS, c * 2) for t, c in trace(lambda t: 1e6, 2000)]
    agg = R.aggregate_cumulative({"h0": a, "h1": b})
    steady = R.steady_goodput_bps(agg, 200 * MS, 1800 * MS)
    assert steady == pytest.approx(3e6, rel=0.02)
    with pytest.raises(ValueError):
        R.recovery_time_ms(a, 0, 0)


def test_surviving_capacity_of_the_narrowest_cut():
    topo = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2))
    assert R.surviving_capacity_fraction(topo, {}) == 1.0
    state = R.apply_fault_to_capacity(topo, {}, {"action": "link_down", "a": "t0p0g0", "b": "t1p0s0"})
    assert R.surviving_capacity_fraction(topo, state) == 0.75   # 3 of 4 uplinks of group 0
    state = R.apply_fault_to_capacity(topo, state, {"action": "link_up", "a": "t1p0s0", "b": "t0p0g0"})
    assert R.surviving_capacity_fraction(topo, state) == 1.0
    state = R.apply_fault_to_capacity(topo, {}, {"action": "link_down", "a": "h0", "b": "t0p1g0"})
    assert R.surviving_capacity_fraction(topo, state) == 0.5    # h0 keeps one of two NIC ports
    state = R.apply_fault_to_capacity(topo, {}, {"action": "blackhole", "a": "t1p1s1"})
    assert R.surviving_capacity_fraction(topo, state) == 0.75
    small = R.apply_fault_to_capacity(topo, {}, {"action": "gray_loss", "a": "h0", "b": "t0p0g0",
                                                 "percent": 1})
    assert R.surviving_capacity_fraction(topo, small) == 1.0


def test_collective_windows_span_one_median_iteration():
    assert R.collective_windows([]) == {"window_ms": 100.0, "hold_ms": 500.0}
    assert R.collective_windows([50, 60, 70]) == {"window_ms": 100.0, "hold_ms": 500.0}
    assert R.collective_windows([600, 650, 3000]) == {"window_ms": 650.0, "hold_ms": 650.0}
    spans = R.iteration_spans_ms([(0, 0, 400e6), (0, 50e6, 600e6), (1, 700e6, 1.3e9)])
    assert spans == [600.0, 600.0]


def test_phase_gaps_of_a_collective_are_not_an_outage_with_collective_windows():
    # 600 ms iterations: 450 ms of traffic at 100 Mbit/s, then a 150 ms gap (verification, sync);
    # a fault at 3 s changes nothing. With 100 ms windows the gaps read as an outage.
    samples, total = [], 0.0
    for ms in range(0, 8000, 10):
        if ms % 600 < 450:
            total += 100e6 / 8 * 0.01
        samples.append((ms * 1e6, total))
    fault = 3000e6
    windows = R.collective_windows([600.0] * 10)
    steady = R.steady_goodput_bps(samples, 0, fault, window_ms=windows["window_ms"])
    assert R.recovery_time_ms(samples, fault, steady, **windows) is not None
    assert R.recovery_time_ms(samples, fault, steady, **windows) <= 0.1 * 600
    steady_100 = R.steady_goodput_bps(samples, 0, fault)
    rec_100 = R.recovery_time_ms(samples, fault, steady_100)
    assert rec_100 is None or rec_100 > 1000, rec_100     # a bogus "outage" of seconds


# 2 planes x 2 groups x 2 spines x 2 hosts, every link 100 Mbit/s. Cuts by hand: each host has
# 2 NIC links; each group's T0s have 2 planes x 2 spines = 4 uplinks.
CLOS = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2))


def capacity_after(*faults):
    state = {}
    for fault in faults:
        state = R.apply_fault_to_capacity(CLOS, state, fault)
    return R.surviving_capacity_fraction(CLOS, state)


def test_flap_takes_the_link_out_like_link_down():
    """A flapping uplink carries nothing usable: group 0 keeps 3 of 4 uplinks -> 0.75."""
    assert capacity_after({"action": "flap", "a": "t0p0g0", "b": "t1p0s0"}) == 0.75
    assert capacity_after({"action": "flap", "a": "t0p0g0", "b": "t1p0s0"},
                          {"action": "link_up", "a": "t1p0s0", "b": "t0p0g0"}) == 1.0


def test_degrade_keeps_the_given_fraction_of_the_link():
    """Uplink at half rate: group 0 has 3 + 0.5 of 4 uplinks -> 0.875. A host link at a
    quarter: that host has 1 + 0.25 of 2 ports -> 0.625. degrade_clear restores it."""
    up = {"action": "degrade", "a": "t0p0g0", "b": "t1p0s0", "fraction": 0.5}
    assert capacity_after(up) == 0.875
    host = {"action": "degrade", "a": "h0", "b": "t0p0g0", "fraction": 0.25}
    assert capacity_after(host) == 0.625
    assert capacity_after(host, {"action": "degrade_clear", "a": "t0p0g0", "b": "h0"}) == 1.0
    # a second degrade of the same link replaces the first, in either name order
    assert capacity_after(up, {"action": "degrade", "a": "t1p0s0", "b": "t0p0g0",
                               "fraction": 0.25}) == (3 + 0.25) / 4


def test_blackhole_and_its_clear_act_on_every_link_of_the_node():
    """A black-holed T1 (t1p0s0) takes one uplink from each group -> 0.75; a black-holed T0
    (t0p0g0) takes both its hosts' plane-0 ports -> 0.5. blackhole_clear gives back exactly
    that node's links: another fault (t0p1g1~t1p1s1 down) stays in force -> 0.75 (with the
    black hole, group 1 had lost 2 of 4 -> 0.5)."""
    t1 = {"action": "blackhole", "a": "t1p0s0"}
    assert capacity_after(t1) == 0.75
    assert capacity_after({"action": "blackhole", "node": "t0p0g0"}) == 0.5
    other = {"action": "link_down", "a": "t0p1g1", "b": "t1p1s1"}
    assert capacity_after(t1, other) == 0.5              # group 1 lost 2 of its 4 uplinks
    assert capacity_after(t1, other, {"action": "blackhole_clear", "a": "t1p0s0"}) == 0.75
    assert capacity_after(t1, {"action": "blackhole_clear", "a": "t1p0s0"}) == 1.0


def _cumulative(dips_ms, start_ms=200, end_ms=2500, rate_b_per_ms=1000):
    """(t_ns, cumulative bytes) every 5 ms: nothing before start_ms, then 1000 B/ms except in
    the dips [a, b) (ms)."""
    out, cum = [], 0
    for t in range(0, end_ms + 1, 5):
        out.append((t * R.MS, cum))
        if t >= start_ms and not any(a <= t < b for a, b in dips_ms):
            cum += 5 * rate_b_per_ms
    return out


def test_recovery_needs_every_window_of_the_hold_by_hand():
    """Windows of 125 ms every 5 ms, threshold 60% of 1e6 B/s: a window is good when it holds
    >= 75 ms of traffic. Traffic starts at 200 ms (first good window at 150: 75 ms inside) but a
    dip [720, 820) spoils the windows starting 650..765, and 650 is the 101st window of the
    hold from 150 (hold 500 ms -> windows 150, 155, ..., 650): no recovery at 150. The window at
    770 holds exactly 75 ms (820..895): good, and its hold (to 1270) ends before the second dip
    [1500, 1600) spoils 1430..1545. So 770 ms, not 150 nor 775 nor 1550."""
    samples = _cumulative([(720, 820), (1500, 1600)])
    got = R.recovery_time_ms(samples, 0, 1e6, threshold=0.6, window_ms=125, step_ms=5,
                             hold_ms=500)
    assert got == 770.0


def test_recovery_edge_cases_by_hand():
    two = [(0, 0), (1_000_000_000, 1_000_000)]             # two samples suffice: 1e6 B/s
    assert R.recovery_time_ms(two, 0, 1e6) == 0.0
    assert R.recovery_time_ms(two, 0, 0.5) == 0.0          # any positive rate is a valid goal
    assert R.recovery_time_ms(two[:1], 0, 1e6) is None
    with pytest.raises(ValueError, match="expected_bps must be > 0, got 0"):
        R.recovery_time_ms(two, 0, 0)
    # until_ns bounds the evaluation: traffic only resumes after it
    late = _cumulative([], start_ms=1500)
    assert R.recovery_time_ms(late, 0, 1e6, until_ns=1400 * R.MS) is None
    assert R.recovery_time_ms(late, 0, 1e6) == 1490.0   # window 1490..1590: 90 of 100 ms


def test_collective_window_is_the_median_of_the_positive_iteration_times():
    """None, 0 and negative times are not iterations: median of [0.5, 200, 300] = 200 ms;
    the hold is at least 500 ms and at least one window."""
    assert R.collective_windows([None, 0, -5, 0.5, 200, 300]) == {"window_ms": 200.0,
                                                                  "hold_ms": 500.0}
    assert R.collective_windows([800, 900, 1000]) == {"window_ms": 900.0, "hold_ms": 900.0}
    assert R.collective_windows([None, 0]) == {"window_ms": 100.0, "hold_ms": 500.0}
