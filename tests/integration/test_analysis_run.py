"""A short real scenario (runner + fabric), then `mrclab analyze` and the notebook on its run dir."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from analysis import cli, metrics
from tests.helpers.scenario_texts import ANALYSIS_RUN as SCENARIO
from tests.integration.fidelity_guard import judged_by_fidelity


def _transports():
    names = ["tcp"]
    if importlib.util.find_spec("traffic.workload.mrc_comm") is not None:
        names.insert(0, "mrc")
    return names


@pytest.mark.integration
def test_analyze_and_notebook_on_a_real_run(tmp_path):
    from emulation.run import runner
    names = _transports()
    scn = tmp_path / "analysis-it.toml"
    scn.write_text(SCENARIO.replace("{names}", ", ".join(f'"{n}"' for n in names)))
    rc = runner.main([str(scn), "--transport", "all", "--out-dir", str(tmp_path / "results")])
    runs = list((tmp_path / "results").iterdir())
    assert len(runs) == 1
    run_dir = runs[0]
    # on a starved machine an iteration can outlast the collective's time-out: the run fails
    # through no bug of the code
    with judged_by_fidelity(*(run_dir / name for name in names)):
        assert rc == 0, "the runner failed: see the run directory's summaries"
    run = metrics.load_run(run_dir)
    assert set(run.transports) == set(names)
    for name, td in run.transports.items():
        it = metrics.iteration_times(td.events)
        assert len(it) > 0, f"{name}: no iteration events loaded"
        assert list(td.faults["action"]) == ["link_down", "link_up"]
    if "mrc" in run.transports:
        pk = run.transports["mrc"].packets
        assert len(pk) > 0 and pk["opname"].isin(metrics.DATA_OPNAMES).any()
        assert pk.attrs["clock"] in ("monotonic", "estimated_at_analysis")
        ev = run.transports["mrc"].events
        # captures and endpoint logs share one clock: packets fall inside the logged span
        assert ev["t_ns"].min() - 5e9 < pk["time_ns"].median() < ev["t_ns"].max() + 5e9
    assert cli.main([str(run_dir)]) == 0
    html = (run_dir / "analysis" / "report.html").read_text()
    figs = list((run_dir / "analysis" / "figures").glob("*.png"))
    assert len(figs) >= 6
    assert len(re.findall(r"data:image/png;base64,", html)) == len(figs)
    out = cli.run_notebook(run_dir)
    assert Path(out).stat().st_size > 10_000
