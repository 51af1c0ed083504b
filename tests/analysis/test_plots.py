"""Figures: goodput aligned on each transport's timed start with the recovery bar, EV states
grouped by path, legends that list only what is drawn. Hand-built runs: every expected value
follows from how the data was made."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import metrics as m
from analysis import plots, plots_ev
from model.events import Event
from model.topology import FabricSpec, Topology, make_ev

MS = 1_000_000
RATE_BPS = 10_000_000            # 10 MB/s = 80 Mbit/s while healthy
TOPO = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=1))


def _goodput_events(fault_ns: int, outage_ms: int, end_ns: int) -> pd.DataFrame:
    """One receiver's cumulative rx_bytes every 10 ms: RATE_BPS except for outage_ms after
    the fault, when nothing arrives."""
    rows, cum, t = [], 0.0, 0
    while t <= end_ns:
        rows.append({"t_ns": t, "host": "h1", "event": Event.GOODPUT, "rx_bytes": cum})
        if not fault_ns <= t < fault_ns + outage_ms * MS:
            cum += RATE_BPS * 0.01
        t += 10 * MS
    return pd.DataFrame(rows)


def _transport(name, fault_s, tmp_path, outage_ms=300):
    fault_ns = int(fault_s * 1e9)
    faults = pd.DataFrame([{"t_ns": fault_ns, "action": "link_down", "a": "t0p0g0", "b": "t1p0s0"}])
    ev = _goodput_events(fault_ns, outage_ms, fault_ns + 3_000 * MS)
    return m.TransportData(name, tmp_path, pd.DataFrame(), ev, faults, {}, [], None)


def test_goodput_one_row_per_transport_in_percent_with_each_fault_at_its_time(tmp_path):
    """t = 0 at each transport's timed start (these logs hold no warmup_done: their first
    sample, at 0), so each fault sits at its own time: 1 s for mrc, 4 s for tcp."""
    run = m.RunAnalysis(tmp_path, {"mrc": _transport("mrc", 1.0, tmp_path),
                                   "tcp": _transport("tcp", 4.0, tmp_path)}, 0, 10.0, {})
    fig = plots.goodput_figure(run)
    assert len(fig.axes) == 2                       # small multiples: one row per transport
    for ax, name, f in zip(fig.axes, ("mrc", "tcp"), (1.0, 4.0)):
        color = plots.TRANSPORT_COLORS[name]
        assert ax.get_ylabel().startswith(name) and "% of allowed" in ax.get_ylabel()
        lines = [ln for ln in ax.lines if ln.get_color() == color and ln.get_linestyle() == "-"]
        raw = min(lines, key=lambda ln: ln.get_linewidth())      # per-bin steps, faint
        rolling = max(lines, key=lambda ln: ln.get_linewidth())  # the rolling mean
        assert raw.get_alpha() < 0.5
        x, y = np.asarray(raw.get_xdata(), float), np.asarray(raw.get_ydata(), float)
        # bin t holds the bytes of [t - 10 ms, t): the 300 ms outage empties bins f + 0.01 ..
        # f + 0.30 s
        zero = x[(y == 0) & (x > 0.5)]
        assert zero.min() == pytest.approx(f + 0.01, abs=1e-3)
        assert zero.max() == pytest.approx(f + 0.30, abs=1e-3)
        # 80 Mbit/s before the fault is what the paths allow (no topology: full capacity): 100%
        assert y[(x > 0.1) & (x < f - 0.1)].mean() == pytest.approx(100.0, rel=0.02)
        rx, ry = np.asarray(rolling.get_xdata(), float), np.asarray(rolling.get_ydata(), float)
        assert ry[np.argmin(abs(rx - f - 0.1))] == pytest.approx(0.0, abs=1e-9)
        assert ry[np.argmin(abs(rx - f + 0.6))] == pytest.approx(100.0, rel=0.02)
        # the window from f + 0.25 s holds bins 0.25 .. 0.34: six empty, four full = 40%
        assert ry[np.argmin(abs(rx - f - 0.25))] == pytest.approx(40.0, rel=0.01)
        # the recovery bar at 90%
        bars = [ln for ln in ax.lines if ln.get_linestyle() == "--" and
                np.allclose(ln.get_ydata(), 90.0)]
        assert len(bars) == 1
        # the fault's dashed line at its time
        assert any(np.allclose(ln.get_xdata(), f) for ln in ax.lines
                   if ln.get_linestyle() == "--")
        # where the metric says goodput came back: the first 100 ms window at >= 90% starts
        # 290 ms after the fault (10 ms of outage in it = exactly 90%); the stall is shaded
        # from the fault to there and labelled
        dots = [ln for ln in ax.lines if ln.get_color() == color and ln.get_marker() == "o"]
        assert len(dots) == 1 and dots[0].get_xdata()[0] == pytest.approx(f + 0.29, abs=0.011)
        spans = [p for p in ax.patches if p.get_width() > 0]
        assert len(spans) == 1
        assert spans[0].get_x() == pytest.approx(f) and \
            spans[0].get_width() == pytest.approx(0.29, abs=0.011)
        assert any(t.get_text() == "recovered in 290 ms" for t in ax.texts)
        assert ax.get_ylim()[1] == plots.GOODPUT_TOP_PERCENT      # the mean stays below it


def test_goodput_notes_bins_above_the_axis(tmp_path):
    td = _transport("mrc", 1.0, tmp_path)
    ev = td.events.copy()
    spike = ev["t_ns"] >= 500 * MS                  # 2 MB more at 0.5 s: one bin at 1680 Mbit/s
    ev.loc[spike, "rx_bytes"] += 2_000_000
    td = m.TransportData("mrc", tmp_path, pd.DataFrame(), ev, td.faults, {}, [], TOPO)
    fig = plots.goodput_figure(m.RunAnalysis(tmp_path, {"mrc": td}, 0, 10.0, {}))
    notes = [t.get_text() for t in fig.texts if "above the axis" in t.get_text()]
    # TOPO: 2 hosts x 2 planes x 100 Mbit/s = 400 Mbit/s the NICs can receive
    assert len(notes) == 1 and "1 faint 10 ms bins above the axis" in notes[0]
    assert "above the 400 Mbit/s all NIC ports can carry" in notes[0].replace("\n", " ")
    fig.canvas.draw()                       # the note is wrapped inside the figure, never cut
    note = next(t for t in fig.texts if "above the axis" in t.get_text())
    assert note.get_window_extent(fig.canvas.get_renderer()).x1 <= fig.bbox.x1


def test_recovery_zero_is_a_visible_mark_and_never_is_labelled(tmp_path):
    run = m.RunAnalysis(tmp_path, {"mrc": _transport("mrc", 1.0, tmp_path, outage_ms=0),
                                   "roce": _transport("roce", 1.0, tmp_path, outage_ms=10_000)},
                        0, 10.0, {})
    ax = plots.recovery_figure(run).axes[0]
    diamonds = [ln for ln in ax.lines if ln.get_marker() == "D"]
    assert len(diamonds) == 1 and diamonds[0].get_ydata()[0] == 0
    assert diamonds[0].get_color() == plots.TRANSPORT_COLORS["mrc"]
    texts = [t.get_text() for t in ax.texts]
    assert "0 ms" in texts and "not recovered" in texts


def test_no_empty_ev_state_figure_for_a_transport_without_ev_events(tmp_path):
    td = _transport("roce", 1.0, tmp_path)
    assert plots.ev_state_figure(td, 0, 10.0) is None


def test_topology_draws_the_faulted_link_thick_with_its_times():
    faults = pd.DataFrame([{"t_ns": 3 * 10**9, "action": "link_down", "a": "t0p0g0", "b": "t1p0s0"},
                           {"t_ns": 9 * 10**9, "action": "link_up", "a": "t0p0g0", "b": "t1p0s0"}])
    ax = plots.topology_figure(TOPO, faults).axes[0]
    thick = [ln for ln in ax.lines if ln.get_linewidth() >= 4]
    assert len(thick) == 1 and thick[0].get_color() == "black"     # restored
    assert any(t.get_text() == "t0p0g0~t1p0s0\ndown 0.0 s, up 6.0 s" for t in ax.texts)
    ax = plots.topology_figure(TOPO, faults.iloc[:1]).axes[0]
    assert [ln.get_color() for ln in ax.lines if ln.get_linewidth() >= 4] == ["red"]


def _ev_events():
    rows = []

    def add(t, host, qp, ev, old, new, reason, **kw):
        rows.append({"t_ns": t, "host": host, "event": Event.EV_STATE, "qp": qp, "ev": ev,
                     "plane": ev >> 28, "old": old, "new": new, "reason": reason, **kw})
    bad, spare, other = make_ev(0, 0, 11), make_ev(0, 1, 12), make_ev(1, 1, 13)
    add(0, "h1", 5, bad, "UNKNOWN", "GOOD", "init")
    add(0, "h1", 5, other, "UNKNOWN", "GOOD", "init")
    add(100 * MS, "h1", 5, bad, "GOOD", "ASSUMED_BAD", "timeout")
    # a reverse (ACK-path) EV replaced: the retired one keeps its state (probed) until it
    # comes back GOOD at 300 ms
    add(0, "h0", 5, bad, "UNKNOWN", "GOOD", "init", direction="reverse")
    add(100 * MS, "h0", 5, bad, "GOOD", "ASSUMED_BAD", "reverse_probe_timeout", direction="reverse")
    add(200 * MS, "h0", 5, spare, "UNKNOWN", "GOOD", "replacement", replaces=bad,
         direction="reverse")
    add(300 * MS, "h0", 5, bad, "ASSUMED_BAD", "GOOD", "probe_ok", direction="reverse")
    add(400 * MS, "h1", 5, other, "GOOD", "GOOD", "tick")
    return pd.DataFrame(rows)


def test_ev_states_grouped_by_path():
    mat, counts = plots_ev.ev_path_matrix(_ev_events(), 10.0, 0, TOPO)
    # hosts h0 (ACKs) and h1 (data), each with 2 planes x 2 T1s
    assert list(mat.index) == [f"h{h} {d}  plane {p} via t1p{p}s{s}"
                               for h, d in ((0, "ACKs"), (1, "data"))
                               for p in (0, 1) for s in (0, 1)]
    state = {name: i for i, name in enumerate(m.EV_STATES)}
    row = mat.loc["h1 data  plane 0 via t1p0s0"].to_numpy()
    assert row[5] == state["GOOD"] and row[15] == state["ASSUMED_BAD"]
    assert mat.loc["h1 data  plane 1 via t1p1s1"].to_numpy()[15] == state["GOOD"]
    assert mat.loc["h1 data  plane 1 via t1p1s0"].isna().all() and \
        counts["h1 data  plane 1 via t1p1s0"] == 0
    acks = mat.loc["h0 ACKs  plane 0 via t1p0s0"].to_numpy()
    # replaced at 200 ms, still ASSUMED_BAD (probed) until its probe_ok at 300 ms, GOOD after
    assert acks[15] == acks[25] == state["ASSUMED_BAD"] and acks[35] == state["GOOD"]
    assert mat.loc["h0 ACKs  plane 0 via t1p0s1"].to_numpy()[25] == state["GOOD"]


def test_ev_figure_legend_outside_and_fault_label_visible(tmp_path):
    faults = pd.DataFrame([{"t_ns": 100 * MS, "action": "link_down", "a": "t0p0g0", "b": "t1p0s0"},
                           {"t_ns": 150 * MS, "action": "link_up", "a": "t0p0g0", "b": "t1p0s0"}])
    td = m.TransportData("mrc", tmp_path, pd.DataFrame(), _ev_events(), faults, {}, [], TOPO)
    fig = plots.ev_state_figure(td, 0, 10.0)
    fig.canvas.draw()
    ax = fig.axes[0]
    render = fig.canvas.get_renderer()
    axes_box = ax.get_window_extent(render)
    legend_box = ax.get_legend().get_window_extent(render)
    assert legend_box.x0 >= axes_box.x1                      # beside the rows, not over them
    fig_box = fig.bbox
    labels = [t for t in ax.texts if t.get_text().startswith("link_")]
    assert len(labels) == 2
    for t in labels:
        box = t.get_window_extent(render)
        assert box.y0 >= axes_box.y1 - 1 and box.y1 <= fig_box.y1 and box.x1 <= fig_box.x1
    title = ax.title.get_window_extent(render)
    for t in labels:
        assert not t.get_window_extent(render).overlaps(title)


def test_topology_legend_names_failed_only_when_a_link_failed():
    def legend(faults):
        fig = plots.topology_figure(TOPO, faults)
        return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert not any("failed" in s for s in legend(None))
    down = pd.DataFrame([{"t_ns": 1, "action": "link_down", "a": "t0p0g0", "b": "t1p0s0"}])
    assert any("failed" in s for s in legend(down))
    up = pd.concat([down, pd.DataFrame([{"t_ns": 2, "action": "link_up", "a": "t0p0g0",
                                         "b": "t1p0s0"}])], ignore_index=True)
    assert not any("failed" in s for s in legend(up))


def test_trim_figure_leaves_zero_series_out_of_the_legend(tmp_path):
    transports = {}
    for name, marked, trimmed in (("mrc", 40, 7), ("tcp", 0, 0)):
        d = tmp_path / name
        d.mkdir()
        ports = {"t0p0g0-e1": {"offered_packets": 100, "marked": marked, "trimmed": trimmed},
                 "t1p0s0-e1": {"offered_packets": 100, "marked": marked // 2, "trimmed": 0}}
        (d / "trim_counters.json").write_text(json.dumps({"ports": ports}))
        summary = {"trimmed": trimmed, "nacks_sent": trimmed,
                   "retransmits_by_reason": {"nack_trimmed": trimmed}}
        transports[name] = m.TransportData(name, Path(d), pd.DataFrame(), pd.DataFrame(),
                                           pd.DataFrame(), summary, [], TOPO)
    fig = plots.trim_figure(m.RunAnalysis(tmp_path, transports, 0, 10.0, {}))
    left, right = fig.axes
    assert [t.get_text() for t in left.get_legend().get_texts()] == ["mrc marked", "mrc trimmed"]
    assert [t.get_text() for t in right.get_legend().get_texts()] == ["mrc"]
    note = " ".join(t.get_text() for t in fig.texts)
    assert "tcp marked" in note and "tcp trimmed" in note
    # 7 trims beside 40 marks (14,000 in a real run): log axes, and each bar says its count
    assert left.get_yscale() == right.get_yscale() == "log"
    assert {"40", "20", "7"} <= {t.get_text() for t in left.texts}


def test_a_voided_recovery_is_drawn_void_and_the_title_names_the_verdicts(tmp_path):
    mrc = _transport("mrc", 1.0, tmp_path, outage_ms=300)
    mrc.summary.update(recovery_void=["a stall inside its recovery window"], time_scale=4.0,
                       fidelity={"verdict": "invalid"})
    run = m.RunAnalysis(tmp_path, {"mrc": mrc, "roce": _transport("roce", 1.0, tmp_path)},
                        0, 10.0, {})
    fig = plots.figures(run)["recovery"]
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts.count("void (CPU stall)") == 1
    heads = [t.get_text() for t in fig.texts]
    assert any("time scale k = 1, 4" in h and "fidelity: mrc invalid, roce not assessed" in h
               for h in heads)


def test_ev_rows_are_good_before_their_first_change_and_quiet_paths_are_pale(tmp_path):
    """An EV starts GOOD and every change is logged: an EV whose first logged change left GOOD
    at 100 ms was GOOD in bins 0 .. 9; a path none of whose EVs changed is drawn, pale."""
    ev = make_ev(0, 0, 21)
    events = pd.DataFrame([
        {"t_ns": 100 * MS, "host": "h1", "event": Event.EV_STATE, "qp": 7, "ev": ev,
         "plane": 0, "old": "GOOD", "new": "ASSUMED_BAD", "reason": "timeout"},
        {"t_ns": 300 * MS, "host": "h1", "event": Event.EV_STATE, "qp": 7, "ev": ev,
         "plane": 0, "old": "ASSUMED_BAD", "new": "GOOD", "reason": "probe_ok"}])
    mat, counts = plots_ev.ev_path_matrix(events, 10.0, 0, TOPO)
    state = {name: i for i, name in enumerate(m.EV_STATES)}
    row = mat.loc["h1 data  plane 0 via t1p0s0"].to_numpy()
    assert (row[:10] == state["GOOD"]).all() and row[10] == state["ASSUMED_BAD"]
    assert row[29] == state["ASSUMED_BAD"] and row[30] == state["GOOD"]
    td = m.TransportData("mrc", tmp_path, pd.DataFrame(), events, pd.DataFrame(), {}, [], TOPO)
    fig = plots.ev_state_figure(td, 0, 10.0)
    drawn = np.ma.filled(fig.axes[0].collections[0].get_array(), -1).reshape(len(mat), -1)
    quiet = [i for i, k in enumerate(mat.index) if counts[k] == 0]
    assert len(quiet) == 3 and (drawn[quiet] == len(plots_ev.STATE_COLORS)).all()
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "no EV changed state" in legend
