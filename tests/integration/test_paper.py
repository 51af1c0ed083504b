"""`mrclab paper --short --only nic-links-down` end to end on the real fabric (its cheapest
sweep: two MRC runs on 8 switches): the sweep runs, its tidy table is kept with what the page
needs, and the page is written from the kept tables with the claim, the conditions the runs
recorded and a verdict; a second call resumes with nothing to run."""
import contextlib
import csv
import io

import pytest

from emulation import cli

pytestmark = pytest.mark.integration


def paper(tmp_path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["paper", "--short", "--only", "nic-links-down", "--results-dir",
            str(tmp_path / "runs"), "--tables-dir", str(tmp_path / "tables"), "--page",
            str(tmp_path / "paper.md")]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_paper_short_one_sweep_end_to_end(tmp_path):
    rc, out, err = paper(tmp_path)
    assert rc == 0, out + err
    assert "run 1 of 2 (nic-links-down p000 repeat 1 mrc)" in err
    assert "run 2 of 2 (nic-links-down p001 repeat 1 mrc); 1 to go, about" in err
    with open(tmp_path / "tables" / "nic-links-down.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted(float(r["x"]) for r in rows) == [0.0, 2.0]
    for r in rows:
        assert r["verified"] == "True" and float(r["time_mean_ms"]) > 0
        # the conditions every run records: its time scale (the short version's 1), wall time
        assert float(r["time_scale"]) == 1.0 and float(r["wall_s"]) > 0
        assert r["cpu_other_cores"] != "" and r["machine"]
    page = (tmp_path / "paper.md").read_text()
    assert "**Claim.** With NIC-T0 links down MRC keeps the collective going" in page
    assert "short version, time scale k = 1; 1 repeat(s) per point, 2 run(s)" in page
    # one repeat, MRC alone: nothing the intervals could tell
    assert "**Verdict: cannot be told apart.**" in page
    assert (tmp_path / "tables" / "nic-links-down-time_mean_ms.png").stat().st_size > 5000
    # resumed: both runs are done, no fabric is built
    rc, out, err = paper(tmp_path)
    assert rc == 0 and "run 1 of 2" not in err
    assert len(list((tmp_path / "runs" / "nic-links-down").glob("points/*/mrc/*"))) == 2
