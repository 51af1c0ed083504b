"""`mrclab clean --servers a,b`: after a crash, every server's own clean-up. The first server is
this machine, cleaned as `mrclab clean` cleans it; each other one runs its own `mrclab clean`
over ssh, with the project's Python at the same path (emulation/cluster/preflight.py), so the
same rules decide what is ours there (emulation/network/cleanup.py): switches and their
interfaces, a switch's tunnel ends among them (named as its interfaces), host shells, whose
namespaces take their tunnel ends with them, nft tables and the controller.
"""
from __future__ import annotations

from pathlib import Path

from emulation.cluster import preflight
from emulation.cluster.placement import parse_servers


def clean_argv(server: str, repo: str | Path = preflight.REPO, wait_s: float = 5.0) -> list[str]:
    """The ssh command that runs `mrclab clean` on `server` as root."""
    return preflight.ssh_argv(server, preflight.as_root([
        f"{repo}/.venv/bin/python", "-m", "emulation.cli", "clean", "--wait-s", f"{wait_s:g}"]))


def clean_others(servers, repo: str | Path = preflight.REPO, wait_s: float = 5.0,
                 runner=None, say=print) -> list[str]:
    """Clean every server but the first (this machine's is the caller's); returns the servers
    whose clean-up failed, each with the reason. say(text): their own reports, prefixed."""
    runner = runner or (lambda argv: preflight.run_command(argv, ""))
    failed = []
    for server in parse_servers(servers)[1:]:
        code, out, err = runner(clean_argv(server, repo, wait_s))
        for line in (out + err).splitlines():
            if line.strip():
                say(f"{server}: {line.rstrip()}")
        if code:
            last = (err.strip().splitlines() or [f"exit status {code}"])[-1]
            failed.append(f"{server}: {last}" if code != preflight.SSH_FAILED else
                          f"{server}: ssh failed ({last}); clean it there: sudo mrclab clean")
    return failed
