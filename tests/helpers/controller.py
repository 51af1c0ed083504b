"""Stand-ins for the controller's tests without root: a command runner that records the argv
lists the controller would run (and fails on a chosen word), and a process in an unprivileged
network namespace holding named interfaces."""
import shutil
import subprocess

import pytest

from controller.api import CommandError


class Recorder:
    """The controller's command runner: records each argv; raises CommandError, as a failed
    command does, when the joined argv contains `fail_on`."""

    def __init__(self):
        self.argvs = []
        self.fail_on = None

    def __call__(self, argv):
        if self.fail_on and self.fail_on in " ".join(argv):
            raise CommandError(f"command {' '.join(argv)!r} failed (exit 2): RTNETLINK answers: boom")
        self.argvs.append(argv)
        return ""


def namespace_with(*interfaces: str):
    """A process in a new network namespace (unprivileged: user + net namespace) holding the
    named interfaces (veth pairs; the peer is named <name>x)."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    script = "".join(f"ip link add {i} type veth peer name {i}x && " for i in interfaces)
    proc = subprocess.Popen(["unshare", "-rn", "sh", "-c", script + "echo ready && exec sleep 60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        pytest.skip(f"cannot create a network namespace here: {proc.stderr.read().strip()}")
    return proc
