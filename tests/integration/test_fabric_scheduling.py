"""`[fabric] scheduling = "hifi"` on a real fabric: the processes land in the CPU groups the rule
says (emulation/network/scheduling.py), with the weights it says, a worker's helper threads are
niced and its packet loop is not, and nothing is left after stop, nor after a SIGKILLed fabric
once `mrclab clean` ran: ovs-vswitchd is back in the cgroup it came from. The rule's arithmetic
and the undo on a fake tree: tests/emulation/network/test_cgroups.py."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emulation.network import cgroups, cleanup, ovs_service
from emulation.network.fabric import Fabric
from emulation.network.scheduling import HELPER_THREAD_NICE, cgroup_of, weight_file
from model.topology import FabricSpec
from tests.integration.fabric_checks import assert_nothing_left, start_then_kill

pytestmark = pytest.mark.integration

TINY = FabricSpec(planes=1, groups=2, spines=1, hosts_per_group=1)
# a process with a main thread and one more, both asleep until stdin closes
TWO_THREADS = ("import sys, threading\n"
               "t = threading.Thread(target=sys.stdin.read)\n"
               "t.start()\nprint('up', flush=True)\nt.join()\n")


def _switchd() -> int:
    return int(Path(ovs_service.SWITCHD_PID_FILE).read_text().split()[0])


def _cgroup(pid: int, version: str) -> str:
    return cgroup_of(Path(f"/proc/{pid}/cgroup").read_text(), version)


def _nice(pid: int, tid: int) -> int:
    text = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
    return int(text[text.rfind(")") + 2:].split()[16])      # field 19 of proc(5)


def test_hifi_places_the_fabric_processes_and_leaves_nothing(capfd):
    hierarchy = cgroups.detect()
    v = hierarchy.version
    switchd_before = _cgroup(_switchd(), v)
    with Fabric(TINY, scheduling="hifi") as fab:
        loop = fab.popen_in_host(0, [sys.executable, "-c", TWO_THREADS], role="endpoints",
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert loop.stdout.readline() == "up\n"
        root = Path(hierarchy.root)
        for group in ("packet", "bulk"):
            name, value = weight_file(v, group)
            assert (root / f"mrclab-{group}" / name).read_text().strip() == value
        assert _cgroup(loop.pid, v) == "/mrclab-packet"
        assert _cgroup(_switchd(), v) == "/mrclab-packet"
        assert _cgroup(fab.controller_proc.pid, v) == "/mrclab-bulk"
        with fab.capture(1, 0, Path(fab.run_dir) / "c.pcap") as cap:
            assert _cgroup(cap.proc.pid, v) == "/mrclab-bulk"
        fab.scheduling.demote_threads([loop.pid])
        tids = [int(t.name) for t in Path(f"/proc/{loop.pid}/task").iterdir()]
        assert len(tids) == 2
        assert {t: _nice(loop.pid, t) for t in tids} == {
            t: (os.getpriority(os.PRIO_PROCESS, 0) if t == loop.pid else HELPER_THREAD_NICE)
            for t in tids}
        loop.stdin.close()
        loop.wait(5)
    # the fabric's own stop undid it: its leftover sweep found nothing to report
    assert "fabric teardown" not in capfd.readouterr().err
    assert _cgroup(_switchd(), v) == switchd_before
    assert not (Path(hierarchy.root) / "mrclab-packet").exists()
    assert not Path(cgroups.STATE_FILE).exists()
    assert_nothing_left()


KILLED_HIFI_FABRIC = """
import time
from emulation.network.fabric import Fabric
from model.topology import FabricSpec
with Fabric(FabricSpec(planes=1, groups=2, spines=1, hosts_per_group=1), scheduling="hifi"):
    print("up", flush=True)
    time.sleep(600)
"""


def test_mrclab_clean_undoes_a_killed_hifi_fabric():
    v = cgroups.detect().version
    switchd_before = _cgroup(_switchd(), v)
    start_then_kill(KILLED_HIFI_FABRIC)
    deadline = time.monotonic() + 10
    while not cleanup.find_leftovers().cgroups and time.monotonic() < deadline:
        time.sleep(0.2)
    left = cleanup.find_leftovers()
    assert len(left.cgroups) == 2 and _cgroup(_switchd(), v) == "/mrclab-packet", left.describe()
    cleanup.clean()
    assert _cgroup(_switchd(), v) == switchd_before
    assert not Path(cgroups.STATE_FILE).exists()
    assert_nothing_left()
