"""The results page from kept tables written by hand: each figure's claim, its conditions as the
runs recorded them, the verdict the intervals give, the figure and the table beside it; a sweep
without a kept table is listed as not run yet."""
import csv
import json

from analysis import paper_page

COLUMNS = ["point", "x", "faults[0].percent", "repeat", "transport", "verified", "fidelity",
           "time_mean_ms", "slowdown", "time_scale", "cpu_other_cores", "cores", "wall_s",
           "machine", "run_dir"]


def write_tables(tables, name="random-loss", roce=(200, 210, 220), fidelity="ok"):
    """mrc 100, 110, 120 ms and roce `roce` at x = 1, three repeats, 30 s a run, k = 8."""
    tables.mkdir(parents=True, exist_ok=True)
    rows = []
    for t, values in (("mrc", (100, 110, 120)), ("roce", roce)):
        for repeat, v in enumerate(values, 1):
            rows.append({"point": 0, "x": 1.0, "faults[0].percent": 1.0, "repeat": repeat,
                         "transport": t, "verified": True, "fidelity": fidelity,
                         "time_mean_ms": float(v), "slowdown": "", "time_scale": 8.0,
                         "cpu_other_cores": 0.1 if repeat == 1 else 0.4, "cores": 2,
                         "wall_s": 30.0, "machine": "vm", "run_dir": ""})
    with open(tables / f"{name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    meta = {"name": name, "description": "loss sweep", "source": "experiments/sweeps/x.toml",
            "short": False, "x_label": "loss (%)", "repeats": 3, "transports": ["mrc", "roce"],
            "series_keys": [],
            "claims": [{"claim": "MRC slows down less than RoCE.", "metric": "time_mean_ms",
                        "expect": "lower", "compare": "transports", "at": None,
                        "transports": None}]}
    (tables / f"{name}.json").write_text(json.dumps(meta))


def test_page_states_claim_conditions_verdict_figure_and_table(tmp_path):
    tables, page = tmp_path / "docs" / "results" / "paper", tmp_path / "docs" / "results" / "paper.md"
    write_tables(tables)
    text = paper_page.write_page(tables, page, ["random-loss", "incast-degree"]).read_text()
    assert "**Claim.** MRC slows down less than RoCE." in text
    # 6 runs x 30 s = 3 min; 'other' load: mean (2 x 0.1 + 4 x 0.4) / 6 = 0.30, at most 0.40
    assert ("time scale k = 8; 3 repeat(s) per point, 6 run(s), 6 with fidelity ok; wall time "
            "3 min; CPU load outside the run's roles ('other', kernel work included): mean 0.30, "
            "at most 0.40 of 2 cores; machine vm") in text
    assert "**Verdict: agrees.**" in text
    assert "| random-loss: time_mean_ms | MRC slows down less than RoCE. | agrees |" in text
    # mrc: mean 110, interval 110 -+ 24.84
    assert "| 1 | mrc | 3 | yes | 110 | [85.16, 134.8] |" in text
    assert "![random-loss: time_mean_ms](paper/random-loss-time_mean_ms.png)" in text
    assert (tables / "random-loss-time_mean_ms.png").stat().st_size > 5000
    assert "[paper/random-loss.csv](paper/random-loss.csv)" in text
    assert "| incast-degree | - | not run yet |" in text


def test_overlapping_intervals_read_cannot_be_told_apart(tmp_path):
    write_tables(tmp_path, roce=(130, 140, 150))
    text = paper_page.write_page(tmp_path, tmp_path / "paper.md", ["random-loss"]).read_text()
    assert "**Verdict: cannot be told apart.**" in text and "the intervals overlap" in text


def test_runs_without_fidelity_ok_do_not_agree(tmp_path):
    write_tables(tmp_path, fidelity="degraded")
    text = paper_page.write_page(tmp_path, tmp_path / "paper.md", ["random-loss"]).read_text()
    assert "**Verdict: cannot be told apart.**" in text and "0 with fidelity ok" in text


def test_kept_rows_come_back_typed(tmp_path):
    write_tables(tmp_path)
    row = paper_page.read_rows(tmp_path / "random-loss.csv")[0]
    assert row["point"] == 0 and row["x"] == 1.0 and row["verified"] is True
    assert row["slowdown"] is None and row["transport"] == "mrc" and row["cores"] == 2
    assert paper_page.read_table(tmp_path, "nothing") is None
