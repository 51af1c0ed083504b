"""run.json (emulation/run/run_record.py): the git state in a real repository and outside one, the
machine facts read from /proc, the resolved scenario, and start -> finish."""
import json
import os
import subprocess
import types

import pytest

from emulation.run import run_record as R
from emulation.config import scenario

SCENARIO = """
name = "rec"
[fabric]
time_scale = 1
planes = 3
[collective]
message_bytes = 4096
iterations = 5
[[faults]]
at_iteration = 1
action = "link_down"
a = "t0p0g0"
b = "t1p0s0"
"""


def git(cwd, *args):
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True)


def test_git_state_of_a_clean_then_dirty_checkout(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "f.txt").write_text("a\n")
    git(tmp_path, "add", "f.txt")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    assert R.git_state(tmp_path) == {"commit": head, "dirty": False, "error": None}
    (tmp_path / "f.txt").write_text("b\n")
    assert R.git_state(tmp_path)["dirty"] is True
    (tmp_path / "untracked.txt").write_text("x")       # untracked files do not make it dirty
    (tmp_path / "f.txt").write_text("a\n")
    assert R.git_state(tmp_path)["dirty"] is False


def test_not_a_git_checkout_is_said_not_raised(tmp_path):
    state = R.git_state(tmp_path)
    assert state["commit"] is None and state["dirty"] is None
    assert state["error"].startswith("not a git checkout")


def test_machine_facts_match_the_kernels():
    m = R.machine()
    assert m["cpu_count"] == os.cpu_count()
    meminfo = open("/proc/meminfo").read().split("\n")[0].split()
    assert m["memory_bytes"] == int(meminfo[1]) * 1024
    assert m["kernel"].split()[1] == os.uname().release
    assert m["packages"]["numpy"] and m["packages"]["pandas"]
    assert m["python"].count(".") == 2


def test_time_scale_is_the_fabric_key_or_1():
    assert R.time_scale(types.SimpleNamespace(text='[fabric]\ntime_scale = 4.0\n')) == 4.0
    assert R.time_scale(types.SimpleNamespace(text='[fabric]\nplanes = 2\n')) == 1
    assert R.time_scale(types.SimpleNamespace(text='x', time_scale=2.5)) == 2.5


def test_record_is_written_at_start_and_completed_at_the_end(tmp_path):
    scn = scenario.parse(SCENARIO)
    rec = R.start(tmp_path, scn, {"transport": "mrc", "short": False})
    data = json.loads((tmp_path / "run.json").read_text())
    assert data["status"] == "running" and data["ended"] is None and data["exit_code"] is None
    assert data["scenario_text"] == SCENARIO and data["options"]["transport"] == "mrc"
    resolved = data["scenario_resolved"]
    assert resolved["spec"]["planes"] == 3
    assert resolved["collective"]["iterations"] == 5
    assert resolved["faults"][0]["commands"][0]["action"] == "link_down"
    assert "text" not in resolved
    assert data["machine"]["hostname"] == os.uname().nodename
    rec.finish(3, "the table", "finished")
    data = json.loads((tmp_path / "run.json").read_text())
    assert (data["status"], data["exit_code"], data["console"]) == ("finished", 3, "the table")
    assert data["duration_s"] >= 0 and data["ended"]


def test_a_fact_that_cannot_be_read_is_recorded_as_unavailable(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")        # no ovs-vswitchd to ask
    m = R.machine()
    assert m["openvswitch"] is None
    assert "FileNotFoundError" in m["unavailable"]["openvswitch"]
