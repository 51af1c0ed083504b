"""How the fabric schedules its processes (`[fabric] scheduling`): the rule, as data (pure: no
file is touched here; emulation/network/cgroups.py applies it).

    "none"  nothing is changed: every process competes as the kernel's fair scheduler treats any
    "hifi"  the per-packet work ahead of the bulk compute, as Mininet-HiFi keeps it (Handigol et
            al., CoNEXT 2012): the endpoints' packet loops and ovs-vswitchd in a CPU cgroup of
            high weight ("packet"), the controller and the captures in one of low weight
            ("bulk"), and the workers' threads beside the packet loop (input prefetch: numpy
            compute) niced; not the goodput sampler, the monitor's lateness probe
            (model/threads.py)

Why weights and not a real-time class: a worker's main thread runs the endpoint's packet loop
and, between its turns, the reduction of the chunks it received, so a real-time class would put
that bulk compute ahead of ovs-vswitchd as well, and a real-time task that spins holds its CPU
until the kernel's RT throttling (sched_rt_runtime_us) takes it back. A CPU weight only shifts
the fair scheduler's shares: the packet group runs first whenever it is runnable, yet every
other process on the machine keeps a share, so a spinning loop cannot lock the machine.
Affinity is not set: on a machine of few cores, pinning takes away the scheduler's freedom to
run a woken packet loop on whichever core is free first.

The cgroups live directly under the root of the hierarchy that has the `cpu` controller: a
cgroup v1 `cpu` mount (weights as cpu.shares, 1024 the default) or the cgroup v2 root (cpu.weight,
100 the default). Their names start with GROUP_PREFIX so a clean-up can find a crashed run's.
"""
from __future__ import annotations

from dataclasses import dataclass

SCHEDULINGS = ("none", "hifi")
DEFAULT_SCHEDULING = "none"

GROUP_PREFIX = "mrclab-"
PACKET, BULK = "packet", "bulk"
# cpu.weight on cgroup v2's scale (1..10000, a nice-0 process weighs 100): the packet group
# outweighs ten busy nice-0 processes, so a wake-up of a packet loop preempts bulk work at once;
# the bulk group weighs half of one, so it runs in the gaps and is never starved outright.
GROUP_WEIGHTS = {PACKET: 1000, BULK: 50}
# The nice value of a worker's threads other than its packet loop (the fair scheduler's weight
# of nice 10 is about a tenth of nice 0's): they run when the loop waits.
HELPER_THREAD_NICE = 10

V1, V2 = "v1", "v2"
V1_DEFAULT_SHARES = 1024
V2_DEFAULT_WEIGHT = 100


class SchedulingError(ValueError):
    """A scheduling setting or a cgroup layout this module cannot use; the message says which."""


def check_setting(value: object) -> str:
    """The setting if it is one of SCHEDULINGS, else SchedulingError naming the choices."""
    if value not in SCHEDULINGS:
        raise SchedulingError(f"scheduling must be one of {', '.join(SCHEDULINGS)}, "
                              f"got {value!r}")
    return value          # type: ignore[return-value]


def group_name(group: str) -> str:
    """The cgroup directory of a group (PACKET or BULK)."""
    if group not in GROUP_WEIGHTS:
        raise SchedulingError(f"no scheduling group {group!r}; known: "
                              f"{', '.join(GROUP_WEIGHTS)}")
    return GROUP_PREFIX + group


def is_our_group(name: str) -> bool:
    """A cgroup directory this module names (never a foreign one)."""
    return name in {GROUP_PREFIX + g for g in GROUP_WEIGHTS}


@dataclass(frozen=True)
class Hierarchy:
    """Where the cpu controller is mounted and in which cgroup version."""
    version: str
    root: str


def cpu_hierarchy(mounts_text: str, subtree_control_of) -> Hierarchy:
    """The hierarchy that holds the cpu controller, from /proc/self/mounts; subtree_control_of(root)
    is the text of a cgroup v2 root's cgroup.subtree_control (None when unreadable). A cgroup v1
    mount with `cpu` in its options wins: the controller is then bound to it and absent from
    v2. On v2 the controller must already be enabled for the root's children (systemd does so);
    this module never enables it."""
    v2_root = None
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        fstype, where, options = parts[2], parts[1], parts[3].split(",")
        if fstype == "cgroup" and "cpu" in options:
            return Hierarchy(V1, where)
        if fstype == "cgroup2" and v2_root is None:
            v2_root = where
    control = subtree_control_of(v2_root) if v2_root is not None else None
    if control is not None and "cpu" in control.split():
        return Hierarchy(V2, v2_root)
    raise SchedulingError("scheduling \"hifi\" needs the cpu cgroup controller: no cgroup v1 "
                          "mount has it and the cgroup v2 root does not enable it "
                          "for its children (cgroup.subtree_control); use scheduling = \"none\"")


def weight_file(version: str, group: str) -> tuple[str, str]:
    """(file, value) that gives a group its CPU weight in this cgroup version."""
    weight = GROUP_WEIGHTS[group]
    if version == V2:
        return "cpu.weight", str(weight)
    return "cpu.shares", str(weight * V1_DEFAULT_SHARES // V2_DEFAULT_WEIGHT)


def cgroup_of(proc_cgroup_text: str, version: str) -> str:
    """The process's cgroup path in the cpu hierarchy, from /proc/<pid>/cgroup: v1 lines are
    `id:controllers:path` (the one listing cpu), the v2 line is `0::path`."""
    for line in proc_cgroup_text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if version == V2 and parts[0] == "0" and parts[1] == "":
            return parts[2]
        if version == V1 and "cpu" in parts[1].split(","):
            return parts[2]
    raise SchedulingError(f"/proc/<pid>/cgroup names no {version} cpu cgroup")


# The "hifi" rule by role: the processes whose main thread runs a packet loop (the workers, or
# bare endpoints) and ovs-vswitchd in PACKET; the controller and the captures in BULK.
ROLE_GROUPS = {"endpoints": PACKET, "switches": PACKET, "controller": BULK, "captures": BULK}


def group_of_role(role: str) -> str:
    """The group a process of this role joins under "hifi"; an unknown role is an error (a
    process never lands in a group by accident)."""
    if role not in ROLE_GROUPS:
        raise SchedulingError(f"no scheduling rule for role {role!r}; known: "
                              f"{', '.join(ROLE_GROUPS)}")
    return ROLE_GROUPS[role]
