"""How MRC lab reaches another server of a cluster: ssh in batch mode, with the cluster's own
ssh_config when one is named (keys, users and addresses per server; `mrclab local-server`
writes one), and a command run there as root.

Stated once here because the fabric (emulation/cluster) and the controller, which runs a
fault's commands on the server of the node it concerns, both reach servers this way.
"""
from __future__ import annotations

import os
import shlex
import signal

SSH = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5"]
# An ssh_config of the cluster's own, passed to every ssh mrclab runs when set.
SSH_CONFIG_ENV = "MRCLAB_SSH_CONFIG"


def ssh_base(environ=os.environ) -> list[str]:
    """ssh with mrclab's options, and the cluster's ssh_config when SSH_CONFIG_ENV names one."""
    config = environ.get(SSH_CONFIG_ENV)
    return SSH + (["-F", config] if config else [])


def ssh_argv(server: str, command: list[str], environ=os.environ) -> list[str]:
    return ssh_base(environ) + [server, shlex.join(command)]


def as_root(command: list[str]) -> list[str]:
    """command run as root on a server: as it is when ssh logged in as root (a server need not
    have sudo), else through `sudo -n`."""
    return ["sh", "-c", 'if [ "$(id -u)" = 0 ]; then exec "$@"; else exec sudo -n "$@"; fi',
            "as_root", *command]


# A command that ends with its ssh connection: ssh's stdin stays open while the connection lives,
# and reads end-of-file once it drops (the local ssh killed, the network gone); a watcher in the
# remote shell then stops the command. Without it, a remote process outlives the ssh that started
# it (sshd gives a command without a terminal no hang-up signal). The same channel carries the
# signals ssh does not forward: a line naming one of FORWARDED_SIGNALS is sent to the command
# (signal_line()). The watcher is a subshell blocked in the shell's own `read`, so stopping it
# leaves no process.
FORWARDED_SIGNALS = ("USR1", "USR2", "INT", "TERM")
TIED_SCRIPT = ('exec 3<&0 </dev/null; "$@" & child=$!; '
               '( while read -r sig <&3; do case "$sig" in '
               + "|".join(FORWARDED_SIGNALS) +
               ') kill -"$sig" "$child" 2>/dev/null;; esac; done; '
               'kill -TERM "$child" 2>/dev/null ) & watcher=$!; '
               'wait "$child"; status=$?; kill "$watcher" 2>/dev/null; '
               'wait "$watcher" 2>/dev/null; exit "$status"')


def tied_to_connection(command: list[str]) -> list[str]:
    """command, stopped (SIGTERM) when its ssh connection's stdin reaches end-of-file, and sent
    each signal whose signal_line() arrives there; its own stdin is /dev/null, its exit status
    the shell's."""
    return ["sh", "-c", TIED_SCRIPT, "tied", *command]


def signal_line(signum: int) -> bytes:
    """What to write into a tied command's connection to send it signal `signum`; ValueError
    for a signal the tie does not forward."""
    name = signal.Signals(signum).name.removeprefix("SIG")
    if name not in FORWARDED_SIGNALS:
        raise ValueError(f"a tied command is sent only {', '.join(FORWARDED_SIGNALS)}; not {name}")
    return f"{name}\n".encode()


def root_argv(server: str, command: list[str], stdin: bool = False,
              environ=os.environ) -> list[str]:
    """command run as root on `server` over ssh. Without `stdin`, ssh reads none (-n): a
    command started beside a terminal or a server loop must not take its input."""
    full = ssh_argv(server, as_root(list(command)), environ)
    return full if stdin else [full[0], "-n", *full[1:]]
