"""Commands on the servers of a fabric spread over several: on the first server (this machine)
as they are, on another one over mrclab's ssh as root (model/ssh.py).

Why batches: a fabric configures every switch port with several `ip`, `tc` and `ovs-vsctl`
commands, and one ssh login per command would cost a few hundred logins per remote server.
A remote batch is one ssh running a shell script that stops at the first failure and says which
command it was and what it printed, so a failure still raises naming the command, as
model/proc.py's run_checked does on this machine.

The argv and script builders are pure (tested on text); Servers runs them.
"""
from __future__ import annotations

import ipaddress
import shlex
import socket
import subprocess

from emulation.cluster import preflight
from emulation.cluster.placement import Placement
from model import ssh
from model.proc import run_checked

FAILED_MARK = "mrclab-batch-failed:"   # the batch script's line naming the command that failed
DEFAULT_TIMEOUT_S = 120


def batch_script(argvs: list[list[str]]) -> str:
    """A POSIX shell script running argvs in order; at the first failure it prints FAILED_MARK,
    the exit status and the command on one line, and exits with that status."""
    lines = []
    for argv in argvs:
        cmd = shlex.join(argv)
        lines.append(f"{cmd} || {{ s=$?; printf '%s %s %s\\n' {shlex.quote(FAILED_MARK)} "
                     f"\"$s\" {shlex.quote(cmd)} >&2; exit \"$s\"; }}")
    return "\n".join(lines) + "\n"


def batch_failure(stderr: str) -> tuple[str, str]:
    """(the failed command, what it printed before the mark) from a batch's stderr; ("", all
    of it) when no mark is there (ssh itself failed)."""
    before, sep, after = stderr.rpartition(FAILED_MARK)
    if not sep:
        return "", stderr.strip()
    line = after.strip().split(" ", 1)
    return (line[1] if len(line) > 1 else ""), before.strip()


def put_argv(path: str, mode: int = 0o600) -> list[str]:
    """The command that writes its stdin to `path` with `mode`, its directory made private
    (0700) when missing."""
    directory = path.rsplit("/", 1)[0] or "/"
    return ["sh", "-c", f"umask 077 && mkdir -p {shlex.quote(directory)} && "
                        f"cat > {shlex.quote(path)} && chmod {mode:o} {shlex.quote(path)}"]


def ssh_hostname(ssh_g_output: str) -> str | None:
    """The host name ssh connects to for a server, from `ssh -G server`'s "hostname" line."""
    for line in ssh_g_output.splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "hostname" and value.strip():
            return value.strip()
    return None


def ipv4_of(name: str) -> str | None:
    """name when it is an IPv4 address, else None."""
    try:
        return str(ipaddress.IPv4Address(name))
    except ValueError:
        return None


class Servers:
    """Where each node of a placement runs and how a command reaches it. `error` is the
    exception type failures raise (the fabric's FabricError)."""

    def __init__(self, placement: Placement, error: type[Exception] = RuntimeError):
        self.placement = placement
        self.error = error
        self._addresses: dict[str, str] = {}

    @property
    def local(self) -> str:
        return self.placement.local

    def server_of(self, node: str) -> str:
        return self.placement.server_of[node]

    def is_local(self, server: str) -> bool:
        return server == self.local

    def remote_servers(self) -> list[str]:
        return [s for s in self.placement.servers if not self.is_local(s)]

    def argv_on(self, server: str, argv: list[str], stdin: bool = False) -> list[str]:
        """argv as it runs on `server`: unchanged here, over ssh as root elsewhere (reading
        its stdin only when `stdin`: model/ssh.py root_argv)."""
        if self.is_local(server):
            return list(argv)
        return ssh.root_argv(server, argv, stdin)

    def run(self, server: str, argv: list[str], what: str = "",
            timeout: float = DEFAULT_TIMEOUT_S) -> str:
        return run_checked(self.argv_on(server, argv), timeout=timeout,
                           what=f"{what} on {server}" if what else server, error=self.error)

    def run_batch(self, server: str, argvs: list[list[str]], what: str = "",
                  timeout: float = DEFAULT_TIMEOUT_S) -> None:
        """argvs in order on `server`, stopping at the first failure (raised, naming it)."""
        if not argvs:
            return
        if self.is_local(server):
            for argv in argvs:
                run_checked(argv, timeout=timeout, what=what, error=self.error)
            return
        self._stdin_run(server, ["sh", "-s"], batch_script(argvs), what, timeout)

    def put(self, server: str, path: str, data: str, mode: int = 0o600, what: str = "") -> None:
        """Write `data` to `path` on a remote server (its directory made private if missing)."""
        self._stdin_run(server, put_argv(path, mode), data, what or f"writing {path}",
                        DEFAULT_TIMEOUT_S)

    def _stdin_run(self, server: str, argv: list[str], data: str, what: str,
                   timeout: float) -> None:
        full = self.argv_on(server, argv, stdin=True)
        try:
            done = subprocess.run(full, input=data, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            raise self.error(f"{what} on {server}: no answer within {timeout:g} s") from None
        except OSError as exc:
            raise self.error(f"{what} on {server}: ssh could not run: {exc}") from None
        if done.returncode == 0:
            return
        failed, said = batch_failure(done.stderr or done.stdout)
        if done.returncode == preflight.SSH_FAILED and not failed:
            raise self.error(f"{what} on {server}: ssh failed ({said[-200:]}); check the server "
                             "with the preflight (mrclab run ... --validate-only)")
        raise self.error(f"{what} on {server}: command failed (exit {done.returncode}): "
                         f"{failed or ' '.join(argv)}: {said[-300:]}")

    def address(self, server: str) -> str:
        """The server's IPv4 address on the management network: what the tunnels' ends and the
        switches' controller connection use. The name as ssh resolves it (ssh_config's
        HostName, then DNS)."""
        if server not in self._addresses:
            self._addresses[server] = self._resolve(server)
        return self._addresses[server]

    def _resolve(self, server: str) -> str:
        name = server.rsplit("@", 1)[-1]
        try:
            out = subprocess.run(preflight.ssh_base() + ["-G", server], capture_output=True,
                                 text=True, timeout=preflight.TIMEOUT_S).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        name = ssh_hostname(out) or name
        address = ipv4_of(name)
        if address is None:
            try:
                address = socket.gethostbyname(name)
            except OSError as exc:
                raise self.error(f"server {server}: its address ({name}) does not resolve: "
                                 f"{exc}") from None
        return address
