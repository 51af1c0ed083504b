"""`mrclab notebook`: the walk-through notebook executes on a run, takes its run from a
papermill-style `parameters` cell, and is also written as HTML for readers without Jupyter."""
from __future__ import annotations

import re

import nbformat
import pytest

from analysis import cli
from tests.unit.test_analysis_synth import make_run


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


def test_opens_with_the_fidelity_verdict(executed):
    """The loading cell shows the fidelity paragraph (analysis/fidelity.py) before anything
    else; the synthetic run has no fidelity verdict, and the notebook says so."""
    _, out = executed
    nb = nbformat.read(out, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code" and "load_run" in c.source)
    shown = [o.get("data", {}).get("text/markdown", "") for o in first.outputs]
    assert shown[0].startswith("**Fidelity: not assessed")
