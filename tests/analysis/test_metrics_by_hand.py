"""analysis.metrics on small tables whose every number is worked out by hand in the test.

NCCL's busbw factors are from nccl-tests doc/PERFORMANCE.md ("Summary"); rates are Mbit/s
(10^6 bit/s) and bytes/s as the module says.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import metrics as m
import dataclasses

from analysis.runmodel import APPLIED, FAILED, NOT_REACHED, Fault, Iteration, TransportRun
from model.events import Event

MS = 1_000_000
PACKET_COLS = ["time_ns", "transport", "host", "src", "qp", "psn", "opname", "direction",
               "payload_len", "size", "retx", "trimmed", "plane", "ev", "ev_plane", "ev_spine"]


def packets(rows) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=PACKET_COLS)
    df["payload_len"] = df["payload_len"].astype("UInt32")
    return df


def pkt(t_ms=0, host="h0", direction="tx", op="WRITE_ONLY", psn=0, size=1100, retx=False,
        plane=0, spine=0, payload=1000, src="a", qp=1, transport="mrc", trimmed=False):
    return (int(t_ms * MS), transport, host, src, qp, psn, op, direction, payload, size, retx,
            trimmed, plane, 0, plane, spine)


# ---------------------------------------------------------------- formulas


@pytest.mark.parametrize("name,factor", [
    ("allreduce", 2 * 3 / 4), ("All-Reduce", 2 * 3 / 4), ("reduce_scatter", 3 / 4),
    ("allgather", 3 / 4), ("all to all", 3 / 4), ("broadcast", 1.0), ("reduce", 1.0),
    ("send_recv", 1.0), ("bisection", 1.0), ("incast", 3.0)])
def test_busbw_factor_for_four_ranks(name, factor):
    assert m.busbw_factor(name, 4) == pytest.approx(factor)
    assert m.busbw_factor(name, np.int64(4)) == pytest.approx(factor)


def test_busbw_factor_of_one_rank_and_of_bad_world_sizes():
    assert m.busbw_factor("allreduce", 1) == 0.0            # 2 (1 - 1) / 1
    assert m.busbw_factor("incast", 1) == 0.0
    for bad in (0, -2, True, 2.5, "4", None):
        with pytest.raises(ValueError, match="world size"):
            m.busbw_factor("allreduce", bad)


def test_bus_bandwidth_is_vectorised_over_sizes_and_times():
    alg, bus = m.bus_bandwidth([1000, 3000], [0.5, 1.0], 2, "allgather")
    assert list(alg) == pytest.approx([2000.0, 3000.0])
    assert list(bus) == pytest.approx([1000.0, 1500.0])     # (2 - 1) / 2


def test_line_rate_fraction_is_the_median_busbw_over_all_planes():
    # 2 planes x 100 Mbit/s = 25e6 B/s; median of 1, 2 and 5 MB/s = 2 MB/s -> 0.08
    assert m.line_rate_fraction([1e6, 5e6, 2e6], 2, 100) == pytest.approx(0.08)
    assert m.line_rate_fraction([np.nan, 4e6], 2, 100.0) == pytest.approx(0.16)
    assert m.line_rate_fraction(12.5e6, 1, 100) == pytest.approx(1.0)
    assert math.isnan(m.line_rate_fraction([], 2, 100))
    assert math.isnan(m.line_rate_fraction([np.nan], 2, 100))


@pytest.mark.parametrize("planes,rate", [(0, 100), (True, 100), (1.5, 100), (2, 0), (2, -5),
                                         (2, float("nan")), (2, float("inf")), (2, True),
                                         (2, "100")])
def test_line_rate_fraction_rejects_bad_planes_and_rates(planes, rate):
    with pytest.raises(ValueError, match="planes" if rate == 100 else "host_link_mbit"):
        m.line_rate_fraction([1e6], planes, rate)


def test_jain_index_of_two_unequal_loads():
    # (1 + 2)^2 / (2 (1 + 4)) = 9 / 10
    assert m.jain_index(iter([1, 2])) == pytest.approx(0.9)
    assert m.jain_index([7]) == 1.0


# ---------------------------------------------------------------- packets


def test_data_packets_keeps_writes_in_the_asked_direction():
    pk = packets([pkt(0, direction="tx"), pkt(1, direction="rx"),
                  pkt(2, direction="rx", op="SACK"), pkt(3, direction="tx", op="WRITE_LAST_IMM")])
    assert list(m.data_packets(pk)["time_ns"]) == [1 * MS]
    assert list(m.data_packets(pk, "tx")["time_ns"]) == [0, 3 * MS]
    assert list(m.data_packets(pk, None)["time_ns"]) == [0, 1 * MS, 3 * MS]


def test_first_arrivals_without_a_trimmed_column():
    pk = packets([pkt(0, direction="rx", psn=1), pkt(1, direction="rx", psn=1),
                  pkt(2, direction="rx", psn=2, trimmed=True)]).drop(columns=["trimmed"])
    assert list(m.first_arrivals(pk)["psn"]) == [1, 2]


def test_load_by_plane_and_path_sums_transmitted_frame_sizes():
    pk = packets([pkt(0, plane=0, size=100), pkt(1, plane=1, size=300),
                  pkt(2, plane=0, spine=1, size=50), pkt(3, plane=1, size=999, direction="rx"),
                  pkt(4, plane=1, size=7, op="SACK")])
    assert m.load_by(pk, "plane").to_dict() == {0: 150, 1: 300}
    assert m.load_by(pk, "plane", direction="rx").to_dict() == {1: 999}
    lb = m.load_balance(pk)
    assert lb["plane_bytes"] == {0: 150, 1: 300}
    assert lb["path_bytes"] == {"p0s0": 100, "p0s1": 50, "p1s0": 300}
    # (150 + 300)^2 / (2 (150^2 + 300^2)) = 202500 / 225000
    assert lb["plane_jain"] == pytest.approx(0.9)
    assert lb["path_jain"] == pytest.approx(450 ** 2 / (3 * (100 ** 2 + 50 ** 2 + 300 ** 2)))


def test_packet_retransmissions_per_host_and_plane():
    pk = packets([pkt(0, host="h0", plane=0), pkt(1, host="h0", plane=0, retx=True),
                  pkt(2, host="h0", plane=1, retx=True), pkt(3, host="h1", plane=0),
                  pkt(4, host="h1", plane=0, retx=True, direction="rx")])
    pr = m.packet_retransmissions(pk).set_index(["transport", "host", "plane"])
    assert pr.to_dict("index") == {("mrc", "h0", 0): {"sent": 2, "retransmitted": 1},
                                   ("mrc", "h0", 1): {"sent": 1, "retransmitted": 1},
                                   ("mrc", "h1", 0): {"sent": 1, "retransmitted": 0}}


def test_reordering_leaves_out_retransmissions_and_keeps_flows_apart():
    pk = packets([pkt(0, direction="rx", psn=5), pkt(1, direction="rx", psn=2),
                  pkt(2, direction="rx", psn=1, retx=True),         # late retransmission
                  pkt(3, direction="rx", psn=1, qp=2),              # another QP: in order
                  pkt(4, direction="rx", psn=4)])
    ro = m.reordering(pk)
    assert list(zip(ro["qp"], ro["psn"], ro["distance"])) == [(1, 5, 0), (1, 2, 3), (2, 1, 0),
                                                             (1, 4, 1)]
    empty = m.reordering(packets([pkt(0, direction="tx")]))
    assert len(empty) == 0 and list(empty.columns) == ["transport", "host", "src", "qp", "psn",
                                                       "distance"]


# ---------------------------------------------------------------- events


def goodput_events(host, samples, counter="rx_bytes"):
    return [{"t_ns": t, "host": host, "event": Event.GOODPUT, counter: c} for t, c in samples]


def test_log_goodput_series_per_host_bins_from_cumulative_counters():
    """10 ms bins. h0's counter: 0 at 0, 10 kB at 10 ms, 30 kB at 25 ms (bin 2 keeps the last
    value), nothing logged in bin 3, 40 kB at 45 ms. Per bin: 10 kB -> 8 Mbit/s, 20 kB -> 16."""
    ev = pd.DataFrame(goodput_events("h0", [(0, 0), (10 * MS, 10_000), (21 * MS, 15_000),
                                            (25 * MS, 30_000), (45 * MS, 40_000)]))
    gp = m.log_goodput_series(ev, bin_ms=10)
    assert list(gp.index) == pytest.approx([0.0, 0.01, 0.02, 0.03, 0.04])
    assert list(gp["h0"]) == pytest.approx([0.0, 8.0, 16.0, 0.0, 8.0])
    # from t0 = -10 ms the same samples land one bin later
    shifted = m.log_goodput_series(ev, bin_ms=10, t0_ns=-10 * MS)
    assert list(shifted["h0"]) == pytest.approx([0.0, 8.0, 16.0, 0.0, 8.0])
    assert list(shifted.index) == pytest.approx([0.01, 0.02, 0.03, 0.04, 0.05])


def test_log_goodput_series_clips_a_counter_that_goes_back():
    ev = pd.DataFrame(goodput_events("h1", [(0, 5000), (10 * MS, 1000), (20 * MS, 6000)]))
    assert list(m.log_goodput_series(ev, bin_ms=10)["h1"]) == pytest.approx([0.0, 0.0, 4.0])


def test_log_goodput_series_of_another_counter_and_of_no_samples():
    ev = pd.DataFrame(goodput_events("h0", [(0, 0), (10 * MS, 2500)], counter="tx_bytes"))
    assert m.log_goodput_series(ev, bin_ms=10).empty               # no rx_bytes
    assert list(m.log_goodput_series(ev, 10, counter="tx_bytes")["h0"]) == pytest.approx([0, 2.0])
    assert m.log_goodput_series(pd.DataFrame(), 10).empty
    assert m.log_goodput_series(pd.DataFrame([{"t_ns": 0, "host": "h0"}]), 10).empty


def test_retransmission_causes_without_retransmits():
    rc = m.retransmission_causes(pd.DataFrame(goodput_events("h0", [(0, 0)])))
    assert len(rc) == 0 and list(rc.columns) == ["host", "reason", "count"]


def ev_state(t, ev, new, host="h0", qp=1, plane=0, reason="r"):
    return {"t_ns": t, "host": host, "event": Event.EV_STATE, "qp": qp, "ev": ev,
            "plane": plane, "old": "?", "new": new, "reason": reason}


def test_ev_state_intervals_end_at_the_next_change_or_the_end_of_the_log():
    ev = pd.DataFrame([ev_state(0, 1, "GOOD"), ev_state(5 * MS, 1, "ASSUMED_BAD", reason="to"),
                       ev_state(2 * MS, 2, "GOOD", qp=2, plane=1),
                       {"t_ns": 9 * MS, "host": "h0", "event": Event.GOODPUT, "rx_bytes": 0}])
    iv = m.ev_state_intervals(ev)
    assert iv[["qp", "ev", "plane", "state", "start_ns", "end_ns", "reason"]].values.tolist() == [
        [1, 1, 0, "GOOD", 0, 5 * MS, "r"], [1, 1, 0, "ASSUMED_BAD", 5 * MS, 9 * MS, "to"],
        [2, 2, 1, "GOOD", 2 * MS, 9 * MS, "r"]]
    longer = m.ev_state_intervals(ev, end_ns=20 * MS)
    assert list(longer["end_ns"]) == [5 * MS, 20 * MS, 20 * MS]
    assert len(m.ev_state_intervals(pd.DataFrame(goodput_events("h0", [(0, 0)])))) == 0


def codes(row) -> list:
    return [None if np.isnan(x) else int(x) for x in row]


def test_ev_state_matrix_shows_the_worst_state_of_each_bin():
    """10 ms bins from 0 to 40 ms (the log's end; a stretch covers [start, end), so the bin at
    40 ms holds nothing). EV 1: GOOD, DENIED from 12 to 15 ms, then ASSUMED_BAD to 35 ms, GOOD
    again: bin 1 holds DENIED (the worst), bins 2-3 ASSUMED_BAD. EV 2 shows a state name the
    matrix does not know from 20 ms: drawn as UNKNOWN."""
    ev = pd.DataFrame([ev_state(0, 1, "GOOD"), ev_state(12 * MS, 1, "DENIED"),
                       ev_state(15 * MS, 1, "ASSUMED_BAD"), ev_state(35 * MS, 1, "GOOD"),
                       ev_state(0, 2, "GOOD"), ev_state(20 * MS, 2, "WEIRD"),
                       {"t_ns": 40 * MS, "host": "h0", "event": Event.GOODPUT, "rx_bytes": 0}])
    mat = m.ev_state_matrix(ev, bin_ms=10)
    code = m.EV_STATES.index
    assert list(mat.index) == ["h0/qp1/ev0x00000001", "h0/qp1/ev0x00000002"]
    assert list(mat.columns) == pytest.approx([0.0, 0.01, 0.02, 0.03, 0.04])
    assert codes(mat.iloc[0]) == [code("GOOD"), code("DENIED"), code("ASSUMED_BAD"),
                                  code("ASSUMED_BAD"), None]
    assert codes(mat.iloc[1]) == [code("GOOD"), code("GOOD"), code("UNKNOWN"), code("UNKNOWN"),
                                  None]
    only_bad = m.ev_state_matrix(ev, bin_ms=10, states=("ASSUMED_BAD",))
    assert list(only_bad.index) == list(mat.index)                 # rows kept, empty ones too
    assert codes(only_bad.iloc[0]) == [None] + [code("ASSUMED_BAD")] * 3 + [None]   # 15-35 ms
    assert only_bad.iloc[1].isna().all()
    late = m.ev_state_matrix(ev, bin_ms=10, t0_ns=10 * MS, end_ns=30 * MS)
    assert list(late.columns) == pytest.approx([0.0, 0.01, 0.02])
    assert codes(late.iloc[0]) == [code("DENIED"), code("ASSUMED_BAD"), code("ASSUMED_BAD")]
    assert m.ev_state_matrix(pd.DataFrame(goodput_events("h0", [(0, 0)]))).empty


def iteration(host, i, start_ms, end_ms, nbytes=100, verified=True, **extra):
    return {"t_ns": int(end_ms * MS), "host": host, "event": Event.ITERATION, "iter": i,
            "collective": "allreduce", "start_ns": int(start_ms * MS), "end_ns": int(end_ms * MS),
            "bytes": nbytes, "verified": verified, **extra}


def test_iteration_times_take_the_slowest_rank():
    ev = pd.DataFrame([iteration("h0", 0, 0, 10, 100), iteration("h1", 0, 1, 14, 150),
                       iteration("h0", 1, 20, 25, verified=False), iteration("h1", 1, 20, 24)])
    it = m.iteration_times(ev)
    assert it[["transport", "iter", "start_ns", "end_ns", "bytes", "ranks", "verified"]] \
        .values.tolist() == [["?", 0, 0, 14 * MS, 150, 2, True], ["?", 1, 20 * MS, 25 * MS, 100, 2,
                                                                  False]]
    assert list(it["duration_s"]) == pytest.approx([0.014, 0.005])
    assert it["nccl_size_bytes"].isna().all()
    assert len(m.iteration_times(pd.DataFrame(goodput_events("h0", [(0, 0)])))) == 0


def test_iteration_bandwidth_from_nccl_size_and_ranks():
    """S = 1 MB in 10 ms over 2 ranks: algbw 1e8 B/s, all-reduce busbw x 2(2-1)/2 = 1e8; with
    world_size 4 the factor is 1.5. An unknown collective has algbw but no busbw."""
    ev = pd.DataFrame([iteration("h0", 0, 0, 10, nccl_size_bytes=1e6, transport="mrc"),
                       iteration("h1", 0, 0, 10, nccl_size_bytes=1e6, transport="mrc")])
    bw = m.iteration_bandwidth(m.iteration_times(ev))
    assert (bw["algbw_Bps"].iloc[0], bw["busbw_Bps"].iloc[0]) == pytest.approx((1e8, 1e8))
    bw4 = m.iteration_bandwidth(m.iteration_times(ev), world_size=4)
    assert bw4["busbw_Bps"].iloc[0] == pytest.approx(1.5e8)
    odd = m.iteration_times(ev).assign(collective="gossip")
    bw_odd = m.iteration_bandwidth(odd)
    assert bw_odd["algbw_Bps"].iloc[0] == pytest.approx(1e8) and np.isnan(bw_odd["busbw_Bps"].iloc[0])
    empty = m.iteration_bandwidth(m.iteration_times(pd.DataFrame()))
    assert len(empty) == 0 and {"algbw_Bps", "busbw_Bps"} <= set(empty.columns)


# ---------------------------------------------------------------- a whole transport


def fault(entry, status, t_ns, recovery_ms=None, expected=None, **kw):
    return Fault(entry=entry, when=f"at_s={entry}", status=status, action="link_down", a="x",
                 b="y", t_ns=t_ns, recovery_ms=recovery_ms, expected_goodput_bps=expected, **kw)


def transport_run(faults, timed_start_ns=1000 * MS):
    return TransportRun(name="mrc", directory=Path("."), hosts=["h0"], iterations_planned=None,
                        iterations=[], goodput={}, samples=[], timed_start_ns=timed_start_ns,
                        traffic_end_ns=None, data_verified=True, worker_errors=[], faults=faults,
                        baseline_goodput_bps=None, windows={})


def test_recovery_table_times_from_the_timed_start_and_rates_in_mbit():
    run = transport_run([fault(0, APPLIED, 1500 * MS, recovery_ms=12.5, expected=1.25e6,
                               capacity_fraction=0.5),
                         fault(1, NOT_REACHED, None, reason="traffic ended")])
    table = m.recovery_table(run)
    assert table.loc[0, "t_s"] == pytest.approx(0.5)
    assert table.loc[0, "expected_mbit"] == pytest.approx(10.0)       # 1.25e6 B/s x 8
    assert (table.loc[0, "recovery_ms"], table.loc[0, "capacity_fraction"]) == (12.5, 0.5)
    assert pd.isna(table.loc[1, "t_s"]) and pd.isna(table.loc[1, "expected_mbit"])
    assert table.loc[1, "reason"] == "traffic ended" and table.loc[1, "status"] == NOT_REACHED
    assert m.recovery_table(run, t0_ns=0).loc[0, "t_s"] == pytest.approx(1.5)
    assert pd.isna(m.recovery_table(transport_run(run.faults, None)).loc[0, "t_s"])


def transport_data(events, faults_list, summary=None, pk=None, **model):
    """model: fields of the run model (iterations, samples, timed_start_ns, ...)."""
    return m.TransportData("mrc", Path("."), pk if pk is not None else pd.DataFrame(),
                           pd.DataFrame(events), pd.DataFrame(), summary or {}, ["p1", "p2"],
                           None, dataclasses.replace(transport_run(faults_list), **model))


def test_transport_metrics_of_a_logged_run_by_hand():
    """The run model (summary.json's source): all hosts delivered 40 kB from the timed start (0)
    to the end of the traffic (30 ms): 40e3 x 8 / 0.03 s = 10.667 Mbit/s. Two iterations of 10
    and 30 ms. 3 retransmissions counted. Faults: recovered in 40 ms, never recovered, recovered
    in 15 ms, and one that failed (not applied, not effective)."""
    events = goodput_events("h0", [(0, 0), (10 * MS, 10_000), (20 * MS, 20_000),
                                   (30 * MS, 40_000)])
    events += [iteration("h0", 0, 0, 10), iteration("h0", 1, 10, 40)]
    events += [{"t_ns": 5 * MS, "host": "h0", "event": Event.RETRANSMIT, "reason": r}
               for r in ("timeout", "timeout", "sack_gap")]
    faults = [fault(0, APPLIED, 1, recovery_ms=40.0), fault(1, APPLIED, 2),
              fault(2, APPLIED, 3, recovery_ms=15.0), fault(3, FAILED, 4)]
    model = {"iterations": [Iteration(0, 0, 10 * MS, 1, True),
                            Iteration(1, 10 * MS, 40 * MS, 1, True)],
             "samples": [(0, 0), (10 * MS, 10_000), (20 * MS, 20_000), (30 * MS, 40_000)],
             "timed_start_ns": 0, "traffic_end_ns": 30 * MS, "retransmissions": 3}
    row = m.transport_metrics(transport_data(events, faults, {"world_size": 1}, **model),
                              t0_ns=0, bin_ms=10)
    assert row["goodput_sum_mbit"] == pytest.approx(40_000 * 8 / 0.03 / 1e6)
    assert row["iterations_completed"] == 2
    assert row["median_iteration_ms"] == pytest.approx(20.0)
    assert row["p99_iteration_ms"] == pytest.approx(10 + 0.99 * 20)
    assert row["slowest_iteration_ms"] == pytest.approx(30.0)
    assert np.isnan(row["busbw_mbit"])                        # no collective in the summary
    assert row["retransmissions"] == 3 and row["retransmissions_captured"] == 0
    assert "plane_jain" not in row                             # no captures
    assert row["recovery_first_fault_ms"] == 40.0
    assert row["recovery_max_ms"] == 40.0
    assert row["faults_not_recovered"] == 1 and row["faults_not_effective"] == 1
    assert row["problems"] == 2
    first_never = m.transport_metrics(transport_data(events, [fault(0, APPLIED, 1)]), 0, 10)
    assert np.isnan(first_never["recovery_first_fault_ms"])
    assert np.isnan(first_never["recovery_max_ms"]) and first_never["faults_not_recovered"] == 1
    assert first_never["faults_not_effective"] == 0


def test_transport_metrics_falls_back_to_captures_and_measures_them():
    pk = packets([pkt(0, plane=0, size=100, psn=0), pkt(1, plane=1, size=100, psn=1, retx=True),
                  pkt(2, direction="rx", psn=0), pkt(3, direction="rx", psn=2),
                  pkt(4, direction="rx", psn=1)])
    row = m.transport_metrics(transport_data([], [], pk=pk), t0_ns=0, bin_ms=10)
    # 3 x 1000 B received in the 10 ms bin from 0: 2.4 Mbit/s
    assert row["goodput_sum_mbit"] == pytest.approx(2.4)
    assert row["retransmissions_captured"] == 1 and np.isnan(row["retransmissions"])
    assert row["plane_jain"] == pytest.approx(1.0) and row["path_jain"] == pytest.approx(1.0)
    # distances 0, 0, 1: the 99th percentile by linear interpolation = 0.98
    assert row["reorder_p99"] == pytest.approx(0.98)
    assert row["iterations_completed"] == 0 and np.isnan(row["median_iteration_ms"])
    assert "recovery_first_fault_ms" not in row and "faults_not_effective" not in row
    nothing = m.transport_metrics(transport_data([], [], pk=packets([])), t0_ns=0)
    assert np.isnan(nothing["goodput_sum_mbit"])


def test_all_faults_tags_each_fault_with_its_transport():
    a = m.TransportData("mrc", Path("."), pd.DataFrame(), pd.DataFrame(),
                        pd.DataFrame([{"t_ns": 1, "action": "link_down", "a": "x", "b": "y"}]), {})
    b = m.TransportData("roce", Path("."), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {})
    run = m.RunAnalysis(Path("."), {"mrc": a, "roce": b}, 0, 10.0, {})
    assert m.RunAnalysis(Path("."), {"roce": b}, 0, 10.0, {}).all_faults().columns.tolist() == [
        "t_ns", "action", "a", "b", "transport"]
    assert run.all_faults()[["t_ns", "transport"]].values.tolist() == [[1, "mrc"]]


def test_a_single_goodput_sample_is_one_bin_of_nothing():
    gp = m.log_goodput_series(pd.DataFrame(goodput_events("h0", [(5 * MS, 1000)])), bin_ms=10)
    assert list(gp.index) == [0.0] and list(gp["h0"]) == [0.0]


def test_ev_state_matrix_edges_of_bins_and_of_severity():
    """EV 3: GOOD at 0, a state the matrix does not know (UNKNOWN) from 5 ms: bin 0 shows the
    worse, UNKNOWN. EV 4: ASSUMED_BAD from 0 to 20 ms + 1 ns reaches into bin 2."""
    ev = pd.DataFrame([ev_state(0, 3, "GOOD"), ev_state(5 * MS, 3, "WEIRD"),
                       ev_state(0, 4, "ASSUMED_BAD"), ev_state(20 * MS + 1, 4, "GOOD"),
                       {"t_ns": 40 * MS, "host": "h0", "event": Event.GOODPUT, "rx_bytes": 0}])
    mat = m.ev_state_matrix(ev, bin_ms=10)
    code = m.EV_STATES.index
    assert codes(mat.iloc[0])[0] == code("UNKNOWN")
    assert codes(mat.iloc[1])[:3] == [code("ASSUMED_BAD")] * 3
    only_bad = m.ev_state_matrix(ev, bin_ms=10, states=("DENIED",))
    assert [codes(only_bad.iloc[i]) for i in range(2)] == [[None] * 5] * 2


def test_transport_metrics_bus_bandwidth_uses_the_runs_world_size():
    """2 ranks logged, world_size 4 in the summary: all-reduce busbw = S / t x 2 (4 - 1) / 4.
    S = 1e6 B in 10 ms: algbw 1e8 B/s, busbw 1.5e8 B/s = 1200 Mbit/s."""
    summary = {"world_size": 4, "collective": "allreduce", "message_bytes": 1_000_000}
    row = m.transport_metrics(transport_data([], [], summary, pk=packets([]), iterations=[
        Iteration(0, 0, 10 * MS, 2, True)]), 0, 10)
    assert row["busbw_mbit"] == pytest.approx(1200.0)


def test_transport_metrics_bins_captured_goodput_from_the_runs_start():
    """Captured only: 1000 B received at 15 ms. From t0 = 0, 10 ms bins: 0 then 0.8 Mbit/s,
    a mean of 0.4; binned from the packet itself it would be one bin of 0.8."""
    pk = packets([pkt(15, direction="rx", psn=0)])
    row = m.transport_metrics(transport_data([], [], pk=pk), t0_ns=0, bin_ms=10)
    assert row["goodput_sum_mbit"] == pytest.approx(0.4)


def test_faults_of_all_transports_are_numbered_afresh():
    f = pd.DataFrame([{"t_ns": 1, "action": "link_down", "a": "x", "b": "y"}])
    tds = {n: m.TransportData(n, Path("."), pd.DataFrame(), pd.DataFrame(), f, {})
           for n in ("mrc", "roce")}
    assert list(m.RunAnalysis(Path("."), tds, 0, 10.0, {}).all_faults().index) == [0, 1]


def test_an_empty_run_directory_starts_at_zero(tmp_path):
    ra = m.load_run(tmp_path)
    assert ra.transports == {} and ra.t0_ns == 0


def test_a_loaded_run_tags_packets_with_their_transport(tmp_path):
    from tests.helpers.synth import make_run
    ra = m.load_run(make_run(tmp_path / "r", transports=("mrc", "tcp"), packets=8))
    for name, td in ra.transports.items():
        assert len(td.packets) and set(td.packets["transport"]) == {name}
