"""`mrclab paper` without a fabric: each run replaced by a row built by hand, so that what the
command adds to `mrclab sweep` is checked: the progress line with the time left, the kept
tables, the page, resuming, --only and --page-only."""
import json

import pytest

from emulation.run import paper
from emulation.run import sweep as sweep_run


def fake_runs(monkeypatch, wall_s=60.0):
    """Replace every fabric run by a verified row; returns the list of runs made."""
    made = []

    def run_point(sweep, point, repeat, transport, pdir):
        made.append((point.label, repeat, transport))
        return {**sweep_run._param_columns(sweep, point), "repeat": repeat,
                "transport": transport, "verified": True, "fidelity": "ok",
                "time_mean_ms": 100.0 + point.index, "busbw_GBps": 0.01,
                "time_scale": 4.0, "wall_s": wall_s, "cpu_other_cores": 0.05, "cores": 2}
    monkeypatch.setattr(sweep_run, "run_point", run_point)
    return made


def argv(tmp_path, *extra):
    return ["--results-dir", str(tmp_path / "runs"), "--tables-dir", str(tmp_path / "tables"),
            "--page", str(tmp_path / "paper.md"), *extra]


def test_short_only_one_sweep_keeps_its_table_and_writes_the_page(tmp_path, monkeypatch,
                                                                      capsys):
    made = fake_runs(monkeypatch)
    assert paper.main(argv(tmp_path, "--short", "--only", "nic-links-down")) == 0
    # nic-links-down's short version: 0 and 2 links down, mrc, one repeat
    assert made == [("p000", 1, "mrc"), ("p001", 1, "mrc")]
    err = capsys.readouterr().err
    assert ("run 1 of 2 (nic-links-down p000 repeat 1 mrc); 2 to go, time left known after the "
            "first run") in err
    assert "run 2 of 2 (nic-links-down p001 repeat 1 mrc); 1 to go, about 1 min left" in err
    meta = json.loads((tmp_path / "tables" / "nic-links-down.json").read_text())
    assert meta["short"] and meta["transports"] == ["mrc"] and meta["claims"]
    assert (tmp_path / "tables" / "nic-links-down.csv").read_text().count("\n") == 3
    page = (tmp_path / "paper.md").read_text()
    assert "## nic-links-down" in page and "short version, time scale k = 4" in page
    # a claim comparing transports, only MRC run: the page cannot tell
    assert "only mrc ran" in page and "**Verdict: cannot be told apart.**" in page
    # every other shipped sweep is listed, not run
    assert "| random-loss | - | not run yet |" in page
    # again: every run is done, nothing runs, the page is written again
    made.clear()
    assert paper.main(argv(tmp_path, "--short", "--only", "nic-links-down")) == 0
    assert made == []


def test_progress_counts_the_runs_left_and_their_time():
    progress = paper.Progress(total=10, done=4, walls=[60.0, 120.0], log=None)
    progress.sweep = "s"
    # 6 runs left at a mean of 90 s: 9 min; under a minute in seconds
    assert progress.line("p003", 2, "roce") == (
        "mrclab paper: run 5 of 10 (s p003 repeat 2 roce); 6 to go, about 9 min left "
        "(2 min a run, mean of 2)")
    progress.done_one(3600.0)
    # 5 left at (60 + 120 + 3600) / 3 = 1260 s: 6300 s = 1 h 45 min
    assert "5 to go, about 1 h 45 min left" in progress.line("p004", 1, "mrc")


def test_an_unknown_sweep_is_refused_naming_the_shipped_ones(tmp_path, capsys):
    assert paper.main(argv(tmp_path, "--only", "nope")) == 2
    err = capsys.readouterr().err
    assert "no shipped sweep 'nope'" in err and "random-loss" in err
    assert not (tmp_path / "paper.md").exists()


def test_page_only_runs_nothing(tmp_path, monkeypatch):
    made = fake_runs(monkeypatch)
    assert paper.main(argv(tmp_path, "--page-only")) == 0
    assert made == [] and not (tmp_path / "runs").exists()
    assert "| scale-hosts | - | not run yet |" in (tmp_path / "paper.md").read_text()


def test_an_interrupted_sweep_keeps_no_table_and_exits_130(tmp_path, monkeypatch):
    fake_runs(monkeypatch)
    calls = []

    def interrupted(*args):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return {**sweep_run._param_columns(args[0], args[1]), "repeat": args[2],
                "transport": args[3], "verified": True, "fidelity": "ok"}
    monkeypatch.setattr(sweep_run, "run_point", interrupted)
    assert paper.main(argv(tmp_path, "--short", "--only", "nic-links-down")) == 130
    assert not (tmp_path / "tables" / "nic-links-down.csv").exists()
    progress = json.loads((tmp_path / "runs" / "nic-links-down" / "progress.json").read_text())
    assert progress["status"] == "interrupted" and progress["done"] == 1
    assert "| nic-links-down | - | not run yet |" in (tmp_path / "paper.md").read_text()


@pytest.mark.parametrize("short", [False, True])
def test_default_places_keep_the_short_version_away_from_docs(short):
    args = paper.argparse.Namespace(short=short, results_dir=None, tables_dir=None, page=None)
    results, tables, page = paper._paths(args)
    if short:
        assert str(page) == "results/paper-short/paper.md" and "docs" not in str(tables)
    else:
        assert (str(results), str(tables), str(page)) == (
            "results/paper", "docs/results/paper", "docs/results/paper.md")


def test_short_runs_read_in_seconds():
    progress = paper.Progress(total=3, done=1, walls=[20.0], log=None)
    assert progress.line("p001", 1, "mrc").endswith("about 40 s left (20 s a run, mean of 1)")
