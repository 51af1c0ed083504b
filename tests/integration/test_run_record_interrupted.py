"""run.json of a real run interrupted with Ctrl-C (SIGINT to `mrclab run` once its workers are
iterating): written at the start, it is completed with status "interrupted", exit code 130 and
the end time, and the run directory still has its summary."""
import json
import signal
import subprocess
import sys
import time

import pytest
from tests.helpers.paths import REPO
from tests.helpers.scenario_texts import RECORD_INTERRUPTED as SCENARIO

pytestmark = pytest.mark.integration


def test_an_interrupted_run_still_has_a_complete_run_json(tmp_path):
    scn = tmp_path / "record-it.toml"
    scn.write_text(SCENARIO)
    out = tmp_path / "results"
    proc = subprocess.Popen([sys.executable, "-m", "emulation.run.runner", str(scn), "--out-dir", str(out)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240          # the fabric lock may be held by another run
        while time.monotonic() < deadline:
            logs = list(out.glob("*/mrc/worker-h0.jsonl"))
            if logs and '"iteration"' in logs[0].read_text():
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.5)
        else:
            pytest.fail("the run did not start iterating within 240 s")
        (run_dir,) = out.iterdir()
        running = json.loads((run_dir / "run.json").read_text())
        assert running["status"] == "running" and running["ended"] is None
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    record = json.loads((run_dir / "run.json").read_text())
    assert (record["status"], record["exit_code"]) == ("interrupted", 130)
    assert record["ended"] and record["duration_s"] > 0 and "mrc" in record["console"]
    assert record["started"] == running["started"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["partial"] is True and summary["exit_code"] == 130
