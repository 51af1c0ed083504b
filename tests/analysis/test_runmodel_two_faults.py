"""Recovery with two applied faults (analysis/runmodel.measure_recoveries over
analysis/recovery.py): each fault is measured only until the next one, and the capacity the
second is judged against is what both faults together leave. Every figure worked by hand from
the module docstring: 100 ms windows every 10 ms, held 500 ms, good at >= 90% of the expected
rate."""
from analysis.runmodel import measure_recoveries
from model.topology import FabricSpec, Topology

MS = 1_000_000
RATE = 1_000_000                    # bytes/s before and between the outages


def trace(outages, end_ms, step_ms=10):
    """Cumulative (t_ns, bytes) every step_ms from 0 to end_ms at RATE, nothing sent during
    each (start_ms, stop_ms) outage (integrated exactly at 1 ms resolution)."""
    out, total = [], 0.0
    for t in range(0, end_ms + 1):
        if t % step_ms == 0:
            out.append((t * MS, total))
        if not any(a <= t < b for a, b in outages):
            total += RATE / 1000
    return out


def test_a_first_recovery_cut_off_by_the_second_fault_is_none_and_the_second_is_measured():
    # fault 1 at 2000 ms, fault 2 at 2300 ms; nothing flows 2000-2605 ms. Fault 1 is judged on
    # windows starting in [2000, 2200] (they must end by 2300): all in the outage -> None.
    # Fault 2: the window starting at 2590 holds 85 ms of traffic (bad), at 2600 95 ms (good),
    # and every later one is whole -> 2600 - 2300 = 300 ms.
    samples = trace([(2000, 2605)], 4000)
    faults = [(2000 * MS, [{"action": "link_down", "a": "h9", "b": "x"}]),
              (2300 * MS, [{"action": "link_down", "a": "h9", "b": "y"}])]
    baseline, _, per_fault = measure_recoveries(samples, [], 0, 4000 * MS, faults)
    assert baseline == RATE
    (_, _, first), (_, _, second) = per_fault
    assert first is None
    assert second == 300.0


def test_a_first_recovery_whose_hold_the_second_fault_cuts_short_is_kept():
    # outage 2000-2105 ms: the window starting at 2100 holds 95 ms (good) and so do those
    # after it, up to the last one the next fault at 2400 allows (starting at 2300): the hold
    # (500 ms) is cut short by the next fault, which the definition allows -> 100 ms.
    # Fault 2 at 2400 with no outage: recovered at once -> 0 ms.
    samples = trace([(2000, 2105)], 5000)
    faults = [(2000 * MS, []), (2400 * MS, [])]
    _, _, per_fault = measure_recoveries(samples, [], 0, 5000 * MS, faults)
    assert [rec for _, _, rec in per_fault] == [100.0, 0.0]


def test_the_second_fault_is_judged_against_the_capacity_both_faults_leave():
    # Default fabric: h0 has one 100 Mbit/s link per plane. Halving its plane-0 link leaves
    # h0's cut (50 + 100) / 200 = 0.75; halving its plane-1 link too leaves (50 + 50) / 200
    # = 0.5 (every other cut is whole).
    topo = Topology(FabricSpec())
    samples = trace([], 4000)
    faults = [(1000 * MS, [{"action": "degrade", "a": "h0", "b": "t0p0g0", "fraction": 0.5}]),
              (2000 * MS, [{"action": "degrade", "a": "h0", "b": "t0p1g0", "fraction": 0.5}])]
    baseline, _, per_fault = measure_recoveries(samples, [], 0, 4000 * MS, faults, topo)
    assert [(frac, expected) for frac, expected, _ in per_fault] == [
        (0.75, 0.75 * baseline), (0.5, 0.5 * baseline)]
