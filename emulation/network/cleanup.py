"""Remove what a crashed MRC lab fabric left behind, and only that.

Other engineers and other sessions share this machine, so nothing here matches broadly (no `mn -c`):
  * OVS bridges named like our switches (t0p{P}g{G}, t1p{P}s{S}) and their switch-side veths
    ({switch}-e{port});
  * Mininet host shells `bash ... -is mininet:h{n}` whose network namespace holds an h{n}-p{k}
    interface, plus every process still living in such a namespace (it would keep it alive);
  * nftables tables named mrclab_* in the root namespace;
  * the trimming tc BPF program (emulation/network/trimming.py) on those switch-side veths;
  * the controller whose pid is in /run/mrclab/controller.pid, if it still is a controller.app;
  * the temporary bridge mrclabsb0 and veth pair mrclabsb-a/mrclabsb-b of emulation/network/ovs_sndbuf.py.
  * the CPU cgroups of `[fabric] scheduling = "hifi"` (mrclab-packet, mrclab-bulk; emulation/network/
    cgroups.py): their processes go back to the cgroups recorded before the move, then the
    groups are removed.
The name predicates are pure functions so unit tests can prove they never match foreign names.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import time
from dataclasses import dataclass, field

from emulation.network import cgroups, trimming
from model.proc import CommandFailed
from model.proc import run_checked as run_command

RUN_DIR = "/run/mrclab"
CONTROLLER_PID_FILE = os.path.join(RUN_DIR, "controller.pid")
STATE_FILE = os.path.join(RUN_DIR, "fabric.json")

_SWITCH_RE = re.compile(r"^t0p\d+g\d+$|^t1p\d+s\d+$")
_SWITCH_INTF_RE = re.compile(r"^(?:t0p\d+g\d+|t1p\d+s\d+)-e\d+$")
_HOST_INTF_RE = re.compile(r"^h\d+-p\d+$")
_HOST_SHELL_RE = re.compile(r"^mininet:(h\d+)$")
_NFT_TABLE_PREFIX = "mrclab_"
# emulation/network/ovs_sndbuf.py's probe (exact names, defined here so the sweep and the probe agree).
SNDBUF_PROBE_BRIDGE = "mrclabsb0"
SNDBUF_PROBE_VETHS = ("mrclabsb-a", "mrclabsb-b")


def is_our_switch(name: str) -> bool:
    return bool(_SWITCH_RE.match(name))


def is_our_switch_intf(name: str) -> bool:
    return bool(_SWITCH_INTF_RE.match(name.split("@", 1)[0]))


def is_our_host_intf(name: str) -> bool:
    return bool(_HOST_INTF_RE.match(name.split("@", 1)[0]))


def is_our_sndbuf_probe(name: str) -> bool:
    """The OVS send-buffer probe's bridge (and its tap) or veth ends."""
    return name.split("@", 1)[0] in (SNDBUF_PROBE_BRIDGE,) + SNDBUF_PROBE_VETHS


def is_our_nft_table(name: str) -> bool:
    return name.startswith(_NFT_TABLE_PREFIX) and len(name) > len(_NFT_TABLE_PREFIX)


def host_shell_name(cmdline: list[str]) -> str | None:
    """The host name if argv is a Mininet host shell of ours (`bash ... -is mininet:h3`)."""
    if len(cmdline) < 2 or os.path.basename(cmdline[0]) != "bash" or "-is" not in cmdline:
        return None
    m = _HOST_SHELL_RE.match(cmdline[-1])
    return m.group(1) if m else None


def is_controller_cmdline(cmdline: list[str]) -> bool:
    return "controller.app" in cmdline and any("python" in os.path.basename(a) for a in cmdline[:1])


def parse_nft_tables(text: str) -> list[tuple[str, str]]:
    """`nft list tables` output -> [(family, name)]."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "table":
            out.append((parts[1], parts[2]))
    return out


# ---------------------------------------------------------------- system adapters


def _run(argv: list[str]) -> str:
    return run_command(argv, timeout=60)


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def _netns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def _netns_intfs(pid: int) -> list[str]:
    """Interfaces of the namespace pid lives in (/proc/PID/net/dev is per namespace)."""
    try:
        with open(f"/proc/{pid}/net/dev") as f:
            lines = f.read().splitlines()[2:]
    except OSError:
        return []
    return [line.split(":", 1)[0].strip() for line in lines]


def _pids() -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def our_host_shells() -> dict[int, str]:
    """pid -> host name for live Mininet host shells of ours (name AND interfaces must match)."""
    out = {}
    for pid in _pids():
        name = host_shell_name(_cmdline(pid))
        if name and any(i.startswith(name + "-p") and is_our_host_intf(i)
                        for i in _netns_intfs(pid)):
            out[pid] = name
    return out


def processes_in_namespaces(inodes: set[int]) -> list[int]:
    me = os.getpid()
    return [pid for pid in _pids() if pid != me and _netns_inode(pid) in inodes]


def ovs_bridges() -> list[str]:
    return [b for b in _run(["ovs-vsctl", "--timeout=10", "list-br"]).split() if b]


def root_links() -> list[str]:
    out = _run(["ip", "-o", "link", "show"])
    names = []
    for line in out.splitlines():
        parts = line.split(":", 2)
        if len(parts) >= 2:
            names.append(parts[1].strip().split("@", 1)[0])
    return names


def nft_tables() -> list[tuple[str, str]]:
    return parse_nft_tables(_run(["nft", "list", "tables"]))


def _kill_pids(pids: list[int], grace_s: float = 3.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for pid in pids:
            try:
                os.kill(pid, sig)
                alive.append(pid)
            except ProcessLookupError:
                pass
        if not alive:
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            alive = [p for p in alive if os.path.exists(f"/proc/{p}") and not _is_zombie(p)]
            if not alive:
                return
            time.sleep(0.05)
        pids = alive


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def stale_controller_pid() -> int | None:
    try:
        pid = int(open(CONTROLLER_PID_FILE).read().strip())
    except (OSError, ValueError):
        return None
    return pid if is_controller_cmdline(_cmdline(pid)) else None


@dataclass
class Leftovers:
    controller_pid: int | None = None
    host_shells: dict[int, str] = field(default_factory=dict)
    namespace_pids: list[int] = field(default_factory=list)
    bridges: list[str] = field(default_factory=list)
    switch_intfs: list[str] = field(default_factory=list)
    nft_tables: list[tuple[str, str]] = field(default_factory=list)
    cgroups: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.controller_pid or self.host_shells or self.namespace_pids
                    or self.bridges or self.switch_intfs or self.nft_tables or self.cgroups)

    def describe(self) -> str:
        parts = []
        if self.controller_pid:
            parts.append(f"controller pid {self.controller_pid}")
        if self.host_shells:
            parts.append("host shells " + ", ".join(f"{n}(pid {p})"
                                                    for p, n in sorted(self.host_shells.items())))
        if self.namespace_pids:
            parts.append(f"processes in host namespaces {sorted(self.namespace_pids)}")
        if self.bridges:
            parts.append("bridges " + ", ".join(self.bridges))
        if self.switch_intfs:
            parts.append("veths " + ", ".join(self.switch_intfs))
        if self.nft_tables:
            parts.append("nft tables " + ", ".join(f"{f} {n}" for f, n in self.nft_tables))
        if self.cgroups:
            parts.append("cgroups " + ", ".join(self.cgroups))
        return "; ".join(parts) or "nothing"


def find_leftovers() -> Leftovers:
    shells = our_host_shells()
    inodes = {i for i in (_netns_inode(p) for p in shells) if i is not None}
    inodes.discard(_netns_inode(1))  # never the root namespace
    ns_pids = [p for p in processes_in_namespaces(inodes) if p not in shells]
    return Leftovers(
        controller_pid=stale_controller_pid(),
        host_shells=shells,
        namespace_pids=ns_pids,
        bridges=[b for b in ovs_bridges() if is_our_switch(b) or is_our_sndbuf_probe(b)],
        switch_intfs=[i for i in root_links() if is_our_switch_intf(i) or is_our_sndbuf_probe(i)],
        nft_tables=[t for t in nft_tables() if is_our_nft_table(t[1])],
        cgroups=cgroups.leftover_groups(),
    )


def clean(verbose: bool = False) -> Leftovers:
    """Remove our leftovers; returns what was found. Raises if something could not be removed."""
    found = find_leftovers()
    if found.controller_pid:
        _kill_pids([found.controller_pid])
    _kill_pids(found.namespace_pids + list(found.host_shells))
    if found.bridges:
        argv = ["ovs-vsctl", "--timeout=20"]
        for br in found.bridges:
            argv += ["--", "--if-exists", "del-br", br]
        _run(argv)
    # Userspace bridges leave a tap named after the bridge; veths may outlive a crashed run.
    links = set(root_links())
    # A crashed trimming run may have left its tc BPF program on our switch ports: take it off
    # first (only our interfaces; deleting the veth would drop it too, this makes it explicit).
    detach_trim_programs(sorted(i for i in links if is_our_switch_intf(i)))
    for name in found.bridges + [i for i in links
                                 if is_our_switch_intf(i) or is_our_sndbuf_probe(i)]:
        if name in links:
            with contextlib.suppress(CommandFailed):   # gone with its peer already
                _run(["ip", "link", "del", "dev", name])
    for family, name in found.nft_tables:
        _run(["nft", "delete", "table", family, name])
    if found.cgroups:
        undone = cgroups.remove_leftovers()
        if undone:
            raise RuntimeError("cleanup could not remove the scheduling's cgroups: "
                               + "; ".join(undone))
    try:
        os.unlink(CONTROLLER_PID_FILE)
    except FileNotFoundError:
        pass
    remove_control_secrets()
    after = find_leftovers()
    if not after.empty():
        raise RuntimeError(f"cleanup could not remove: {after.describe()}")
    if verbose:
        print(f"mrclab clean: removed {found.describe()}")
    return found


def remove_control_secrets() -> None:
    """A crashed fabric's API tokens and OpenFlow certificates (emulation/network/control_secrets.py):
    they open nothing once the controller is gone, but they are ours to remove."""
    try:
        names = os.listdir(RUN_DIR)
    except FileNotFoundError:
        return
    for name in names:
        if re.fullmatch(r"api-token-\d+", name):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(RUN_DIR, name))
    pki = os.path.join(RUN_DIR, "of-pki")
    if os.path.isdir(pki) and not os.path.islink(pki):
        for name in os.listdir(pki):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(pki, name))
        with contextlib.suppress(OSError):
            os.rmdir(pki)


def detach_trim_programs(intfs: list[str]) -> list[str]:
    """Remove the trimming program (emulation/network/trimming.py) from these interfaces of ours; returns
    the ones it was on. Best effort: a port that vanished meanwhile is skipped."""
    done = []
    for intf in intfs:
        if not is_our_switch_intf(intf):
            raise ValueError(f"refusing to touch {intf!r}: not an MRC lab switch port")
        try:
            if trimming.detach(intf):
                done.append(intf)
        except trimming.TrimmingError:
            continue
    return done


def write_state(state: dict) -> None:
    os.makedirs(RUN_DIR, exist_ok=True)
    tmp = STATE_FILE + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f)
    os.replace(tmp, STATE_FILE)
