"""`mrclab top` on a sweep: the header names the sweep, the run under way (point, values,
repeat, transport) and the runs left, from progress.json files written by hand; a directory of
sweeps (`mrclab paper`'s) follows the one running. The screen of one run is
tests/emulation/run/test_live_state.py's."""
import argparse
import json

from emulation.run import top


def progress(sweep_dir, **fields):
    sweep_dir.mkdir(parents=True, exist_ok=True)
    record = {"sweep": sweep_dir.name, "status": "running", "run": 4, "total": 10, "done": 3,
              "point": "p001", "values": "fabric.planes = 4", "repeat": 2, "transport": "roce",
              "run_parent": str(sweep_dir / "points" / "p001-r2" / "roce"), **fields}
    (sweep_dir / "progress.json").write_text(json.dumps(record))


def once():
    return argparse.Namespace(once=True, interval=1.0, api_port=top.DEFAULT_API_PORT,
                              run="latest")


def test_header_names_the_run_under_way_and_the_runs_left():
    record = {"sweep": "s", "status": "running", "run": 4, "total": 10, "done": 3,
              "point": "p001", "values": "x = 1", "repeat": 2, "transport": "roce"}
    # run 4 of 10 is under way: 6 after it
    assert top.sweep_header(record) == ("sweep s: run 4 of 10, 6 left after it; point p001 "
                                        "(x = 1), repeat 2, roce")
    assert top.sweep_header({"sweep": "s", "status": "finished", "total": 10, "done": 10}) == \
        "sweep s: finished, 10 of 10 runs done"


def test_a_directory_of_sweeps_follows_the_running_one(tmp_path, capsys):
    progress(tmp_path / "random-loss", status="finished", done=45, total=45)
    progress(tmp_path / "incast-degree")
    assert top.running_sweep(top.sweep_dirs(tmp_path))[0] == tmp_path / "incast-degree"
    assert top.follow_sweeps(tmp_path, once()) == 0
    out = capsys.readouterr().out
    assert out.startswith("sweep incast-degree: run 4 of 10, 6 left after it; point p001")
    assert "(the run is starting)" in out


def test_no_sweep_running_prints_where_each_stands(tmp_path, capsys):
    progress(tmp_path / "a", status="finished", done=2, total=2)
    progress(tmp_path / "b", status="interrupted", done=1, total=4)
    assert top.follow_sweeps(tmp_path, once()) == 0
    assert capsys.readouterr().out.splitlines() == [
        "sweep a: finished, 2 of 2 runs done", "sweep b: interrupted, 1 of 4 runs done"]


def test_the_run_under_way_is_the_newest_run_directory(tmp_path):
    progress(tmp_path / "s")
    parent = tmp_path / "s" / "points" / "p001-r2" / "roce"
    assert top.current_run(top.read_progress(tmp_path / "s")) is None
    (parent / "run-a").mkdir(parents=True)
    assert top.current_run(top.read_progress(tmp_path / "s")) == parent / "run-a"
    assert top.read_progress(tmp_path / "nothing") is None
