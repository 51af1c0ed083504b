"""Applying and undoing `[fabric] scheduling` (emulation/network/cgroups.py) on a fake cgroup
tree and a fake /proc (any user): what "hifi" writes where, that "none" touches nothing, that
every placed process goes back to the cgroup it came from, also through `mrclab clean`'s
remove_leftovers after a crash; and the helper threads' nice on a real child process. The real
cgroups (root, Mininet): tests/integration/test_fabric_scheduling.py."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from emulation.network import cgroups
from emulation.network.scheduling import HELPER_THREAD_NICE, V1, Hierarchy
from model.threads import SAMPLER_THREAD_NAME


def _tree(tmp_path):
    root = tmp_path / "cpu"
    (root / "user.slice").mkdir(parents=True)
    (root / "cgroup.procs").write_text("")
    (root / "user.slice" / "cgroup.procs").write_text("")
    proc = tmp_path / "proc"
    for pid, where in ((42, "/user.slice"), (43, "/")):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "cgroup").write_text(f"4:memory:/x\n2:cpu,cpuacct:{where}\n0::/\n")
    return root, proc


def _hifi(tmp_path):
    root, proc = _tree(tmp_path)
    return cgroups.Scheduling("hifi", hierarchy=Hierarchy(V1, str(root)), proc=str(proc),
                              state_file=str(tmp_path / "run" / "scheduling.json"),
                              rmdir=shutil.rmtree), root


def test_hifi_creates_both_groups_with_their_weights(tmp_path):
    sched, root = _hifi(tmp_path)
    sched.start()
    assert (root / "mrclab-packet" / "cpu.shares").read_text() == "10240"
    assert (root / "mrclab-bulk" / "cpu.shares").read_text() == "512"


def test_placing_records_the_origin_before_the_move(tmp_path):
    sched, root = _hifi(tmp_path)
    sched.start()
    sched.place(42, "switches")
    sched.place(43, "controller")
    assert (root / "mrclab-packet" / "cgroup.procs").read_text() == "42\n"
    assert (root / "mrclab-bulk" / "cgroup.procs").read_text() == "43\n"
    state = json.loads((tmp_path / "run" / "scheduling.json").read_text())
    assert state == {"version": "v1", "root": str(root),
                     "origins": {"42": "/user.slice", "43": "/"}}
    record = sched.record()
    assert record["placed"] == {"42": "mrclab-packet", "43": "mrclab-bulk"}
    assert record["groups"]["mrclab-packet"] == {"cpu.shares": "10240"}


def test_stop_sends_each_process_back_and_removes_the_groups(tmp_path):
    sched, root = _hifi(tmp_path)
    sched.start()
    sched.place(42, "switches")
    assert sched.stop() == []
    assert (root / "user.slice" / "cgroup.procs").read_text() == "42\n"
    assert not (root / "mrclab-packet").exists() and not (root / "mrclab-bulk").exists()
    assert not (tmp_path / "run" / "scheduling.json").exists()
    assert sched.stop() == []                                   # once


def test_a_gone_process_cannot_be_placed(tmp_path):
    sched, _ = _hifi(tmp_path)
    sched.start()
    with pytest.raises(cgroups.CgroupError, match="process 77 .endpoints. is gone"):
        sched.place(77, "endpoints")


def test_none_touches_nothing(tmp_path):
    root, proc = _tree(tmp_path)
    sched = cgroups.Scheduling("none", hierarchy=Hierarchy(V1, str(root)), proc=str(proc),
                               state_file=str(tmp_path / "state.json"))
    sched.start()
    sched.place(42, "switches")
    sched.demote_threads([42])
    assert sched.stop() == [] and sched.record() == {"scheduling": "none"}
    assert sorted(p.name for p in root.iterdir()) == ["cgroup.procs", "user.slice"]
    assert not (tmp_path / "state.json").exists()


def test_clean_undoes_a_crashed_runs_groups(tmp_path):
    sched, root = _hifi(tmp_path)
    sched.start()
    sched.place(42, "switches")              # the fabric crashes here: nothing undone
    proc = tmp_path / "proc"
    (proc / "self").mkdir()
    (proc / "self" / "mounts").write_text(f"cgroup {root} cgroup rw,relatime,cpu 0 0\n")
    assert cgroups.leftover_groups(str(proc)) == [str(root / "mrclab-bulk"),
                                                  str(root / "mrclab-packet")]
    state = tmp_path / "run" / "scheduling.json"
    assert cgroups.remove_leftovers(str(proc), str(state), rmdir=shutil.rmtree) == []
    assert (root / "user.slice" / "cgroup.procs").read_text() == "42\n"
    assert cgroups.leftover_groups(str(proc)) == [] and not state.exists()


def _nice(pid: int, tid: int) -> int:
    text = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
    return int(text[text.rfind(")") + 2:].split()[16])      # field 19 of proc(5)


def test_helper_threads_are_niced_and_the_main_thread_is_not(tmp_path):
    child = subprocess.Popen([sys.executable, "-c",
                              "import sys, threading\n"
                              "t = threading.Thread(target=sys.stdin.readline)\n"
                              "t.start()\nprint('up', flush=True)\nt.join()\n"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "up\n"
        sched, _ = _hifi(tmp_path)
        sched.proc = Path("/proc")
        sched.start()
        main_nice = _nice(child.pid, child.pid)
        sched.demote_threads([child.pid])
        tids = sorted(int(t.name) for t in Path(f"/proc/{child.pid}/task").iterdir())
        others = [t for t in tids if t != child.pid]
        assert others and all(_nice(child.pid, t) == HELPER_THREAD_NICE for t in others)
        assert _nice(child.pid, child.pid) == main_nice
        assert sched.niced == {(child.pid, t) for t in others} and sched.error is None
    finally:
        child.stdin.write("\n")
        child.stdin.close()
        child.wait(5)


def test_the_goodput_sampler_keeps_its_priority(tmp_path):
    """Two helper threads; the one named as the worker's goodput sampler (the monitor's
    lateness probe, model/threads.py) is left alone, the other is niced."""
    child = subprocess.Popen([sys.executable, "-c",
                              "import ctypes, sys, threading\n"
                              "def probe():\n"
                              "    ctypes.CDLL(None).prctl(15, b'" + SAMPLER_THREAD_NAME + "', 0, 0, 0)\n"
                              "    sys.stdin.readline()\n"
                              "t = threading.Thread(target=probe); t.start()\n"
                              "u = threading.Thread(target=sys.stdin.readline); u.start()\n"
                              "import time; time.sleep(0.2)\n"
                              "print(t.native_id, u.native_id, flush=True)\n"
                              "t.join(); u.join()\n"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        probe, helper = (int(x) for x in child.stdout.readline().split())
        sched, _ = _hifi(tmp_path)
        sched.proc = Path("/proc")
        sched.start()
        before = _nice(child.pid, probe)
        sched.demote_threads([child.pid])
        assert _nice(child.pid, helper) == HELPER_THREAD_NICE
        assert _nice(child.pid, probe) == before != HELPER_THREAD_NICE
        assert sched.niced == {(child.pid, helper)}
    finally:
        child.stdin.write("\n\n")
        child.stdin.close()
        child.wait(5)
