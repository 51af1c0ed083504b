"""A real short run whose schedule holds a clear the controller refuses (no gray loss was ever
applied) and a fault due long after the traffic ends: `mrclab run` exits 3 and names both faults
and why in the terminal table and in every summary.json; summary.json, the terminal table and
report.html give the same recovery numbers for the faults that did take effect."""
import json
import os
import re

import pytest

from analysis import cli
from emulation.run import runner
from tests.helpers.scenario_texts import RUN_VERDICTS as SCENARIO
from tests.integration.fidelity_guard import judged_by_fidelity

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(os.geteuid() != 0, reason="builds a Mininet fabric: needs root")]


def test_faults_that_never_took_effect_fail_the_run_and_every_view_agrees(tmp_path, capsys,
                                                                           monkeypatch):
    """Entry 2 is a clear the controller refuses at run time, entry 3 a fault due long after
    the traffic. Validation refuses both (a clear with no fault before it, a time past the
    traffic at line rate), so the test lets them through those two checks: what is under test
    is how the runner and every view report a refusal that reaches the controller (a state the
    file cannot foresee, e.g. a fault cleared by hand from another shell) and a fault the
    traffic never reached."""
    from emulation.config import scenario_faults
    monkeypatch.setattr(scenario_faults, "_check_clears", lambda *args: None)
    monkeypatch.setattr(scenario_faults, "_check_fit", lambda *args: None)
    scenario = tmp_path / "verdicts.toml"
    scenario.write_text(SCENARIO)
    rc = runner.main([str(scenario), "--out-dir", str(tmp_path / "results")])
    out = capsys.readouterr()
    (run_dir,) = (tmp_path / "results").iterdir()
    per = json.loads((run_dir / "tcp" / "summary.json").read_text())
    top = json.loads((run_dir / "summary.json").read_text())

    # the two faults that never took effect are this test's own doing (`expected`); an
    # iteration past the collective's time-out on a starved machine is the machine's
    with judged_by_fidelity(per, expected=("faults_ok",)):
        assert per["verified"] is True, per["problems"]      # the data is fine ...
        assert rc == runner.EXIT_FAULT_NOT_EFFECTIVE == 3    # ... the schedule was not run
    assert "a scheduled fault did not take effect" in out.err
    assert per["faults_ok"] is False and top["faults_ok"] is False and top["exit_code"] == 3
    assert per["faults_scheduled"] == 4 and per["faults_applied"] == 2
    (failed,) = per["faults_failed"]
    assert failed["entry"] == 2 and "no gray_loss active" in failed["reason"]
    (late,) = per["faults_not_reached"]
    assert late["entry"] == 3 and "traffic ended before it was due" in late["reason"]
    assert top["transports"]["tcp"]["faults_failed"] == per["faults_failed"]
    assert top["transports"]["tcp"]["faults_not_reached"] == per["faults_not_reached"]
    assert any("gray_loss_clear t0p1g0~t1p1s0 (at_iteration=20) did not take effect" in p
               for p in top["problems"])
    assert any("link_down t0p1g0~t1p1s1 (at_s=600) did not take effect" in p
               for p in top["problems"])

    lines = out.out.splitlines()
    header = next(line for line in lines if line.startswith("transport "))
    row = next(line for line in lines if line.startswith("tcp "))
    assert re.match(r"tcp\s+yes\s+(ok|degraded|invalid)\s+2/4 !", row)   # verified, fidelity, faults
    assert any(line.startswith("tcp: fault #2 gray_loss_clear") for line in lines)
    assert any(line.startswith("tcp: fault #3 link_down") for line in lines)

    # one set of recovery numbers: summary.json, the terminal table, report.html
    recovery = per["recovery_ms"]
    assert len(recovery) == 2 and top["transports"]["tcp"]["recovery_ms"] == recovery
    # a recovery a stall voided (summary.json recovery_void, parallel to recovery_ms) reads
    # "<ms> void" in the table
    voids = per.get("recovery_void") or [None] * len(recovery)
    expected = ", ".join(("never" if r is None else f"{r:.0f}") + (" void" if v else "")
                         for r, v in zip(recovery, voids))
    column = header.index("recovery ms")
    following = re.search(r"\S", header[column + len("recovery ms"):])
    end = column + len("recovery ms") + following.start() if following else None
    assert row[column:end].strip() == expected
    html = cli.analyze(run_dir)["report"].read_text()
    opening = html[html.index("<h2>Verdict</h2>"):html.index("<h2>Figures</h2>")]
    cells = re.findall(r"<td>(?:<span[^>]*>)?(never|\d+ ms)(?: void</span>)?<br>", opening)
    assert cells == ["never" if r is None else f"{r:.0f} ms" for r in recovery]
    assert "gray_loss_clear t0p1g0~t1p1s0 (at_iteration=20) did not take effect" in opening
    assert 'href="../summary.json"' in html
