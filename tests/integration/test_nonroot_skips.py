"""After one root setup, the tests run as a normal user: integration tests skip saying they need
root, tshark tests skip when tshark is missing. Run as root, it drops to `nobody` (setpriv) for
a pytest subprocess on this checkout and reads pytest's skip reasons."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.paths import REPO

pytestmark = pytest.mark.integration


def _readable_by_others(path: Path) -> bool:
    """Every directory down to path is traversable, and path readable, by any user."""
    for p in [path, *path.parents]:
        if not os.stat(p).st_mode & stat.S_IXOTH:
            return False
    return bool(os.stat(path).st_mode & stat.S_IROTH)


def test_a_normal_user_gets_skips_with_reasons(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to another user")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("setpriv (util-linux) is missing")
    if not _readable_by_others(REPO) or not _readable_by_others(Path(sys.executable).parent):
        pytest.skip(f"{REPO} or its .venv is not readable by other users")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(HOME=str(tmp_path), PATH="/nonexistent")      # no tshark on this PATH
    os.chmod(tmp_path, 0o777)
    run = subprocess.run(
        [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-m",
         "pytest", "-q", "-rs", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "pt"),
         "tests/integration/test_capture_snaplen.py", "tests/traffic/core/test_codec_tshark.py",
         "tests/emulation/run/test_runner_capture_snaplen.py"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "needs root" in out and "test_capture_snaplen.py" in out
    assert "tshark is not installed" in out
    assert " passed" in out and "failed" not in out        # the unit test still ran
