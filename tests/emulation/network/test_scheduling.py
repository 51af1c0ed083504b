"""`[fabric] scheduling`'s rule (emulation/network/scheduling.py) and the key's validation: the
setting, where the cpu controller is (cgroup v1 mount or v2 root, from /proc/self/mounts texts
as the kernel writes them), the weights on each version's scale, a process's cgroup from
/proc/<pid>/cgroup, and which role lands in which group."""
import pytest

from emulation.calibration.calibrate import fabric_description
from emulation.config import scenario as S
from emulation.network.scheduling import (BULK, PACKET, SchedulingError, V1, V2, cgroup_of,
                                          check_setting, cpu_hierarchy, group_name,
                                          group_of_role, is_our_group, weight_file)
from tests.helpers.scenario_texts import SMALL_FABRIC

HYBRID = """\
sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0
cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,relatime,cpu,cpuacct 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
"""
UNIFIED = """\
sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate 0 0
"""


def test_the_setting_is_one_of_the_two():
    assert check_setting("none") == "none" and check_setting("hifi") == "hifi"
    with pytest.raises(SchedulingError, match="none, hifi.*'rt'"):
        check_setting("rt")


def test_a_v1_cpu_mount_wins_over_the_unified_root():
    # cpuset is not cpu: the combined cpu,cpuacct mount is the one
    h = cpu_hierarchy(HYBRID, lambda root: "cpu memory")
    assert (h.version, h.root) == (V1, "/sys/fs/cgroup/cpu,cpuacct")


def test_v2_needs_cpu_enabled_for_the_roots_children():
    asked = []
    h = cpu_hierarchy(UNIFIED, lambda root: asked.append(root) or "cpuset cpu io memory pids")
    assert (h.version, h.root) == (V2, "/sys/fs/cgroup") and asked == ["/sys/fs/cgroup"]
    for control in ("memory pids", None):
        with pytest.raises(SchedulingError, match="cgroup.subtree_control.*\"none\""):
            cpu_hierarchy(UNIFIED, lambda root: control)


def test_weights_on_each_versions_scale():
    # v2 weighs a nice-0 process 100, v1 1024: 1000 -> 1000 * 1024 / 100 = 10240; 50 -> 512
    assert weight_file(V2, PACKET) == ("cpu.weight", "1000")
    assert weight_file(V2, BULK) == ("cpu.weight", "50")
    assert weight_file(V1, PACKET) == ("cpu.shares", "10240")
    assert weight_file(V1, BULK) == ("cpu.shares", "512")


def test_a_process_cgroup_in_either_version():
    text = "9:name=systemd:/\n4:memory:/process_api/69f0\n2:cpu,cpuacct:/user.slice\n0::/\n"
    assert cgroup_of(text, V1) == "/user.slice"
    assert cgroup_of("0::/system.slice/openvswitch-switch.service\n", V2) == \
        "/system.slice/openvswitch-switch.service"
    with pytest.raises(SchedulingError, match="no v1 cpu cgroup"):
        cgroup_of("0::/\n3:cpuset:/\n", V1)


def test_roles_and_group_names():
    assert group_of_role("endpoints") == group_of_role("switches") == PACKET
    assert group_of_role("controller") == group_of_role("captures") == BULK
    with pytest.raises(SchedulingError, match="no scheduling rule for role 'runner'"):
        group_of_role("runner")
    assert group_name(PACKET) == "mrclab-packet" and is_our_group("mrclab-bulk")
    assert not is_our_group("mrclab-other") and not is_our_group("system.slice")


SCENARIO = 'name = "t"\n' + SMALL_FABRIC


def test_the_scenario_key_defaults_to_none_and_takes_hifi():
    assert S.parse(SCENARIO).scheduling == "none"
    scn = S.parse(SCENARIO.replace("[fabric]", '[fabric]\nscheduling = "hifi"', 1))
    assert scn.scheduling == "hifi"
    # a calibration of one setting is not the other's
    assert fabric_description(scn, "mrc")["scheduling"] == "hifi"


@pytest.mark.parametrize("value,expect", [('"rt"', "[fabric] scheduling: must be one of"),
                                          ("1", "[fabric] scheduling: must be a string")])
def test_a_bad_scheduling_value_names_the_key(value, expect):
    with pytest.raises(S.ScenarioError) as info:
        S.parse(SCENARIO.replace("[fabric]", f"[fabric]\nscheduling = {value}", 1),
                source="x.toml")
    assert expect in str(info.value)
