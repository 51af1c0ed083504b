"""The endpoint process starts with `python -m traffic.nic.endpoint_cli` whichever build of
traffic/nic/endpoint.py is in force (a compiled module cannot be run with -m)."""
import os
import subprocess
import sys
from tests.helpers.paths import REPO as REPO_PATH

REPO = str(REPO_PATH)


def _run_entry(tmp_path, env_pure):
    env = {k: v for k, v in os.environ.items() if k != "MRCLAB_PURE_PYTHON"}
    if env_pure:
        env["MRCLAB_PURE_PYTHON"] = "1"
    missing = tmp_path / "no-such-config.json"
    return subprocess.run([sys.executable, "-m", "traffic.nic.endpoint_cli", "--config", str(missing)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def test_the_entry_point_runs_main_on_the_build_in_force(tmp_path):
    done = _run_entry(tmp_path, env_pure=False)
    # main() ran: it reports the unreadable config by name and exits 2 (not an import error)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("endpoint: ") and "no-such-config.json" in done.stderr


def test_the_entry_point_runs_main_interpreted(tmp_path):
    done = _run_entry(tmp_path, env_pure=True)
    assert done.returncode == 2, done.stderr
    assert "no-such-config.json" in done.stderr
