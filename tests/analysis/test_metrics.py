"""analysis.metrics on inputs whose answers are known by construction; analysis.logs robustness."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis import metrics as m
from analysis.logs import load_events, load_faults, read_jsonl, transport_dirs
from model.events import Event
from tests.helpers.synth import make_run, write_jsonl


def test_jain_index_known_values():
    assert m.jain_index([5, 5, 5, 5]) == pytest.approx(1.0)
    assert m.jain_index([1, 0, 0, 0]) == pytest.approx(0.25)
    assert m.jain_index([1, 3]) == pytest.approx(16 / (2 * 10))
    assert m.jain_index([0, 0]) == 1.0 and np.isnan(m.jain_index([]))


def test_bus_bandwidth_nccl_factors():
    alg, bus = m.bus_bandwidth(8e6, 0.5, 8, "all_reduce")
    assert alg == pytest.approx(16e6) and bus == pytest.approx(16e6 * 2 * 7 / 8)
    assert m.busbw_factor("allgather", 4) == pytest.approx(0.75)
    assert m.busbw_factor("broadcast", 4) == 1.0
    with pytest.raises(ValueError, match="unknown collective"):
        m.busbw_factor("allsomething", 4)


def _packets(rows):
    cols = ["time_ns", "transport", "host", "src", "qp", "psn", "opname", "direction",
            "payload_len", "size", "retx", "trimmed", "plane", "ev", "ev_plane", "ev_spine"]
    df = pd.DataFrame(rows, columns=cols)
    df["payload_len"] = df["payload_len"].astype("UInt32")
    return df


def test_goodput_counts_unique_payload_per_bin():
    rows = []
    for i in range(10):            # 1000 B every 1 ms for 10 ms -> 8 Mbit/s per 10 ms bin
        rows.append((i * 1_000_000, "mrc", "h1", "a", 1, i, "WRITE_ONLY", "rx", 1000, 1100,
                     False, False, i % 2, 0, i % 2, 0))
    rows.append((9_500_000, "mrc", "h1", "a", 1, 3, "WRITE_ONLY", "rx", 1000, 1100, True, False,
                 0, 0, 0, 0))      # duplicate PSN 3: not goodput
    rows.append((9_600_000, "mrc", "h1", "a", 1, 11, "WRITE_ONLY", "rx", 0, 100, False, True,
                 0, 0, 0, 0))      # trimmed: not goodput
    gp = m.goodput_series(_packets(rows), bin_ms=10, by=("host",), t0_ns=0)
    assert gp.loc[0.0, "h1"] == pytest.approx(10 * 1000 * 8 / 0.01 / 1e6)
    gp5 = m.goodput_series(_packets(rows), bin_ms=5, by=("plane",), t0_ns=0)
    assert list(gp5.index) == [0.0, 0.005] and gp5.values.sum() == pytest.approx(2 * 8.0)


def test_reordering_distance_and_load_balance():
    order = [0, 1, 3, 2, 4, 7, 5, 6]
    rows = [(t, "mrc", "h1", "a", 1, p, "WRITE_ONLY", "rx", 10, 100, False, False, 0, 0, 0, 0)
            for t, p in enumerate(order)]
    ro = m.reordering(_packets(rows))
    assert list(ro["distance"]) == [0, 0, 0, 1, 0, 0, 2, 1]
    tx = [(t, "mrc", "h0", "b", 1, t, "WRITE_ONLY", "tx", 10, 100, False, False, t % 2, 0,
           t % 2, (t // 2) % 2) for t in range(8)]
    lb = m.load_balance(_packets(tx))
    assert lb["plane_jain"] == pytest.approx(1.0) and lb["path_jain"] == pytest.approx(1.0)
    skew = _packets(tx[:2] + [(9, "mrc", "h0", "b", 1, 9, "WRITE_ONLY", "tx", 10, 800, False,
                               False, 0, 0, 0, 0)])
    assert m.load_balance(skew)["plane_jain"] < 0.7


def test_events_metrics_on_synthetic_run(tmp_path):
    run = make_run(tmp_path / "r", transports=("mrc",), packets=60)
    ev = load_events(run / "mrc")
    problems = ev.attrs["log_problems"]
    assert len(problems) == 2 and "h0.jsonl" in problems[0]          # corrupt tail lines reported
    rc = m.retransmission_causes(ev).set_index("reason")["count"]
    assert rc.to_dict() == {"nack_trimmed": 1, "sack_gap": 2, "timeout": 1}
    iv = m.ev_state_intervals(ev)
    bad = iv[iv.state == "ASSUMED_BAD"]
    assert len(bad) == 1 and bad.iloc[0].end_ns - bad.iloc[0].start_ns == 58_000_000
    mat = m.ev_state_matrix(ev, bin_ms=10)
    assert mat.shape[0] == 4
    assert (mat.values == m.EV_STATES.index("ASSUMED_BAD")).sum() >= 5
    it = m.iteration_bandwidth(m.iteration_times(ev), world_size=2)
    assert len(it) == 6 and it["duration_s"].iloc[0] == pytest.approx(0.025)
    assert it["busbw_Bps"].iloc[0] == pytest.approx((1 << 20) / 0.025 * 2 * 1 / 2)
    gp = m.log_goodput_series(ev, bin_ms=10)
    assert gp["h1"].iloc[1] == pytest.approx(500_000 * 8 / 0.01 / 1e6)
    assert gp["h1"].max() == pytest.approx(700_000 * 8 / 0.01 / 1e6)   # the backlog after the dip
    faults = load_faults(run / "mrc")
    assert list(faults["action"]) == ["link_down", "link_up"]


def test_compare_transports_has_a_row_per_transport(tmp_path):
    run = make_run(tmp_path / "r", transports=("mrc", "roce", "tcp"), packets=40)
    assert set(transport_dirs(run)) == {"mrc", "roce", "tcp"}
    ra = m.load_run(run)
    table = m.compare_transports(ra)
    assert list(table.index) == ["mrc", "roce", "tcp"]
    assert (table["iterations_completed"] == 6).all()
    # the synthetic iteration time grows by 1 ms per transport index
    assert table["median_iteration_ms"].tolist() == pytest.approx([25.0, 26.0, 27.0])
    assert table.loc["mrc", "plane_jain"] == pytest.approx(1.0)


def test_log_reader_never_raises(tmp_path):
    p = tmp_path / "h3.jsonl"
    write_jsonl(p, [{"t_ns": 5, "event": Event.PORT, "plane": 1, "up": False}],
                extra_lines=["[1,2]\n", '{"event": "x"}\n', '{"t_ns": "soon", "event": "x"}\n',
                             "\xff\xfe garbage\n", '{"t_ns": 9, "event": "port", "plane": 0, "up": tr'])
    recs, problems = read_jsonl(p)
    assert len(recs) == 1 and len(problems) == 5
    ev = load_events(p)
    assert list(ev["host"]) == ["h3"]       # host defaults to the file's stem
    assert len(load_events(tmp_path / "missing.jsonl").attrs["log_problems"]) == 1


def _goodput_log(outage_ms, never_back=False):
    """Two receivers at 1 MB/s each, stalled for outage_ms after a fault at t = 1 s."""
    events, cum = [], 0
    for k in range(300):                   # 3 s, one sample per 10 ms
        t = k * 10_000_000
        stalled = 1_000_000_000 <= t < 1_000_000_000 + outage_ms * 1_000_000 or \
            (never_back and t >= 1_000_000_000)
        if k and not stalled:
            cum += 10_000
        for h in ("h0", "h1"):
            events.append({"t_ns": t, "host": h, "event": Event.GOODPUT, "rx_bytes": cum})
    return pd.DataFrame(events)


def test_recovery_per_fault_uses_the_shared_definition():
    from model.topology import FabricSpec, Topology
    topo = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=1))
    faults = pd.DataFrame([{"t_ns": 1_000_000_000, "action": "link_down", "a": "t0p0g0", "b": "t1p0s0"}])
    rec = m.recovery_per_fault(faults, _goodput_log(150), topo)
    assert len(rec) == 1 and bool(rec.recovered.iloc[0])
    assert 100 <= rec.recovery_ms.iloc[0] <= 200
    # one of two spines of plane 0 down for group 0: the worst cut keeps 3/4 of the uplinks
    assert rec.expected_mbit.iloc[0] == pytest.approx(2 * 1e6 * 8 / 1e6 * 0.75, rel=0.02)
    longer = m.recovery_per_fault(faults, _goodput_log(400), topo).recovery_ms.iloc[0]
    assert longer > rec.recovery_ms.iloc[0] + 200
    never = m.recovery_per_fault(faults, _goodput_log(0, never_back=True), topo)
    assert not never.recovered.iloc[0] and np.isnan(never.recovery_ms.iloc[0])


def test_ev_timeline_shows_suspect_stretches_of_loss_verdicts():
    """ev_suspect .. ev_cleared is a SUSPECT stretch back to GOOD; ev_suspect .. ev_state
    ASSUMED_BAD a SUSPECT stretch ending in retirement (traffic/core/reliability.py loss verdicts)."""
    ms = 1_000_000
    rows = [
        {"t_ns": 0, "host": "h0", "event": Event.EV_STATE, "qp": 1, "ev": 7, "plane": 0,
         "old": "UNKNOWN", "new": "GOOD", "reason": "replacement"},
        {"t_ns": 10 * ms, "host": "h0", "event": Event.EV_SUSPECT, "qp": 1, "ev": 7, "plane": 0,
         "reason": "sack_gap"},
        {"t_ns": 40 * ms, "host": "h0", "event": Event.EV_CLEARED, "qp": 1, "ev": 7, "plane": 0,
         "evidence": "nack_trimmed"},
        {"t_ns": 0, "host": "h0", "event": Event.EV_STATE, "qp": 1, "ev": 9, "plane": 1,
         "old": "UNKNOWN", "new": "GOOD", "reason": "replacement"},
        {"t_ns": 20 * ms, "host": "h0", "event": Event.EV_SUSPECT, "qp": 1, "ev": 9, "plane": 1,
         "reason": "timeout"},
        {"t_ns": 120 * ms, "host": "h0", "event": Event.EV_STATE, "qp": 1, "ev": 9, "plane": 1,
         "old": "GOOD", "new": "ASSUMED_BAD", "reason": "timeout"},
        {"t_ns": 200 * ms, "host": "h0", "event": Event.GOODPUT, "rx_bytes": 0},
    ]
    ev = pd.DataFrame(rows)
    iv = m.ev_state_intervals(ev)
    seven = iv[iv.ev == 7][["state", "start_ns", "end_ns", "reason"]].values.tolist()
    assert seven == [["GOOD", 0, 10 * ms, "replacement"], ["SUSPECT", 10 * ms, 40 * ms, "sack_gap"],
                     ["GOOD", 40 * ms, 200 * ms, "nack_trimmed"]]
    nine = iv[iv.ev == 9][["state", "start_ns", "end_ns"]].values.tolist()
    assert nine == [["GOOD", 0, 20 * ms], ["SUSPECT", 20 * ms, 120 * ms],
                    ["ASSUMED_BAD", 120 * ms, 200 * ms]]
    mat = m.ev_state_matrix(ev, bin_ms=10, t0_ns=0)
    row9 = mat.loc["h0/qp1/ev0x00000009"].to_numpy()
    assert row9[5] == m.EV_STATES.index("SUSPECT") and row9[15] == m.EV_STATES.index("ASSUMED_BAD")


def test_goodput_series_keys_bins_and_origin_by_hand():
    """A duplicate is the same (transport, host, src, QP, PSN); another source, QP or host is
    new payload. Bins count from the first packet of the capture (a tx at 2 ms), empty bins
    are 0. By hand, 10 ms bins from 2 ms: h1 gets 3 x 1000 B in bin 0 -> 2.4 Mbit/s (3.2 with
    the duplicate), h2 500 B in bin 3 -> 0.4 Mbit/s."""
    def row(ms, host, src, qp, op="WRITE_ONLY", direction="rx", payload=1000):
        return (ms * 1_000_000, "mrc", host, src, qp, 0, op, direction, payload, payload + 100,
                False, False, 0, 0, 0, 0)
    pk = _packets([row(2, "h0", "x", 1, direction="tx"),
                   row(5, "h1", "a", 1), row(6, "h1", "b", 1), row(7, "h1", "a", 2),
                   row(8, "h1", "a", 1),                        # duplicate of the 5 ms one
                   row(35, "h2", "a", 1, payload=500),
                   row(36, "h2", "a", 1, op="SACK", payload=0)])
    gp = m.goodput_series(pk, bin_ms=10)
    assert list(gp.index) == pytest.approx([0.0, 0.01, 0.02, 0.03])
    assert list(gp.columns) == ["h1", "h2"]
    assert list(gp["h1"]) == pytest.approx([2.4, 0, 0, 0])
    assert list(gp["h2"]) == pytest.approx([0, 0, 0, 0.4])
    assert list(m.goodput_series(pk, bin_ms=10, unique=False)["h1"]) == pytest.approx([3.2, 0, 0, 0])
    assert list(m.goodput_series(pk, bin_ms=10, by=())["all"]) == pytest.approx([2.4, 0, 0, 0.4])
    shifted = m.goodput_series(pk, bin_ms=10, t0_ns=0)             # bins from 0: 5..8 ms in bin 0
    assert list(shifted["h2"]) == pytest.approx([0, 0, 0, 0.4])
    assert len(m.first_arrivals(pk)) == 4
    assert m.goodput_series(pk.iloc[:1]).empty                      # nothing received
