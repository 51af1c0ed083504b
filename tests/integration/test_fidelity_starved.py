"""A CPU-starved run is called so: the demo's short version over MRC at full rate while busy
processes (started and stopped here, by PID) hold both cores. The fidelity monitor must say
"degraded" or "invalid" from invariants it could measure on this run (lateness from the
endpoints' logs, delays and pacing from the captures, the OVS log), the run's table and top
summary.json must carry the verdict, and --require-fidelity must fail the run. ~1-2 minutes."""
import json
import os

import pytest

from analysis import fidelity as F
from analysis import fidelity_verdict as FV
from emulation.run import runner
from emulation.benches.fidelity import start_busy, stop_busy
from tests.helpers.paths import REPO

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(os.geteuid() != 0, reason="builds a Mininet fabric: needs root")]

DEMO = REPO / "experiments" / "demo.toml"


def test_a_cpu_starved_run_is_not_ok(tmp_path, capsys):
    busy = start_busy(2 * (os.cpu_count() or 1))
    try:
        rc = runner.main([str(DEMO), "--short", "--transport", "mrc", "--out-dir", str(tmp_path),
                          "--require-fidelity"])
    finally:
        stop_busy(busy)
    [run_dir] = list(tmp_path.iterdir())
    mrc = json.loads((run_dir / "mrc" / "summary.json").read_text())
    fid = mrc["fidelity"]
    assert fid["verdict"] in (F.DEGRADED, FV.INVALID), fid
    measured = set(fid["margins"])
    assert {F.TIMER_LATENESS, F.RECEIVE_LATENESS, F.HELD_BEYOND_QUEUE, F.OVS_STALLS} <= measured, \
        fid["unmeasured"]
    broken = {v["invariant"] for v in fid["violations"]}
    assert broken and broken <= set(FV.INVARIANTS)
    assert all(v["ratio"] > 1 and v["measured"] > v["bound"] for v in fid["violations"])
    top = json.loads((run_dir / "summary.json").read_text())
    assert top["transports"]["mrc"]["fidelity"]["verdict"] == fid["verdict"]
    assert top["fidelity_ok"] is False
    assert rc == (runner.EXIT_FIDELITY if mrc["verified"] and mrc.get("faults_ok", True)
                  else top["exit_code"]) and rc != runner.EXIT_OK
    table = capsys.readouterr().out
    assert "fidelity" in table.splitlines()[0] and fid["verdict"] in table
    said = " ".join(table.replace("\n    ", " ").split())     # the console wraps its statements
    assert "measure this machine's CPU" in said or "understate the fabric" in said
    # the endpoints logged their lateness histograms (the evidence behind two invariants)
    logged = (run_dir / "mrc" / "endpoint-h0.jsonl").read_text()
    assert '"event":"lateness"' in logged
