"""Mininet's cluster nodes (mininet.examples.cluster RemoteHost, RemoteOVSSwitch) with mrclab's
ssh: a node on another server is reached as every other ssh of mrclab reaches it
(emulation/cluster/preflight.py ssh_base: batch mode, the cluster's ssh_config when
MRCLAB_SSH_CONFIG names one) and, logged in as root, without sudo on either side.

Why subclasses: Mininet's RemoteMixin runs `sudo -E -u USER ssh USER@IP` here and `sudo -E CMD`
there, so both servers need sudo even for root, and it addresses a server by IP, which an
ssh_config entry (keys, users per server, `mrclab local-server`'s) is not found by. The preflight
accepts a root login without sudo; so do these nodes.
"""
from __future__ import annotations

import os
import signal
import subprocess

from mininet.examples.cluster import RemoteMixin, RemoteOVSSwitch
from mininet.node import Host

from emulation.cluster import preflight

ROOT = "root"
SHELL_TIMEOUT_S = 30          # ssh's log-in and a shell's start on a loaded server take seconds
SHELL_EXIT_S = 5              # a hung-up remote shell's ssh exits at once when its server answers


class RemoteNodeError(RuntimeError):
    """A node on another server that could not be started; the message says which and why."""


class MrclabSSH(RemoteMixin):
    """RemoteMixin's remote shell and commands over mrclab's ssh. Keywords as RemoteMixin's:
    server (the name ssh knows: a host name, an address or an ssh_config entry), user (default
    root), serverIP (the server's address on the management network: the tunnels' ends)."""

    def __init__(self, name, server="localhost", user=ROOT, serverIP=None, **kwargs):  # noqa: N803
        super().__init__(name, server=server, user=user, serverIP=serverIP, **kwargs)

    def ssh_command(self) -> list[str]:
        """ssh to this node's server, with a terminal (RemoteMixin drops `-tt` for popen)."""
        return preflight.ssh_base() + ["-q", "-tt", f"{self.user}@{self.server}"]

    def startShell(self, *args, **kwargs):  # noqa: N802 Mininet's name
        """Mininet waits for a shell's prompt without end, so a remote shell that cannot start
        (ssh refused, mnexec or sudo missing there) would hang the run: the same command path
        runs `mnexec -c true` first, within SHELL_TIMEOUT_S, and a failure raises
        RemoteNodeError naming the server and what it said."""
        if self.isRemote:
            self.sshcmd = self.ssh_command()    # before anything runs over it
            self._check_shell()
        super().startShell(*args, **kwargs)

    def _check_shell(self) -> None:
        proc = self._popen(["mnexec", "-c", "true"], tt=False, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            out, _ = proc.communicate(timeout=SHELL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            out, code = f"no answer within {SHELL_TIMEOUT_S:g} s", None
        else:
            code = proc.returncode
        if code != 0:
            said = (out or b"").decode(errors="replace") if isinstance(out, bytes) else out
            raise RemoteNodeError(
                f"{self.name} on {self.server}: a shell cannot start there ("
                f"{said.strip()[-200:] or f'exit status {code}'}); check the server with the "
                f"preflight (mrclab run ... --servers ... --validate-only)")

    def terminate(self):
        """Mininet's terminate hangs up the shell's process group and its cleanup then waits
        for the shell without end: an ssh whose connection no longer answers would hold the
        fabric's teardown forever, so a remote shell's ssh still running SHELL_EXIT_S after the
        hang-up is killed first."""
        shell = self.shell
        if self.isRemote and shell is not None and shell.poll() is None:
            try:
                os.killpg(shell.pid, signal.SIGHUP)
                shell.wait(SHELL_EXIT_S)
            except subprocess.TimeoutExpired:
                shell.kill()
                shell.wait()
            except ProcessLookupError:
                pass
        super().terminate()

    def _popen(self, cmd, sudo=True, tt=True, **params):
        if self.isRemote:               # root there needs no sudo, and a server need not have it
            sudo = sudo and self.user != ROOT
        return super()._popen(cmd, sudo=sudo, tt=tt, **params)


class ClusterHost(MrclabSSH, Host):
    """A host on any server of the cluster (on the first one, a plain Mininet Host)."""


class ClusterOVSSwitch(MrclabSSH, RemoteOVSSwitch):
    """An Open vSwitch bridge on any server of the cluster, in that server's ovs-vswitchd."""
