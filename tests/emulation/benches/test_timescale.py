"""`mrclab bench timescale` (emulation/benches/timescale.py) without a fabric: the settings it
compares, their alternating order, the median per setting, and that each calibration runs the
scenario with its setting (calibrate.calibrate replaced by a fake machine)."""
import argparse

import pytest

from emulation.benches import timescale as bench
from emulation.calibration import calibrate
from model.argtypes import UsageError
from tests.helpers.scenario_texts import SMALL_FABRIC


def test_settings_and_their_alternating_order():
    assert bench.settings_of("none,hifi") == ["none", "hifi"]
    assert bench.settings_of(" hifi , hifi ") == ["hifi"]
    with pytest.raises(UsageError, match="rt is not a setting; known: none, hifi"):
        bench.settings_of("none,rt")
    with pytest.raises(UsageError, match="nothing"):
        bench.settings_of(",")
    assert bench.calibration_order(["none", "hifi"], 3) == ["none", "hifi"] * 3


def test_compare_takes_the_median_of_each_setting():
    runs = {"none": [{"time_scale": 4.0, "margins": {"a": 1}, "trials": [1]},
                     {"time_scale": 6.0, "margins": {}, "trials": []},
                     {"time_scale": 5.0, "margins": {}, "trials": []}],
            "hifi": [{"time_scale": 2.0, "margins": {}, "trials": []}]}
    by = bench.compare(runs)
    assert by["none"]["time_scales"] == [4.0, 6.0, 5.0] and by["none"]["time_scale"] == 5.0
    assert by["hifi"]["time_scale"] == 2.0 and by["none"]["margins"][0] == {"a": 1}
    assert bench.comparison_line("demo", 100.0, by) == (
        'bench timescale: demo (100 Mbit/s links) keeps fidelity "ok" from time_scale '
        "none 5 (4, 6, 5); hifi 2 (scheduling: median k)")


def test_each_calibration_runs_with_its_setting(tmp_path, monkeypatch, capsys):
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\n' + SMALL_FABRIC)
    seen = []

    def fake(scn, transport, **kw):
        seen.append(scn.scheduling)
        return {"time_scale": {"none": 4.0, "hifi": 2.0}[scn.scheduling], "margins": {},
                "trials": []}

    monkeypatch.setattr(calibrate, "calibrate", fake)
    args = argparse.Namespace(scenario=str(path), scheduling="none,hifi", repeat=2, json=False)
    figures = bench.timescale_main(args)
    assert seen == ["none", "hifi", "none", "hifi"]
    assert {s: f["time_scale"] for s, f in figures["scheduling"].items()} == {"none": 4.0,
                                                                            "hifi": 2.0}
    assert "none 4 (4, 4); hifi 2 (2, 2)" in capsys.readouterr().out


def test_a_setting_that_keeps_no_k_ok_is_reported_and_the_bench_goes_on(tmp_path, monkeypatch,
                                                                       capsys):
    """hifi finds no k up to the ladder's top (64) twice of three: its median is "above 64";
    none's calibrations, taken before and after it, are all reported, and the failed ones keep
    their trials."""
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\n' + SMALL_FABRIC)
    hifi = iter([None, 20.0, None])

    def fake(scn, transport, **kw):
        if scn.scheduling == "none":
            return {"time_scale": 24.0, "margins": {}, "trials": []}
        k = next(hifi)
        if k is None:
            raise calibrate.CalibrationError("no time scale up to 32 kept fidelity \"ok\"",
                                             [{"time_scale": 32.0, "verdict": "degraded"}])
        return {"time_scale": k, "margins": {}, "trials": []}

    monkeypatch.setattr(calibrate, "calibrate", fake)
    args = argparse.Namespace(scenario=str(path), scheduling="none,hifi", repeat=3, json=False)
    figures = bench.timescale_main(args)["scheduling"]
    assert figures["none"]["time_scales"] == [24.0] * 3 and figures["none"]["time_scale"] == 24.0
    assert figures["hifi"]["time_scales"] == [None, 20.0, None]
    assert figures["hifi"]["time_scale"] is None
    assert figures["hifi"]["trials"][0] == [{"time_scale": 32.0, "verdict": "degraded"}]
    assert len(figures["hifi"]["errors"]) == 2
    assert "none 24 (24, 24, 24); hifi above 64 (above 64, 20, above 64)" in \
        capsys.readouterr().out
    assert bench.median_k([None, 20.0, 16.0]) == 20.0


def _spinning_children() -> list[int]:
    """PIDs of this process's children running the bench's busy loop (from /proc)."""
    import os
    from pathlib import Path
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and b"while True: pass" in cmdline:
            found.append(int(stat.parent.name))
    return found


def test_busy_processes_spin_through_every_calibration_and_its_cache_is_its_own(
        tmp_path, monkeypatch, capsys):
    """--busy 1: one spinning process during each calibration, stopped after the bench; the
    calibrations get a cache directory that is not the machine's and is gone afterwards."""
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\n' + SMALL_FABRIC)
    seen = []

    def fake(scn, transport, **kw):
        seen.append((len(_spinning_children()), kw.get("cache_dir")))
        return {"time_scale": 6.0, "margins": {}, "trials": []}

    monkeypatch.setattr(calibrate, "calibrate", fake)
    args = argparse.Namespace(scenario=str(path), scheduling="none", repeat=2, json=False,
                              busy=1)
    figures = bench.timescale_main(args)
    assert [n for n, _ in seen] == [1, 1]
    caches = {c for _, c in seen}
    assert len(caches) == 1 and None not in caches and calibrate.CACHE_DIR not in caches
    assert not next(iter(caches)).exists()
    assert _spinning_children() == []
    assert figures["busy_processes"] == 1 and figures["scheduling"]["none"]["time_scale"] == 6.0
    assert "(100 Mbit/s links, 1 busy process(es) beside it)" in capsys.readouterr().out


def test_without_busy_processes_the_machines_cache_is_used(tmp_path, monkeypatch):
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\n' + SMALL_FABRIC)
    seen = []

    def fake(scn, transport, **kw):
        seen.append((len(_spinning_children()), kw.get("cache_dir")))
        return {"time_scale": 4.0, "margins": {}, "trials": []}

    monkeypatch.setattr(calibrate, "calibrate", fake)
    args = argparse.Namespace(scenario=str(path), scheduling="none", repeat=1, json=False)
    assert bench.timescale_main(args)["busy_processes"] == 0
    assert seen == [(0, None)]
