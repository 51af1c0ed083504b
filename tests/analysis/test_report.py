"""Figures, HTML report, `mrclab analyze` and the notebook on a synthetic run directory."""
from __future__ import annotations

import base64
import io
import re

import matplotlib.image as mpimg
import pytest

from analysis import cli, metric_names, metrics, plots
from tests.helpers.synth import make_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return make_run(tmp_path_factory.mktemp("run") / "demo-20260101", packets=120)


def _png_ok(data: bytes):
    img = mpimg.imread(io.BytesIO(data), format="png")
    assert img.shape[0] > 100 and img.shape[1] > 100
    assert img.std() > 0.01          # not a blank canvas


def test_analyze_writes_figures_and_self_contained_report(run_dir, capsys):
    assert cli.main([str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "mrc" in out and "roce" in out and "report:" in out
    figs = sorted((run_dir / "analysis" / "figures").glob("*.png"))
    names = {p.stem for p in figs}
    assert {"goodput", "ev_state_mrc", "ev_state_roce", "ev_state_tcp", "load", "recovery",
            "iterations", "topology"} <= names
    for p in figs:
        _png_ok(p.read_bytes())
    html = (run_dir / "analysis" / "report.html").read_text()
    embedded = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert len(embedded) == len(figs)
    assert {base64.b64decode(e) for e in embedded} == {p.read_bytes() for p in figs}
    assert "Transports side by side" in html and "link_down" in html
    assert "not JSON" in html                   # the corrupt log lines are reported
    assert "src=\"http" not in html


def test_topology_figure_marks_the_failed_link(run_dir):
    run = metrics.load_run(run_dir)
    td = run.transports["mrc"]
    down_only = td.faults[td.faults.action == "link_down"]
    fig = plots.topology_figure(td.topology, down_only)
    reds = [ln for ln in fig.axes[0].lines if ln.get_color() == "red"]
    assert len(reds) == 1 and reds[0].get_linewidth() >= 4
    assert len([t for t in fig.axes[0].texts if t.get_text().startswith("t0p0g0~t1p0s0\ndown 0.0 s")]) == 1
    fig2 = plots.topology_figure(td.topology, td.faults)          # restored by link_up
    assert not [ln for ln in fig2.axes[0].lines if ln.get_color() == "red"]


def test_analyze_latest_and_missing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MRCLAB_RESULTS_DIR", str(tmp_path / "results"))
    assert cli.main(["latest"]) == 2
    assert "no finished run directory" in capsys.readouterr().err
    assert cli.main([str(tmp_path / "nope")]) == 2


def test_notebook_executes_on_a_run(run_dir):
    import nbformat
    out = cli.run_notebook(run_dir, timeout_s=300)
    nb = nbformat.read(out, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code)
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors
    images = [o for c in code for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 5


def test_report_tables_read_as_prose_not_pandas(run_dir):
    """Human column names with units, no index-name rows, no JSON in cells, and no transport's
    packets called by another transport's name."""
    assert cli.main([str(run_dir)]) == 0
    html = (run_dir / "analysis" / "report.html").read_text()
    headers = re.findall(r"<th[^>]*>(.*?)</th>", html)
    assert headers and [h for h in headers if "_" in h] == []
    assert metric_names.LABELS["median_iteration_ms"] in headers
    assert metric_names.LABELS["goodput_sum_mbit"] in headers
    # pandas writes the index name as a row of its own with empty cells: none here
    assert not re.search(r"<tr>\s*<th>[^<]+</th>\s*(<th></th>\s*)+</tr>", html)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", html, re.S)
    assert [c for c in cells if c.lstrip().startswith(("{", "["))] == []
    kinds = dict(re.findall(r"<li>(\w+): Jain index[^<]*?\(\d+ ([\w/]+) packets captured\)</li>",
                            html))
    assert kinds["mrc"] == "MRC" and kinds["roce"] == "RoCEv2"


def test_human_names_give_units():
    from analysis.report import human_name, cell_text
    assert human_name("iter_median_ms") == "median iteration (ms)"
    assert human_name("some_new_rate_mbit") == "some new rate (Mbit/s)"
    assert human_name("hold_s") == "hold (s)"
    assert cell_text({"timeout": 3, "nack_trimmed": 1}) == \
        "retransmission timeout 3, trimmed-packet NACK 1"
