"""Every shipped sweep (experiments/sweeps/*.toml) runs through `mrclab sweep --short` on the real
fabric and writes its tidy table (CSV and Parquet, one row per point x transport x repeat), the
curves and the figures; random-loss is also interrupted-and-resumed (a run whose done marker is
missing is run again, the others are not) and its run directories carry run.json."""
import contextlib
import csv
import io
import json
from pathlib import Path

import pytest

from analysis import metric_names
from emulation.run import sweep
from emulation.config import sweep_plan
from tests.helpers.paths import REPO

pytestmark = pytest.mark.integration

SWEEPS = REPO / "experiments" / "sweeps"


def run_sweep(name: str, out: Path) -> tuple[int, str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        rc = sweep.main([str(SWEEPS / f"{name}.toml"), "--short", "--out-dir", str(out)])
    return rc, printed.getvalue()


def run_dirs(out: Path) -> set[Path]:
    return {d for d in out.glob("points/*/*/*") if d.is_dir()}


def check_tables(name: str, out: Path) -> list[dict]:
    plan = sweep_plan.load(SWEEPS / f"{name}.toml", short=True)
    with open(out / "sweep.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(plan.points) * plan.repeats * len(plan.transports)
    assert {(r["point"], r["transport"]) for r in rows} == {
        (str(p.index), t) for p in plan.points for t in plan.transports}
    import pyarrow.parquet as pq
    table = pq.read_table(out / "sweep.parquet").to_pylist()
    assert [(str(r["point"]), r["transport"]) for r in table] == [
        (r["point"], r["transport"]) for r in rows]
    for r in rows:
        assert r["verified"] == "True", f"{name} {r['point']} {r['transport']}: not verified"
        assert r["faults_ok"] == "True", f"{name} {r['point']} {r['transport']}: a fault missed"
        assert float(r["time_mean_ms"]) > 0 and float(r["busbw_GBps"]) > 0
        assert r["fidelity"], "every row says its fidelity verdict (or unknown)"
    assert (out / "figures" / "time_mean_ms.png").stat().st_size > 5000
    with open(out / "curves.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == len(plan.points) * len(plan.transports)
    return rows


def test_random_loss_sweep_short_resumes_and_records_each_run(tmp_path):
    out = tmp_path / "sweep"
    rc, printed = run_sweep("random-loss", out)
    assert rc == 0, printed
    rows = check_tables("random-loss", out)
    by = {(float(r["x"]), r["transport"]): r for r in rows}
    # the slowdown is against the same transport's loss-free mean
    assert float(by[(0.0, "mrc")]["slowdown"]) == pytest.approx(1.0)
    assert float(by[(1.0, "roce")]["slowdown"]) == pytest.approx(
        float(by[(1.0, "roce")]["time_mean_ms"]) / float(by[(0.0, "roce")]["time_mean_ms"]))
    # 1% loss on every host link: RoCE resends (go-back-N), so its retransmissions grow
    assert int(by[(1.0, "roce")]["retransmissions"]) > int(by[(0.0, "roce")]["retransmissions"])
    record = json.loads(next(out.glob("points/p001-r1/mrc/*/run.json")).read_text())
    assert record["status"] == "finished" and record["exit_code"] == 0
    assert record["scenario_resolved"]["faults"][0]["commands"][0]["percent"] == 1.0
    assert record["git"]["commit"] and record["machine"]["cpu_count"] >= 1
    assert metric_names.HEADERS["busbw_mbit"] in record["console"]     # the console's table
    # resume: with every run done nothing runs again; a missing marker runs that run only
    before = run_dirs(out)
    (out / "points" / "p000-r1" / "roce.json").unlink()
    rc, printed = run_sweep("random-loss", out)
    assert rc == 0, printed
    new = run_dirs(out) - before
    assert len(new) == 1 and next(iter(new)).parent == out / "points" / "p000-r1" / "roce"
    check_tables("random-loss", out)


def test_nic_links_down_sweep_short(tmp_path):
    rc, printed = run_sweep("nic-links-down", tmp_path / "sweep")
    assert rc == 0, printed
    rows = check_tables("nic-links-down", tmp_path / "sweep")
    assert sorted(float(r["x"]) for r in rows) == [0.0, 2.0]


def test_recovery_evs_sweep_short(tmp_path):
    rc, printed = run_sweep("recovery-evs", tmp_path / "sweep")
    assert rc == 0, printed
    rows = check_tables("recovery-evs", tmp_path / "sweep")
    assert sorted(int(r["mrc.qp.ev_count"]) for r in rows) == [8, 64]
    # the gray failure and its clearing both took effect at every point: two recovery entries
    assert all(r["faults_ok"] == "True" and "recovery_ms_f1" in r for r in rows)
