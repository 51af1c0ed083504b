"""`mrclab run` of a `time_scale = "auto"` scenario (emulation/run/runner.py main): each transport
is calibrated on its own before any runs, runs at its own k, and the run's records say which.
run_transport is replaced by a machine whose threshold per transport is known (the fabric runs
are the integration tests'); the calibration's search and cache are the real ones."""
from __future__ import annotations

import json

from emulation.calibration import calibrate
from emulation.run import runner
from tests.helpers.scenario_texts import SMALL_FABRIC

AUTO = ('name = "auto"\n' + SMALL_FABRIC.replace("time_scale = 1\n", "")
        + '[transport]\nnames = ["mrc", "tcp"]\n'
        + "[collective]\nmessage_bytes = 4096\niterations = 4\n")
# the smallest k at which each transport's run keeps fidelity "ok" on this pretend machine
THRESHOLD = {"mrc": 8.0, "tcp": 1.0}


def test_each_transport_runs_at_the_k_calibrated_for_it(tmp_path, monkeypatch, capsys):
    ran = []

    def run_transport(scn, transport, tdir):
        ran.append((transport, float(scn.time_scale)))
        verdict = "ok" if scn.time_scale >= THRESHOLD[transport] else "invalid"
        return {"transport": transport, "verified": True, "faults_ok": True,
                "time_scale": float(scn.time_scale), "recovery_ms": [],
                "fidelity": {"verdict": verdict, "violations": [], "margins": {}}}

    monkeypatch.setattr(runner, "run_transport", run_transport)
    monkeypatch.setattr(calibrate, "CACHE_DIR", tmp_path / "cache")
    monkeypatch.setenv("MRCLAB_RESULTS_DIR", str(tmp_path / "results"))
    path = tmp_path / "auto.toml"
    path.write_text(AUTO)
    assert runner.main([str(path), "--out-dir", str(tmp_path / "results")]) == 0
    # mrc: 1, 2, 4 fail, 8 passes, 6 and 7 fail, 8 again; tcp: 1 passes and again
    trials = ran[:-2]
    assert [k for t, k in trials if t == "mrc"] == [1.0, 2.0, 4.0, 8.0, 6.0, 7.0, 8.0]
    assert [k for t, k in trials if t == "tcp"] == [1.0, 1.0]
    assert ran[-2:] == [("mrc", 8.0), ("tcp", 1.0)]          # the full runs, one k each
    run_dir, = (tmp_path / "results").glob("auto-*")
    assert json.loads((run_dir / "run.json").read_text())["time_scales"] == {"mrc": 8.0,
                                                                           "tcp": 1.0}
    top = json.loads((run_dir / "summary.json").read_text())
    assert {t: v["time_scale"] for t, v in top["transports"].items()} == {"mrc": 8.0, "tcp": 1.0}
    err = capsys.readouterr().err
    assert "mrc: time_scale auto = 8" in err and "tcp: time_scale auto = 1" in err
    # the second run reads both answers from the cache and calibrates nothing
    ran.clear()
    assert runner.main([str(path), "--out-dir", str(tmp_path / "results")]) == 0
    assert ran == [("mrc", 8.0), ("tcp", 1.0)]


def test_a_declared_k_is_every_transports_and_run_json_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "run_transport", lambda scn, transport, tdir: {
        "transport": transport, "verified": True, "faults_ok": True,
        "time_scale": float(scn.time_scale), "recovery_ms": [],
        "fidelity": {"verdict": "ok", "violations": [], "margins": {}}})
    path = tmp_path / "pinned.toml"
    path.write_text(AUTO.replace("[fabric]\n", "[fabric]\ntime_scale = 3\n"))
    assert runner.main([str(path), "--out-dir", str(tmp_path)]) == 0
    run_dir, = tmp_path.glob("auto-*")
    record = json.loads((run_dir / "run.json").read_text())
    assert (record["time_scale"], record["time_scales"]) == (3, {"mrc": 3.0, "tcp": 3.0})
