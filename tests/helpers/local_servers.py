"""A second server on this machine for a test (emulation/cluster/local_server.py): up for the
test, reached by mrclab's ssh under its name, down afterwards (also when a crashed session left
it up)."""
import contextlib
import subprocess

from emulation.cluster import local_server as L
from emulation.cluster import preflight


@contextlib.contextmanager
def local_server_up(monkeypatch, name: str, index: int):
    L.down(name, quiet=True)                  # left up by a crashed test session, if any
    srv = L.up(name, index)
    monkeypatch.setenv(preflight.SSH_CONFIG_ENV, str(L.SSH_CONFIG))
    try:
        yield srv
    finally:
        assert L.down(name)


def on_server(name: str, *argv: str) -> str:
    """argv's stdout on the server, over ssh; a failure raises."""
    return subprocess.run(preflight.ssh_argv(name, list(argv)), capture_output=True, text=True,
                          timeout=60, check=True).stdout
