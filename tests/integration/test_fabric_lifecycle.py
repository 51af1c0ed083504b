"""`mrclab fabric --check` in both routing modes (subprocess), cleanup after a SIGKILLed fabric
process (by `mrclab clean` and by the next Fabric start), the fabric lock. No fabric is held
by this module between tests (each test needs the lock itself)."""
import os
import subprocess
import sys
import time

import pytest

from emulation.network import cleanup
from emulation.network.fabric import Fabric
from model.topology import FabricSpec
from tests.integration.fabric_checks import MRCLAB, REPO, assert_nothing_left, start_then_kill

pytestmark = pytest.mark.integration

TINY = FabricSpec(planes=1, groups=2, spines=1, hosts_per_group=1)


@pytest.mark.parametrize("routing", ["srv6", "ecmp"])
def test_mrclab_fabric_check_exits_0(routing):
    run = subprocess.run(MRCLAB + ["fabric", "--planes", "2", "--groups", "2", "--spines", "2",
                                   "--hosts", "2", "--routing", routing, "--check"],
                         cwd=REPO, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [l for l in run.stdout.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("fabric check ok: " + routing), run.stdout
    assert_nothing_left()


KILLED_FABRIC = """
import sys, time
from emulation.network.fabric import Fabric
from model.topology import FabricSpec
from tests.integration.fabric_checks import MRCLAB, REPO, assert_nothing_left
with Fabric(FabricSpec(planes=1, groups=2, spines=1, hosts_per_group=1)) as fab:
    fab.popen_in_host(0, ["sleep", "600"])
    print("up", flush=True)
    time.sleep(600)
"""


def start_and_kill_fabric() -> cleanup.Leftovers:
    start_then_kill(KILLED_FABRIC)
    # What a crash leaves: the bridges and the controller (a process of its own) outlive the
    # killed fabric process. Found at the first look; polled rather than slept for.
    deadline = time.monotonic() + 10
    while True:
        left = cleanup.find_leftovers()
        if (left.bridges and left.controller_pid) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert left.bridges and left.controller_pid, left.describe()
    return left


def test_cleanup_after_sigkill_by_mrclab_clean():
    left = start_and_kill_fabric()
    run = subprocess.run(MRCLAB + ["clean"], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "t0p0g0" in run.stdout
    assert_nothing_left()
    for pid in [left.controller_pid, *left.host_shells, *left.namespace_pids]:
        assert not os.path.exists(f"/proc/{pid}") or cleanup._is_zombie(pid), pid


def test_cleanup_after_sigkill_by_next_fabric():
    start_and_kill_fabric()
    with Fabric(TINY) as fab:
        fab.cmd_in_host(0, ["ping", "-6", "-c", "1", "-W", "2", fab.topo.nic_addr(1, 0)])
    assert_nothing_left()


def test_lock_timeout_names_holder():
    from emulation.network.fabric import acquire_fabric_lock, release_fabric_lock
    fd = acquire_fabric_lock(timeout_s=300)
    try:
        code = ("from emulation.network.fabric import acquire_fabric_lock\n"
                "acquire_fabric_lock(timeout_s=0.5)\n")
        run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                             text=True, timeout=60)
        assert run.returncode != 0
        assert f"held by pid {os.getpid()}" in run.stderr and "FabricLockTimeout" in run.stderr
    finally:
        release_fabric_lock(fd)


def _ovs_answers(argv: list[str]) -> bool:
    return subprocess.run(argv, capture_output=True, timeout=20).returncode == 0


def test_fabric_starts_open_vswitch_when_it_is_down():
    """After a reboot nothing runs Open vSwitch; a fabric command must start it, not fail in
    cleanup with "database connection failed"."""
    from emulation.network import ovs_service
    from emulation.network.fabric import acquire_fabric_lock, release_fabric_lock
    fd = acquire_fabric_lock(timeout_s=300)
    try:
        subprocess.run([ovs_service.OVS_CTL, "stop"], check=True, capture_output=True,
                       timeout=120)
        assert not _ovs_answers(ovs_service.DB_CHECK)
        assert not _ovs_answers(ovs_service.SWITCHD_CHECK)
    finally:
        release_fabric_lock(fd)
    run = subprocess.run(MRCLAB + ["fabric", "--planes", "1", "--groups", "2", "--spines", "1",
                                   "--hosts", "1", "--check"],
                         cwd=REPO, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "fabric check ok" in run.stdout
    assert _ovs_answers(ovs_service.DB_CHECK) and _ovs_answers(ovs_service.SWITCHD_CHECK)
    assert_nothing_left()
