"""The EV figure shows DENIED per EV: from each EV's deny to its allow, in a row of the denied
EVs to that peer, and never over the path's row, where the host's other EVs (to other peers)
keep their own states. A hand-built log; every expected bin is derived below from its times."""
import numpy as np
import pandas as pd

from analysis import metrics as m
from analysis import plots, plots_ev
from model.topology import FabricSpec, Topology, make_ev
from model.events import Event

MS = 1_000_000
TOPO = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2))   # h0 h1 | h2 h3
STATE = {name: i for i, name in enumerate(m.EV_STATES)}


def _log() -> pd.DataFrame:
    rows = []

    def add(t_ms, qp, ev, old, new, reason, **kw):
        rows.append({"t_ns": t_ms * MS, "host": "h0", "event": Event.EV_STATE, "qp": qp, "ev": ev,
                     "plane": 0, "old": old, "new": new, "reason": reason, **kw})
    for qp, peer in ((0x10, "h1"), (0x20, "h2"), (0x30, "h3")):
        rows.append({"t_ns": 0, "host": "h0", "event": Event.QP, "qp": qp, "peer": peer})
    to_h2, to_h3, to_h1, ack_h2 = (make_ev(0, 0, 1), make_ev(0, 0, 2), make_ev(0, 1, 3),
                                   make_ev(0, 0, 4))
    # h0 -> h2 on plane 0 via t1p0s0: denied at 100 ms, allowed at 300, probed back at 350
    add(0, 0x20, to_h2, "UNKNOWN", "GOOD", "replacement")
    add(100, 0x20, to_h2, "GOOD", "DENIED", "denied")
    add(300, 0x20, to_h2, "DENIED", "ASSUMED_BAD", "allowed")
    add(350, 0x20, to_h2, "ASSUMED_BAD", "GOOD", "probe_ok")
    # h0 -> h3 on the same path, never denied: a loss at 200 ms, back at 250
    add(0, 0x30, to_h3, "UNKNOWN", "GOOD", "replacement")
    add(200, 0x30, to_h3, "GOOD", "ASSUMED_BAD", "timeout")
    add(250, 0x30, to_h3, "ASSUMED_BAD", "GOOD", "probe_ok")
    add(500, 0x30, to_h3, "GOOD", "GOOD", "tick")              # the log ends at 500 ms
    # a backup EV to h1 (same T0: no T1 on its path) denied at 120 ms, never allowed
    add(120, 0x10, to_h1, "UNKNOWN", "DENIED", "denied")
    # h0's ACK path to h2 via t1p0s0: denied at 100 ms, allowed at 300 (then probed, bad)
    add(0, 0x20, ack_h2, "UNKNOWN", "GOOD", "replacement", direction="reverse")
    add(100, 0x20, ack_h2, "GOOD", "DENIED", "denied", direction="reverse")
    add(300, 0x20, ack_h2, "DENIED", "ASSUMED_BAD", "allowed", direction="reverse")
    return pd.DataFrame(rows)


def _bins(spans: dict[str, tuple[int, int]], n: int) -> np.ndarray:
    """{state: (first bin, last bin)} -> a row of state codes, NaN elsewhere."""
    row = np.full(n, np.nan)
    for state, (a, b) in spans.items():
        row[a:b + 1] = STATE[state]
    return row


def test_denied_stretches_are_per_ev_and_leave_the_paths_row_alone():
    mat, counts = plots_ev.ev_path_matrix(_log(), 10.0, 0, TOPO)
    # 10 ms bins from 0 to the last event at 500 ms: 51 bins; a stretch [s, e) covers bins
    # s // 10 ms .. (e - 1) // 10 ms, a state still held at the end runs to 500 ms (bin 49),
    # and the last event, at 500 ms, marks its own bin 50
    n = 51
    assert mat.shape[1] == n
    path = "h0 data  plane 0 via t1p0s0"
    # the path row: h3's EV GOOD 0-200, ASSUMED_BAD 200-250, GOOD after; h2's EV GOOD 0-100,
    # nothing while denied (100-300), ASSUMED_BAD 300-350, GOOD after. Worst per bin:
    expected = _bins({"GOOD": (0, 50)}, n)
    expected[20:25] = STATE["ASSUMED_BAD"]                     # 200-250 ms, h3's loss
    expected[30:35] = STATE["ASSUMED_BAD"]                     # 300-350 ms, h2's EV allowed
    np.testing.assert_array_equal(mat.loc[path].to_numpy(), expected)
    # the denied EV's own row: DENIED exactly from 100 ms to the allow at 300 ms
    np.testing.assert_array_equal(mat.loc[f"{path}  denied, peer h2"].to_numpy(),
                                  _bins({"DENIED": (10, 29)}, n))
    assert counts[f"{path}  denied, peer h2"] == 1 and counts[path] == 2
    # nothing was denied to h3: no row claims it
    assert not [k for k in mat.index if "peer h3" in k]
    # the backup to h1 crosses no T1: its row is within the T0, DENIED from 120 ms to the end
    within = "h0 data  plane 0 within t0p0g0"
    np.testing.assert_array_equal(mat.loc[f"{within}  denied, peer h1"].to_numpy(),
                                  _bins({"DENIED": (12, 49)}, n))
    assert mat.loc[within].isna().all()                        # no health state logged
    assert mat.loc["h0 data  plane 0 via t1p0s1"].isna().all()
    # the ACK path: GOOD until the deny, nothing while denied, ASSUMED_BAD from the allow
    np.testing.assert_array_equal(mat.loc["h0 ACKs  plane 0 via t1p0s0"].to_numpy(),
                                  _bins({"GOOD": (0, 9), "ASSUMED_BAD": (30, 49)}, n))
    np.testing.assert_array_equal(
        mat.loc["h0 ACKs  plane 0 via t1p0s0  denied, peer h2"].to_numpy(),
        _bins({"DENIED": (10, 29)}, n))


def test_the_figure_labels_denied_rows_with_their_count(tmp_path):
    td = m.TransportData("mrc", tmp_path, pd.DataFrame(), _log(), pd.DataFrame(), {}, [], TOPO)
    fig = plots.ev_state_figure(td, 0, 10.0)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "h0 data  plane 0 via t1p0s0  denied, peer h2  (1 EVs denied)" in labels
    assert "h0 data  plane 0 via t1p0s0  (2 EVs logged)" in labels
