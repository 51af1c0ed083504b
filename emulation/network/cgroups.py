"""Applies `[fabric] scheduling` (the rule: emulation/network/scheduling.py) to the fabric's
processes and undoes it at stop (thin: files under the cpu cgroup hierarchy and setpriority).

    sched = Scheduling("hifi").start()      # the two groups, with their weights
    sched.place(pid, "switches")            # the process and all its threads join a group
    sched.demote_threads([pid])             # its threads but the main one niced
    sched.stop()                            # processes back where they were, groups removed

Every process placed has its cgroup before the move recorded, in memory and in STATE_FILE, so
a process that outlives the fabric (ovs-vswitchd) goes back where it was, also after a crash:
`mrclab clean` (emulation/network/cleanup.py) calls remove_leftovers(), which moves whatever is
still in a group of ours back (to its recorded cgroup, else the hierarchy's root) and removes
the group. Niced threads belong to the fabric's own processes and end with them.
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from emulation.network.scheduling import (GROUP_WEIGHTS, HELPER_THREAD_NICE, Hierarchy,
                                          SchedulingError, cgroup_of, check_setting,
                                          cpu_hierarchy, group_name, group_of_role, is_our_group,
                                          weight_file)
from model.threads import SAMPLER_THREAD_NAME

STATE_FILE = "/run/mrclab/scheduling.json"


class CgroupError(RuntimeError):
    """A cgroup operation failed; the message names the file and the process."""


def _read(path) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def detect(proc: str = "/proc") -> Hierarchy:
    """The cpu controller's hierarchy on this machine (SchedulingError when there is none)."""
    mounts = _read(Path(proc) / "self" / "mounts") or ""
    return cpu_hierarchy(mounts, lambda root: _read(Path(root) / "cgroup.subtree_control"))


def _write(path: Path, value: str, what: str) -> None:
    try:
        path.write_text(value)
    except OSError as err:
        raise CgroupError(f"{what}: writing {value.strip()!r} to {path}: {err}") from None


class Scheduling:
    """One fabric's scheduling; "none" does nothing at all (see the module docstring)."""

    def __init__(self, setting: str, *, hierarchy: Hierarchy | None = None, proc: str = "/proc",
                 state_file: str = STATE_FILE, rmdir=os.rmdir):
        self.setting = check_setting(setting)
        self.rmdir = rmdir
        self.hierarchy = hierarchy
        self.proc = Path(proc)
        self.state_file = Path(state_file)
        self.active = False
        self.placed: dict[int, str] = {}           # pid -> group
        self.origins: dict[int, str] = {}          # pid -> its cgroup before the move
        self.niced: set[tuple[int, int]] = set()   # (pid, tid) given HELPER_THREAD_NICE
        self.error: str | None = None              # the first thread that could not be niced

    def group_dir(self, group: str) -> Path:
        return Path(self.hierarchy.root) / group_name(group)

    def start(self) -> "Scheduling":
        """Create the groups with their weights ("hifi"); SchedulingError or CgroupError when
        this machine cannot have them."""
        if self.setting == "none":
            return self
        self.hierarchy = self.hierarchy or detect(str(self.proc))
        self.active = True           # from here on stop() removes what exists
        for group in GROUP_WEIGHTS:
            path = self.group_dir(group)
            try:
                path.mkdir(exist_ok=True)
            except OSError as err:
                raise CgroupError(f"creating the cgroup {path}: {err}") from None
            name, value = weight_file(self.hierarchy.version, group)
            _write(path / name, value, f"the {group} group's CPU weight")
        self._save_state()
        return self

    def place(self, pid: int, role: str) -> None:
        """Move process `pid` (all its threads) into its role's group; nothing under "none"."""
        if not self.active:
            return
        group = group_of_role(role)
        text = _read(self.proc / str(pid) / "cgroup")
        if text is None:
            raise CgroupError(f"process {pid} ({role}) is gone: it cannot join the {group} group")
        self.origins.setdefault(pid, cgroup_of(text, self.hierarchy.version))
        self._save_state()           # the origin is on disk before the move
        _write(self.group_dir(group) / "cgroup.procs", f"{pid}\n", f"placing {role} pid {pid}")
        self.placed[pid] = group

    def demote_threads(self, pids) -> None:
        """HELPER_THREAD_NICE for every thread of these processes but the main one and the
        goodput sampler, once each (threads appear while a worker runs: call again); nothing
        under "none"."""
        if not self.active:
            return
        for pid in pids:
            try:
                tids = [int(t) for t in os.listdir(self.proc / str(pid) / "task") if t.isdigit()]
            except OSError:
                continue
            for tid in tids:
                if tid == pid or (pid, tid) in self.niced or self._is_probe(pid, tid):
                    continue
                try:
                    os.setpriority(os.PRIO_PROCESS, tid, HELPER_THREAD_NICE)
                except ProcessLookupError:
                    continue           # the thread ended meanwhile
                except OSError as err:  # kept for the record; the run goes on
                    self.error = self.error or f"nice of thread {tid} of pid {pid}: {err}"
                    continue
                self.niced.add((pid, tid))

    def _is_probe(self, pid: int, tid: int) -> bool:
        """The worker's goodput sampler: the monitor's lateness probe keeps its priority
        (model/threads.py)."""
        name = _read(self.proc / str(pid) / "task" / str(tid) / "comm")
        return name is not None and name.strip() == SAMPLER_THREAD_NAME

    def record(self) -> dict:
        """What is in force, for the run's files."""
        out = {"scheduling": self.setting}
        if self.active:
            out.update({"cgroup": self.hierarchy.version, "root": self.hierarchy.root,
                        "groups": {group_name(g): dict([weight_file(self.hierarchy.version, g)])
                                   for g in GROUP_WEIGHTS},
                        "placed": {str(pid): group_name(g) for pid, g in self.placed.items()},
                        "helper_threads_niced": len(self.niced),
                        "helper_thread_nice": HELPER_THREAD_NICE, "error": self.error})
        return out

    def stop(self) -> list[str]:
        """Every process still in a group back where it was, the groups removed, the state file
        deleted; returns what could not be undone (teardown goes on)."""
        if not self.active:
            return []
        errors = _empty_and_remove(self.hierarchy, self.origins, self.rmdir)
        if not errors:
            with contextlib.suppress(FileNotFoundError):
                self.state_file.unlink()
        self.active = False
        return errors

    def _save_state(self) -> None:
        try:
            self.state_file.parent.mkdir(parents=True, exist_ok=True)
            self.state_file.write_text(json.dumps(
                {"version": self.hierarchy.version, "root": self.hierarchy.root,
                 "origins": {str(p): c for p, c in self.origins.items()}}))
        except OSError as err:
            raise CgroupError(f"recording the processes' cgroups in {self.state_file}: "
                              f"{err}") from None


def _empty_and_remove(hierarchy: Hierarchy, origins: dict[int, str], rmdir=os.rmdir) -> list[str]:
    """Move every process out of our groups (to its origin, else the root), remove the groups
    (rmdir: a cgroup directory goes with its control files in it, by rmdir alone)."""
    errors = []
    root = Path(hierarchy.root)
    for group in GROUP_WEIGHTS:
        path = root / group_name(group)
        if not path.is_dir():
            continue
        for line in (_read(path / "cgroup.procs") or "").split():
            pid = int(line)
            target = root / origins.get(pid, "/").lstrip("/")
            if not (target / "cgroup.procs").exists():
                target = root
            try:
                (target / "cgroup.procs").write_text(f"{pid}\n")
            except ProcessLookupError:
                continue                # exited meanwhile
            except OSError as err:
                errors.append(f"moving pid {pid} out of {path}: {err}")
        try:
            rmdir(path)
        except OSError as err:
            errors.append(f"removing the cgroup {path}: {err}")
    return errors


def leftover_groups(proc: str = "/proc") -> list[str]:
    """Our groups that exist now (a crashed run's, or a running fabric's)."""
    try:
        hierarchy = detect(proc)
    except SchedulingError:
        return []
    root = Path(hierarchy.root)
    return sorted(str(root / name) for name in (os.listdir(root) if root.is_dir() else [])
                  if is_our_group(name) and (root / name).is_dir())


def remove_leftovers(proc: str = "/proc", state_file: str = STATE_FILE,
                     rmdir=os.rmdir) -> list[str]:
    """A crashed fabric's groups emptied (processes back to their recorded cgroups) and
    removed, the state file deleted; returns what could not be undone."""
    try:
        hierarchy = detect(proc)
    except SchedulingError:
        return []
    try:
        saved = json.loads(Path(state_file).read_text())
        origins = {int(p): c for p, c in saved.get("origins", {}).items()}
    except (OSError, ValueError, AttributeError):
        origins = {}
    errors = _empty_and_remove(hierarchy, origins, rmdir)
    if not errors:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(state_file)
    return errors
