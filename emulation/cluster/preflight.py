"""Before a run over several servers: what every server needs, checked on every server at once,
and what is missing said per server, with what to do about it.

Each server runs one shell script (FACTS_SCRIPT, over ssh for the others, plain sh for the one
mrclab runs on) that prints one `key=value` line per fact:
    sudo     root, or sudo without a password (the fabric is built as root)
    ovs      Open vSwitch answers `ovs-vsctl show` (make setup starts it; userspace datapath)
    mininet  Mininet's mnexec is installed (the cluster's nodes are entered with it)
    vxlan    the kernel has the vxlan module (the tunnels, emulation/cluster/vxlan.py)
    python   the project's .venv Python, major.minor: the same on every server
    commit   the checkout's commit: the same on every server, so every server runs the same code
    dirty    its count of uncommitted changes to tracked files: 0, for the same reason
    mtu@IP   the MTU of the interface toward a peer: the fabric's MTU plus the tunnel's headers
The project is expected at the same path on every server (as a Vagrant share or a checkout).
The facts are parsed and judged here without running anything (parse_facts, problems), so the
rules are tested on text; run() is the part that runs the commands.
"""
from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from emulation.cluster import vxlan
from emulation.cluster.placement import parse_servers
from model.ssh import SSH, SSH_CONFIG_ENV, as_root, ssh_argv, ssh_base  # noqa: F401 - the API

REPO = Path(__file__).resolve().parents[2]
SSH_FAILED = 255                  # ssh's own exit status when it cannot log in
TIMEOUT_S = 30
FACTS = ("sudo", "ovs", "mininet", "vxlan", "python", "commit", "dirty")

FACTS_SCRIPT = r"""
say() { printf '%s=%s\n' "$1" "$2"; }
yes_no() { if "$@" >/dev/null 2>&1; then echo ok; else echo no; fi; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }
say sudo "$(yes_no as_root true)"
say ovs "$(yes_no as_root ovs-vsctl --timeout=3 show)"
say mininet "$(yes_no command -v mnexec)"
say vxlan "$(yes_no sh -c 'test -d /sys/module/vxlan || /sbin/modinfo vxlan || modinfo vxlan')"
say python "$("$repo/.venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' \
    2>/dev/null || echo none)"
say commit "$(git -c safe.directory="$repo" -C "$repo" rev-parse HEAD 2>/dev/null || echo none)"
say dirty "$(git -c safe.directory="$repo" -C "$repo" status --porcelain \
    --untracked-files=no 2>/dev/null | wc -l)"
for peer in $peers; do
  dev=$(ip route get "$peer" 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p')
  say "mtu@$peer" "$(cat "/sys/class/net/$dev/mtu" 2>/dev/null || echo none)"
done
"""


def facts_script(repo: str | Path, peers: list[str]) -> str:
    """The script with the checkout's path and the peers' IPv4 addresses filled in."""
    for peer in peers:
        vxlan.route_get_argv(peer)              # an IPv4 address, or TunnelError
    return (f"repo={shlex.quote(str(repo))}\npeers={shlex.quote(' '.join(peers))}\n"
            + FACTS_SCRIPT)


def parse_facts(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key:
            out[key] = value.strip()
    return out


def problems(facts: dict[str, str], here: dict[str, str], fabric_mtu: int,
             repo: str | Path = REPO) -> list[str]:
    """What one server lacks, each with what to do; `here`: the facts of the machine mrclab
    runs on (the Python and the commit every server must share)."""
    out = [f"reported no {key} (the check script stopped early)" for key in FACTS
           if key not in facts]
    setup = "run `sudo make setup` there"
    if facts.get("sudo") == "no":
        out.append("not root, and sudo is missing or asks for a password: the fabric is built "
                   "as root (log in as root, or give the user a NOPASSWD sudo rule)")
    if facts.get("ovs") == "no":
        out.append(f"Open vSwitch does not answer `ovs-vsctl show`: {setup}")
    if facts.get("mininet") == "no":
        out.append(f"Mininet's mnexec is missing: {setup}")
    if facts.get("vxlan") == "no":
        out.append("the kernel has no vxlan module: the links between servers are VXLAN tunnels")
    python = facts.get("python")
    if python == "none":
        out.append(f"no Python at {repo}/.venv/bin/python: check the project out at {repo} "
                   f"and {setup}")
    elif python and here.get("python") not in (None, python):
        out.append(f"Python {python} there, {here['python']} here: every server must run the "
                   "same Python")
    commit = facts.get("commit")
    if commit == "none":
        out.append(f"no git checkout of the project at {repo}")
    elif commit and here.get("commit") not in (None, "none", commit):
        out.append(f"project at commit {commit[:12]}, here {here['commit'][:12]}: check out the "
                   "same commit on every server")
    if facts.get("dirty", "0") not in ("0", ""):
        out.append(f"{facts['dirty']} uncommitted changes to the project's files: every server "
                   "must run the same code, so commit them and check the commit out everywhere")
    need = vxlan.underlay_mtu_needed(fabric_mtu)
    for key, value in facts.items():
        if not key.startswith("mtu@"):
            continue
        peer = key[4:]
        if not value.isdigit():
            out.append(f"no route to {peer} (the management network)")
        elif int(value) < need:
            out.append(f"the interface toward {peer} has MTU {value}; a tunnelled {fabric_mtu}-"
                       f"byte packet needs {need} (raise it, or lower [fabric] mtu to "
                       f"{int(value) - vxlan.VXLAN_OVERHEAD})")
    return out


def report(results: dict[str, list[str]]) -> str:
    """One line when every server is ready, else each server's problems."""
    if not any(results.values()):
        return f"preflight: every server ready ({', '.join(results)})"
    lines = ["preflight: a server is not ready:"]
    for server, found in results.items():
        lines.append(f"  {server}: " + ("ready" if not found else "; ".join(found)))
    return "\n".join(lines)


def run_command(argv: list[str], script: str) -> tuple[int, str, str]:
    """argv with `script` on its stdin: (exit status, stdout, stderr); a command that cannot
    start or does not answer in TIMEOUT_S counts as ssh's own failure."""
    try:
        done = subprocess.run(argv, input=script, capture_output=True, text=True,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return SSH_FAILED, "", f"no answer within {TIMEOUT_S} s"
    except OSError as exc:
        return SSH_FAILED, "", f"{argv[0]}: {exc.strerror}"
    return done.returncode, done.stdout, done.stderr


def run(servers, addresses: dict[str, str], fabric_mtu: int, repo: str | Path = REPO,
        runner=run_command) -> dict[str, list[str]]:
    """Every server's problems. addresses: server -> its IPv4 address on the management
    network (the first server's as the others reach it). runner(argv, script) -> (exit status,
    stdout, stderr)."""
    servers = parse_servers(servers)
    local, others = servers[0], servers[1:]
    peers = {local: [addresses[s] for s in others]}
    peers.update({s: [addresses[local]] for s in others})
    gathered: dict[str, dict] = {}
    results: dict[str, list[str]] = {}
    for server in servers:
        argv = ["sh", "-s"] if server == local else ssh_argv(server, ["sh", "-s"])
        code, out, err = runner(argv, facts_script(repo, peers[server]))
        if code == SSH_FAILED and server != local:
            last = (err.strip().splitlines() or ["no message"])[-1]
            results[server] = [f"ssh {server} failed ({last}): it must log in without a "
                               f"password (ssh-copy-id {server})"]
            continue
        gathered[server] = parse_facts(out)
        results[server] = []
    here = gathered.get(local, {})
    for server, facts in gathered.items():
        results[server] = problems(facts, here, fabric_mtu, repo)
    return {s: results[s] for s in servers}
