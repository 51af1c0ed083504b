"""A second server on this machine: a run over several servers tried, and tested, without a
second machine (docs/cluster.md, "A server on this machine").

A local server is what a remote one is to mrclab: a host name that ssh logs into, with its own
Open vSwitch and its own network stack, reached over a management network. Here it is
    its own network, mount, UTS and PID namespaces, held by one process (the "holder", PID 1 of
        the PID namespace: killing it ends every process of the server at once)
    a veth pair as the management network: MGMT_PREFIX<i>a here, MGMT_PREFIX<i>b there, addresses
        10.213.<i>.1 and .2 (/30), MTU MGMT_MTU (a tunnelled jumbo frame fits)
    its own /sys (sysfs of its network namespace) and a private /run, /etc/openvswitch and
        /var/log/openvswitch, so its ovsdb-server and ovs-vswitchd (userspace datapath, as on
        the first server) are its own
    /etc/ssh replaced by its state directory (sshd_config, host key, the one authorized key),
        and an sshd listening on .2 only
The state directory, STATE_ROOT/<name>/, holds the keys, the holder's PID and an ssh_config for
this machine's side; STATE_ROOT/ssh_config includes every local server's, so
`MRCLAB_SSH_CONFIG=STATE_ROOT/ssh_config` (emulation/cluster/preflight.py) reaches them all by
name. The filesystem is this machine's: the checkout, its .venv and its commit are the same on
both sides, as the preflight requires of every server.

Debian's sshd refuses to start without its privilege-separation user, and without PAM refuses
a key to a root account locked with "!", so the server's views of /etc/passwd and /etc/shadow
are copies with that user added and root's lock written as "*" (no password either way);
nothing changes outside the namespaces.
`make setup` unpacks sshd into build/openssh when the machine has none, without installing
a service that would listen on this machine's own network.

plan_* functions are pure (the commands and files, as data); up() and down() run them.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from emulation.network import ovs_service
from model.proc import run_checked

REPO = Path(__file__).resolve().parents[2]
STATE_ROOT = Path("/run/mrclab-servers")
SSH_CONFIG = STATE_ROOT / "ssh_config"
MGMT_PREFIX = "mrcmgmt"
MGMT_MTU = 9100                 # a 9000-byte fabric frame plus VXLAN's 50 bytes, with room
MAX_INDEX = 63
HOLDER_MARK = "mrclab-server-"  # the holder's argv[0]: mark + name (down() checks it)
NAME_RE = re.compile(r"[a-z][a-z0-9-]{0,30}")
SSHD_PATHS = (Path("/usr/sbin/sshd"), REPO / "build" / "openssh" / "usr" / "sbin" / "sshd")
PRIVSEP_USER = "sshd"
NOBODY_GID = 65534
START_TIMEOUT_S = 30
HELP = ("a second server on this machine (its own namespaces, Open vSwitch and sshd), to try "
        "or test a run over several servers")


class LocalServerError(RuntimeError):
    """A local server that could not be set up or taken down; the message says what and why."""


@dataclass(frozen=True)
class LocalServer:
    name: str
    index: int

    @property
    def state(self) -> Path:
        return STATE_ROOT / self.name

    @property
    def here_intf(self) -> str:
        return f"{MGMT_PREFIX}{self.index}a"

    @property
    def there_intf(self) -> str:
        return f"{MGMT_PREFIX}{self.index}b"

    @property
    def here_address(self) -> str:
        return f"10.213.{self.index}.1"

    @property
    def address(self) -> str:
        """The server's address on the management network (what ssh and the tunnels use)."""
        return f"10.213.{self.index}.2"


def server(name: str, index: int) -> LocalServer:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise LocalServerError(f"a local server's name must be lower-case letters, digits and "
                               f"dashes, starting with a letter (at most 31), got {name!r}")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= MAX_INDEX:
        raise LocalServerError(f"a local server's index must be 0..{MAX_INDEX} (its management "
                               f"subnet 10.213.<index>.0/30), got {index!r}")
    return LocalServer(name, index)


# ---------------------------------------------------------------- what it is made of (pure)


def sshd_config(srv: LocalServer) -> str:
    """The server's sshd_config, read as /etc/ssh/sshd_config inside its mount namespace."""
    return "\n".join([
        f"ListenAddress {srv.address}",
        "Port 22",
        "HostKey /etc/ssh/host_key",
        "AuthorizedKeysFile /etc/ssh/authorized_keys",
        "PermitRootLogin prohibit-password",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        # the state directory is root's and 0700, but sshd's walk up to / would also judge /run
        "StrictModes no",
        "PidFile /run/sshd.pid",
        "AcceptEnv LANG LC_*",
        "",
    ])


def client_config(srv: LocalServer) -> str:
    """This machine's ssh_config entry for the server: its name, address and key. Host keys are
    not remembered: the server's is made anew at every up()."""
    return "\n".join([
        f"Host {srv.name}",
        f"  HostName {srv.address}",
        "  User root",
        f"  IdentityFile {srv.state / 'client_key'}",
        "  IdentitiesOnly yes",
        "  StrictHostKeyChecking no",
        "  UserKnownHostsFile /dev/null",
        "  LogLevel ERROR",
        "",
    ])


def passwd_with_privsep_user(passwd: str) -> str:
    """/etc/passwd as the server sees it: sshd's privilege-separation user added when absent."""
    if any(line.split(":", 1)[0] == PRIVSEP_USER for line in passwd.splitlines()):
        return passwd
    used = {int(f[2]) for f in (line.split(":") for line in passwd.splitlines())
            if len(f) > 2 and f[2].isdigit()}
    uid = next(u for u in range(100, 1000) if u not in used)
    tail = "" if passwd.endswith("\n") or not passwd else "\n"
    return (f"{passwd}{tail}{PRIVSEP_USER}:x:{uid}:{NOBODY_GID}::/run/sshd:"
            "/usr/sbin/nologin\n")


def shadow_with_root_unlocked(shadow: str) -> str:
    """/etc/shadow as the server sees it: a root password locked with "!" becomes "*" (no
    password either way): without PAM, sshd refuses even a key to a locked account."""
    out = []
    for line in shadow.splitlines(keepends=True):
        name, sep, rest = line.partition(":")
        if name == "root" and sep and rest.startswith("!"):
            _, colon, tail = rest.partition(":")
            line = f"root:*{colon}{tail}"
        out.append(line)
    return "".join(out)


def holder_argv(srv: LocalServer) -> list[str]:
    """The process that holds the server's namespaces: PID 1 of its PID namespace."""
    return ["unshare", "--net", "--mount", "--uts", "--pid", "--fork", "--kill-child",
            "--mount-proc",
            "--propagation", "private", "--", "bash", "-c", 'exec -a "$0" sleep infinity',
            HOLDER_MARK + srv.name]


def enter_argv(holder_pid: int, argv: list[str]) -> list[str]:
    """argv run inside the server (all of its namespaces, so it ends with the holder)."""
    return ["nsenter", "--target", str(holder_pid), "--net", "--mount", "--uts", "--pid",
            "--", *argv]


def inside_setup(srv: LocalServer) -> list[list[str]]:
    """The commands that make the server's private filesystem view and network, in order:
    /etc/ssh is bound to the state directory before /run, which holds it, is replaced."""
    state = str(srv.state)
    return [
        ["hostname", srv.name],
        ["mount", "--bind", state, "/etc/ssh"],
        ["mount", "--bind", f"{state}/passwd", "/etc/passwd"],
        ["mount", "--bind", f"{state}/shadow", "/etc/shadow"],
        ["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", "/run"],
        ["mkdir", "-p", "/run/sshd", "/run/openvswitch", "/run/.cgroup"],
        # sysfs shows the network namespace it was mounted in: the server's own interfaces
        # under /sys/class/net; the cgroup mounts on top of the old one are carried over
        ["mount", "--rbind", "/sys/fs/cgroup", "/run/.cgroup"],
        ["mount", "-t", "sysfs", "sysfs", "/sys"],
        ["mount", "--move", "/run/.cgroup", "/sys/fs/cgroup"],
        ["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", "/etc/openvswitch"],
        ["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", "/var/log/openvswitch"],
        ["ip", "link", "set", "lo", "up"],
        ["ip", "addr", "add", f"{srv.address}/30", "dev", srv.there_intf],
        ["ip", "link", "set", srv.there_intf, "mtu", str(MGMT_MTU), "up"],
    ]


def outside_setup(srv: LocalServer, holder_pid: int) -> list[list[str]]:
    """The management veth pair, one end moved into the server."""
    return [
        ["ip", "link", "add", srv.here_intf, "mtu", str(MGMT_MTU), "type", "veth",
         "peer", "name", srv.there_intf, "mtu", str(MGMT_MTU)],
        ["ip", "link", "set", srv.there_intf, "netns", str(holder_pid)],
        ["ip", "addr", "add", f"{srv.here_address}/30", "dev", srv.here_intf],
        ["ip", "link", "set", srv.here_intf, "up"],
    ]


# ---------------------------------------------------------------- running it


def sshd_binary() -> Path:
    for path in SSHD_PATHS:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise LocalServerError("no sshd: install openssh-server, or run `make setup`, which unpacks "
                           "one into build/openssh")


def _run(argv: list[str], what: str) -> str:
    return run_checked(argv, timeout=START_TIMEOUT_S, what=what, error=LocalServerError)


def _child_of(pid: int, timeout_s: float = START_TIMEOUT_S) -> int:
    """unshare --fork's child (the holder, PID 1 inside), once it runs sleep under its mark."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            raise LocalServerError("the namespaces' holder (unshare) exited at start") from None
        for child in children:
            if _is_holder(int(child)):
                return int(child)
        time.sleep(0.05)
    raise LocalServerError(f"the namespaces' holder did not start within {timeout_s:g} s")


def _is_holder(pid: int, name: str | None = None) -> bool:
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except (OSError, UnicodeDecodeError):
        return False
    return argv0 == HOLDER_MARK + name if name else argv0.startswith(HOLDER_MARK)


def _write_state(srv: LocalServer) -> None:
    srv.state.mkdir(parents=True, mode=0o700)
    os.chmod(STATE_ROOT, 0o755)
    for key in ("host_key", "client_key"):
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"mrclab {srv.name}",
              "-f", str(srv.state / key)], f"making {srv.name}'s {key}")
    shutil.copy(srv.state / "client_key.pub", srv.state / "authorized_keys")
    (srv.state / "sshd_config").write_text(sshd_config(srv))
    (srv.state / "ssh_config").write_text(client_config(srv))
    (srv.state / "passwd").write_text(passwd_with_privsep_user(Path("/etc/passwd").read_text()))
    shadow = srv.state / "shadow"
    shadow.touch(mode=0o600)
    shadow.write_text(shadow_with_root_unlocked(Path("/etc/shadow").read_text()))
    SSH_CONFIG.write_text(f"Include {STATE_ROOT}/*/ssh_config\n")


def _start_ovs(holder: int, name: str) -> None:
    """ovsdb-server and ovs-vswitchd as the first server's are started (ovs_service's
    commands), judged by whether they answer: ovs-ctl's exit status also reports the kernel
    module it could not load, which the userspace datapath does not need."""
    for argv in (ovs_service.START_DB, ovs_service.START_SWITCHD):
        try:
            subprocess.run(enter_argv(holder, argv), capture_output=True, timeout=60)
        except subprocess.TimeoutExpired:
            raise LocalServerError(f"starting Open vSwitch in {name} did not finish in 60 s: "
                                   f"{' '.join(argv)}") from None
    for argv in (ovs_service.DB_CHECK, ovs_service.SWITCHD_CHECK):
        _run(enter_argv(holder, argv), f"Open vSwitch in {name} does not answer")


def _record(srv: LocalServer, record: dict) -> None:
    """What down() needs to undo: the holder's PID and whether the veth pair is ours."""
    (srv.state / "server.json").write_text(json.dumps(record))


def up(name: str = "mrclab-b", index: int = 0) -> LocalServer:
    """Start a local server; LocalServerError (everything started so far taken down) when any
    step fails. Root only."""
    srv = server(name, index)
    if srv.state.exists():
        raise LocalServerError(f"a local server {name!r} is already up ({srv.state}); "
                               f"take it down first: mrclab local-server down {name}")
    sshd = sshd_binary()
    proc = None
    try:
        _write_state(srv)
        proc = subprocess.Popen(holder_argv(srv), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        holder = _child_of(proc.pid)
        record = {"name": srv.name, "index": srv.index, "holder": holder, "link": False}
        _record(srv, record)
        link, *rest = outside_setup(srv, holder)
        _run(link, f"{name}'s management link")
        _record(srv, {**record, "link": True})     # ours to delete from here on
        for argv in rest:
            _run(argv, f"{name}'s management link")
        for argv in inside_setup(srv):
            _run(enter_argv(holder, argv), f"setting up {name}")
        _start_ovs(holder, name)
        _run(enter_argv(holder, [str(sshd)]), f"starting sshd in {name}")
    except BaseException:
        if proc is not None:         # --kill-child: the holder, and so the server, go with it
            proc.kill()
            proc.wait(START_TIMEOUT_S)
        down(name, quiet=True)
        raise
    return srv


def down(name: str = "mrclab-b", quiet: bool = False) -> bool:
    """Take a local server down: its holder killed (every process inside ends with it, its
    namespaces and the veth pair with them), its state removed. False when it was not up."""
    state = STATE_ROOT / name
    if not state.exists():
        return False
    try:
        record = json.loads((state / "server.json").read_text())
        pid, srv = int(record["holder"]), server(name, int(record["index"]))
        link = record.get("link") is True
    except (OSError, ValueError, KeyError, TypeError, AttributeError, LocalServerError):
        pid = srv = None
        link = False
    if pid is not None and _is_holder(pid, name):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + START_TIMEOUT_S
        while _is_holder(pid, name) and time.monotonic() < deadline:
            time.sleep(0.05)
    if link and srv is not None and Path(f"/sys/class/net/{srv.here_intf}").exists():
        subprocess.run(["ip", "link", "del", srv.here_intf], capture_output=True, timeout=30)
    shutil.rmtree(state, ignore_errors=quiet)
    if STATE_ROOT.exists() and not any(p.is_dir() for p in STATE_ROOT.iterdir()):
        shutil.rmtree(STATE_ROOT, ignore_errors=True)
    return True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("up", "down"),
                        help="up: make the server and start its Open vSwitch and sshd; down: "
                             "end it and everything in it")
    parser.add_argument("name", nargs="?", default="mrclab-b",
                        help="the server's name, as ssh and [cluster] servers know it "
                             "(default mrclab-b)")
    parser.add_argument("--index", type=int, default=0,
                        help="management subnet 10.213.INDEX.0/30, one per local server "
                             "(default 0)")


def main(args: argparse.Namespace | list[str] | None = None) -> int:
    if not isinstance(args, argparse.Namespace):
        parser = argparse.ArgumentParser(prog="mrclab local-server", description=HELP)
        add_arguments(parser)
        args = parser.parse_args(sys.argv[1:] if args is None else args)
    if os.geteuid() != 0:
        print("mrclab local-server: needs root (namespaces, veths, sshd)", file=sys.stderr)
        return 2
    try:
        if args.action == "up":
            srv = up(args.name, args.index)
            print(json.dumps({"server": srv.name, "address": srv.address,
                              "ssh_config": str(SSH_CONFIG)}))
            print(f"mrclab local-server: {srv.name} is up at {srv.address}; reach it with "
                  f"MRCLAB_SSH_CONFIG={SSH_CONFIG} (mrclab) or ssh -F {SSH_CONFIG} {srv.name}",
                  file=sys.stderr)
        elif not down(args.name):
            print(f"mrclab local-server: no local server {args.name!r} is up", file=sys.stderr)
    except LocalServerError as exc:
        print(f"mrclab local-server: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
