"""`mrclab sweep`'s tables from rows built by hand (the CSV and the Parquet file hold the same
rows, one type per column; curves.csv the means), and its refusals before anything runs."""
import csv
import json

import pyarrow.parquet as pq
import pytest

from emulation.run import sweep as S
from emulation.config import sweep_plan
from tests.helpers.paths import REPO

SWEEP = REPO / "experiments" / "sweeps" / "random-loss.toml"


def rows():
    out = []
    for point, x in ((0, 0.0), (1, 1.0)):
        for repeat, t in ((1, 100.0), (2, 120.0)):
            out.append({"point": point, "x": x, "faults[0].percent": [0, 1][point],
                        "repeat": repeat,
                        "transport": "mrc", "verified": True, "fidelity": "ok",
                        "time_mean_ms": t * (1 + point), "busbw_GBps": 0.01,
                        "retransmissions": 3, "run_dir": None})
    out[3]["recovery_ms_f0"] = 250.0            # a column only one row has
    return out


def test_csv_parquet_and_curves(tmp_path):
    plan = sweep_plan.load(SWEEP, short=True)
    written = S.write_tables(plan, rows(), tmp_path)
    with open(tmp_path / "sweep.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 4 and table[3]["recovery_ms_f0"] == "250.0"
    parquet = pq.read_table(tmp_path / "sweep.parquet").to_pylist()
    # 0 and 1 beside each other stay integers; percent values are floats where any is
    assert [r["time_mean_ms"] for r in parquet] == [100.0, 120.0, 200.0, 240.0]
    assert [r["recovery_ms_f0"] for r in parquet] == [None, None, None, 250.0]
    # slowdown against the loss-free mean (110 ms): 200 / 110 and 240 / 110
    assert parquet[3]["slowdown"] == pytest.approx(240 / 110)
    with open(tmp_path / "curves.csv", newline="") as f:
        curves = list(csv.DictReader(f))
    assert [float(c["time_mean_ms"]) for c in curves] == [110.0, 220.0]
    assert "time_mean_ms" in written["figures"]


def test_mixed_kinds_in_a_column_become_text():
    out = S._uniform([{"a": 1}, {"a": 2.5}, {"a": "x"}, {"a": None}], ["a"])
    assert [r["a"] for r in out] == ["1", "2.5", "x", None]
    out = S._uniform([{"a": 1}, {"a": 2.5}], ["a"])
    assert [r["a"] for r in out] == [1.0, 2.5]


def test_a_bad_sweep_file_exits_2_naming_it(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('scenario = "nowhere.toml"\n[grid]\n"fabric.planes" = [2]\n')
    assert S.main([str(bad), "--out-dir", str(tmp_path / "o")]) == 2
    assert "cannot read the base scenario" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_validate_only_checks_every_point_and_runs_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert S.main([str(SWEEP), "--validate-only"]) == 0
    # random-loss.toml: 5 points x 3 repeats x 3 transports
    assert "5 point(s) x 3 repeat(s) x 3 transport(s) (mrc, roce, tcp) = 45 run(s)" in \
        capsys.readouterr().out
    assert not (tmp_path / "results").exists()


def test_a_directory_of_another_sweep_is_refused(tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    (out / "sweep.toml").write_text("name = \"other\"\n")
    assert S.main([str(SWEEP), "--short", "--out-dir", str(out)]) == 2
    assert "holds another sweep" in capsys.readouterr().err
    assert (out / "sweep.toml").read_text() == "name = \"other\"\n"


def test_done_markers_are_not_run_again(tmp_path):
    """Every (point, repeat, transport) already marked done: run_sweep reads the markers and
    starts no run (no fabric needed)."""
    plan = sweep_plan.load(SWEEP, short=True)
    for p in plan.points:
        d = tmp_path / "points" / f"{p.label}-r1"
        d.mkdir(parents=True)
        for t in plan.transports:
            (d / f"{t}.json").write_text(json.dumps({"point": p.index, "transport": t}))
    done, interrupted = S.run_sweep(plan, tmp_path, log=lambda *a, **k: pytest.fail("ran"))
    assert not interrupted
    assert [(r["point"], r["transport"]) for r in done] == [
        (p.index, t) for p in plan.points for t in plan.transports]


def test_progress_json_and_callbacks_follow_each_run(tmp_path, monkeypatch):
    """Before each run progress.json names it (what `mrclab top` shows); the progress object
    hears of its start and its row; at the end the status is finished."""
    plan = sweep_plan.load(SWEEP, short=True)
    seen = []

    def run_point(sweep, point, repeat, transport, pdir):
        state = json.loads((tmp_path / "progress.json").read_text())
        seen.append(("run", state["run"], state["total"], state["point"], state["transport"],
                     state["status"]))
        return {"point": point.index, "transport": transport, "verified": True}

    class Progress:
        def start(self, n, total, point, repeat, transport):
            seen.append(("start", n, point.label, transport))

        def done(self, row):
            seen.append(("done", row["transport"]))
    monkeypatch.setattr(S, "run_point", run_point)
    rows, interrupted = S.run_sweep(plan, tmp_path, log=lambda *a, **k: None,
                                    progress=Progress())
    # random-loss short: 2 points x (mrc, roce) = 4 runs, each seen as start, run, done
    assert seen[:3] == [("start", 1, "p000", "mrc"), ("run", 1, 4, "p000", "mrc", "running"),
                        ("done", "mrc")]
    assert len(seen) == 12 and not interrupted
    final = json.loads((tmp_path / "progress.json").read_text())
    assert (final["status"], final["done"], final["total"]) == ("finished", 4, 4)


def test_tables_replace_links_planted_at_their_names_never_follow_them(tmp_path):
    """A sweep directory is written like a run directory (analysis/safe_write.py): a link at
    sweep.csv, sweep.parquet, curves.csv or a figure is replaced, its target untouched."""
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    out = tmp_path / "o"
    (out / "figures").mkdir(parents=True)
    names = ["sweep.csv", "sweep.parquet", "curves.csv", "figures/time_mean_ms.png"]
    for name in names:
        (out / name).symlink_to(victim)
    S.write_tables(sweep_plan.load(SWEEP, short=True), rows(), out)
    assert victim.read_text() == "keep me"
    assert not any((out / name).is_symlink() for name in names)


def test_a_linked_figures_directory_or_scenario_copy_is_refused(tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "o"
    out.mkdir()
    (out / "figures").symlink_to(elsewhere)
    with pytest.raises(OSError, match="is a link"):
        S.write_tables(sweep_plan.load(SWEEP, short=True), rows(), out)
    assert list(elsewhere.iterdir()) == []
    # the sweep file's copy: a link to /dev/zero is refused at once (not read forever)
    out2 = tmp_path / "o2"
    out2.mkdir()
    (out2 / "sweep.toml").symlink_to("/dev/zero")
    assert S.main([str(SWEEP), "--short", "--out-dir", str(out2)]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_point_directory_linked_elsewhere_is_refused_before_any_run(tmp_path):
    plan = sweep_plan.load(SWEEP, short=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "o" / "points").mkdir(parents=True)
    (tmp_path / "o" / "points" / f"{plan.points[0].label}-r1").symlink_to(elsewhere)
    with pytest.raises(OSError, match="is a link"):
        S.run_sweep(plan, tmp_path / "o", log=lambda *a, **k: pytest.fail("ran"))
    assert list(elsewhere.iterdir()) == []
