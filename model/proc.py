"""The one way MRC lab runs an external command (ip, tc, nft, ovs-vsctl, make): checked.

Mininet's habit is to log a failed tc/ip command and carry on; here a failure raises, naming the
command and its stderr. Callers pass their own exception type (FabricError, TrimmingError, the
controller API's CommandError) so their callers keep catching what they always caught.
"""
from __future__ import annotations

import subprocess


class CommandFailed(RuntimeError):
    """A command could not run, timed out, or exited non-zero."""


def in_netns(netns_pid: int | None, argv: list[str]) -> list[str]:
    """argv run inside the network namespace of process netns_pid (unchanged for None)."""
    return list(argv) if netns_pid is None else ["nsenter", "-t", str(netns_pid), "-n", *argv]


def run_checked(argv: list[str], *, timeout: float = 60, what: str = "",
                netns_pid: int | None = None, error: type[Exception] = CommandFailed) -> str:
    """Run one command and return its stdout; raise `error` with the command line and its
    stderr (or stdout) when it cannot start, times out, or exits non-zero."""
    full = in_netns(netns_pid, argv)
    prefix = f"{what}: " if what else ""
    line = " ".join(full)
    try:
        proc = subprocess.run(full, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise error(f"{prefix}command not found: {full[0]}") from None
    except subprocess.TimeoutExpired:
        raise error(f"{prefix}timed out after {timeout:g}s: {line}") from None
    except OSError as exc:
        raise error(f"{prefix}{line}: could not run: {exc}") from None
    if proc.returncode != 0:
        raise error(f"{prefix}command failed (exit {proc.returncode}): {line}: "
                    f"{(proc.stderr or proc.stdout).strip()}")
    return proc.stdout
