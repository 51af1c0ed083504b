"""`mrclab notebook`: the walk-through notebook executes on a run, takes its run from a
papermill-style `parameters` cell, and is also written as HTML for readers without Jupyter."""
from __future__ import annotations

import re

import nbformat
import pytest

from analysis import cli
from tests.helpers.synth import make_run
from tests.helpers.paths import REPO


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    run_dir = make_run(tmp_path_factory.mktemp("nb") / "demo-20260101", packets=120)
    out = cli.run_notebook(run_dir, timeout_s=300)
    return run_dir, out


def test_parameters_cell_is_tagged_and_injected_after_it(executed):
    run_dir, out = executed
    source = nbformat.read(cli.NOTEBOOK, as_version=4)
    tagged = [c for c in source.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and "RUN =" in tagged[0].source
    nb = nbformat.read(out, as_version=4)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    i = next(i for i, t in enumerate(tags) if "parameters" in t)
    assert "injected-parameters" in tags[i + 1] and str(run_dir) in nb.cells[i + 1].source
    # the run the notebook loaded is the injected one, not "latest"
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert f"run {run_dir}" in printed


def test_walks_through_each_transport_and_writes_html(executed):
    run_dir, out = executed
    nb = nbformat.read(out, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code)
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    headings = [c.source.splitlines()[0] for c in nb.cells if c.cell_type == "markdown"]
    for name in ("### MRC", "### RoCE", "### TCP"):
        assert any(h.startswith(name) for h in headings), headings
    # prose, not one-line headings: every section says what to look for
    assert sum("What to look for" in c.source for c in nb.cells if c.cell_type == "markdown") >= 4
    html = out.with_suffix(".html")
    assert out.parent == run_dir / "analysis"
    text = html.read_text(encoding="utf-8")
    assert "What to look for" in text
    images = len(re.findall(r"data:image/png;base64,", text))
    pngs = sum("image/png" in o.get("data", {}) for c in code for o in c.outputs)
    assert images >= pngs >= 5          # every figure is embedded in the HTML


def test_says_whether_each_transport_was_cpu_bound(executed):
    """The synthetic run's mrc summary has the runner's CPU figures (97% busy): the notebook
    shows them per transport, and only for the transports that have them."""
    _, out = executed
    nb = nbformat.read(out, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "busy_fraction" in c.source)
    text = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
    assert "busy %" in text and "97" in text and "1.15" in text
    assert "tcp" not in text


@pytest.fixture(scope="module")
def executed_with_parameter(tmp_path_factory):
    """`mrclab notebook RUN -p BIN_MS 20` as a user types it: (run, stderr of the whole run)."""
    import subprocess
    import sys
    run_dir = make_run(tmp_path_factory.mktemp("nbp") / "demo-20260102", packets=120)
    res = subprocess.run([sys.executable, "-m", "emulation.cli", "notebook", str(run_dir),
                          "-p", "BIN_MS", "20"], cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr
    return run_dir, res.stderr


def test_p_sets_a_parameter_papermill_style(executed_with_parameter):
    run_dir, _ = executed_with_parameter
    nb = nbformat.read(run_dir / "analysis" / "mrc_run.ipynb", as_version=4)
    injected = next(c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert "BIN_MS = 20\n" in injected.source + "\n" and f"RUN = {str(run_dir)!r}" in injected.source


def test_kernel_runs_without_the_unencrypted_tcp_warning(executed_with_parameter):
    _, stderr = executed_with_parameter
    assert "without encryption" not in stderr and "Parent appears to have exited" not in stderr


def test_unknown_parameter_is_exit_2_naming_the_known_ones(capsys, executed):
    from tests.helpers.cli import run_mrclab
    run_dir, _ = executed
    rc, _, err = run_mrclab(capsys, "notebook", str(run_dir), "-p", "BINS", "3")
    assert rc == 2 and "-p BINS: not a parameter of the notebook" in err and "BIN_MS" in err


def _html_rows(output) -> int:
    return len(re.findall(r"<tr", output.get("data", {}).get("text/html", ""))) - 1


def test_tables_are_short_and_the_notebook_ends_with_a_conclusion(executed):
    _, out = executed
    nb = nbformat.read(out, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    tables = [o for c in code for o in c.outputs if "text/html" in o.get("data", {})
              and "<table" in o["data"]["text/html"]]
    assert tables and max(_html_rows(t) for t in tables) <= 20
    text = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                   for c in code for o in c.outputs)
    assert "start_ns=" not in text and "describe" not in text
    # no snake_case column names in the tables
    headers = [h for t in tables for h in re.findall(r"<th>([^<]*)</th>", t["data"]["text/html"])]
    assert [h for h in headers if re.fullmatch(r"[a-z]+(_[a-z0-9]+)+", h)] == []
    last = nb.cells[-1]
    assert last.cell_type == "code" and "conclusion" in last.source
    words = last.outputs[0]["data"]["text/markdown"]
    for name in ("mrc", "roce", "tcp"):
        assert f"**{name}**:" in words
    assert "iterations" in words and "data verified" in words


def test_opens_with_the_fidelity_verdict(executed):
    """The loading cell titles the run with its scenario, time scale and verdicts
    (plots_common.heading, as every figure), then shows the fidelity paragraph
    (analysis/fidelity.py) before anything else; the synthetic run has no fidelity verdict, and
    the notebook says so. The page's title names the run, never "Notebook"."""
    run_dir, out = executed
    nb = nbformat.read(out, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code" and "load_run" in c.source)
    shown = [o.get("data", {}).get("text/markdown", "") for o in first.outputs]
    assert shown[0].startswith("## scenario ") and "time scale k = 1" in shown[0]
    assert "fidelity: mrc not assessed" in shown[0]
    assert shown[1].startswith("**Fidelity: not assessed")
    page = out.with_suffix(".html").read_text()
    title = re.search(r"<title>(.*?)</title>", page, re.S).group(1).strip()
    assert title.startswith("MRC lab: ") and run_dir.name in title
