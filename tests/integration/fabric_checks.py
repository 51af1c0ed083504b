"""What the fabric integration tests share: `mrclab` as a separate process (as a user runs it),
the check that a fabric left nothing of itself behind, and frames sent on chosen EVs and
counted at their destination (emulation.network.pathcheck)."""
import json
import os
import signal
import subprocess
import sys

from emulation.network import cleanup
from tests.helpers.paths import REPO

MRCLAB = [sys.executable, "-m", "emulation.cli"]


def assert_nothing_left():
    """No namespace, bridge, process or switch interface of a fabric is left on the machine."""
    left = cleanup.find_leftovers()
    assert left.empty(), left.describe()
    links = cleanup.root_links()
    assert not [n for n in links if cleanup.is_our_switch_intf(n) or cleanup.is_our_switch(n)]


def start_then_kill(script: str) -> None:
    """Run a Python script that builds a fabric and prints "up", then SIGKILL it: a crash that
    leaves whatever the fabric had not undone."""
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "up", proc.stderr.read() if proc.poll() is not None else line
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


def send_and_count(fab, routing_mode, evs, count, pps=2000, ecn=2, src=0, dst=1):
    """{ev: (packets received, CE-marked packets)} at dst for `count` packets per EV."""
    spec_json = json.dumps(fab.spec.to_dict())
    recv = fab.popen_in_host(dst, [sys.executable, "-m", "emulation.network.pathcheck", "recv",
                                   "--spec", spec_json, "--host", str(dst),
                                   "--expect", str(count * len(evs)),
                                   "--timeout-s", str(2 + count * len(evs) / pps)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert recv.stderr.readline().strip() == "ready"
    fab.cmd_in_host(src, [sys.executable, "-m", "emulation.network.pathcheck", "send",
                          "--spec", spec_json, "--routing", routing_mode, "--src", str(src),
                          "--flows", json.dumps([[dst, ev] for ev in evs]),
                          "--count", str(count), "--pps", str(pps), "--ecn", str(ecn)])
    out, err = recv.communicate(timeout=30)
    assert recv.returncode == 0, err
    result = json.loads(out)
    got = {ev: (0, 0) for ev in evs}
    for flow in result["flows"]:
        if flow["src"] == src and flow["ev"] in got:
            got[flow["ev"]] = (flow["packets"], flow["ecn"][3])
    return got


# Delivery tolerance on a path that works. pathcheck frames are 128 bytes, so 2000 pps is
# 2 Mbit/s on 50 Mbit/s links: no queue ever builds, the HTB shaper drops nothing, and a
# missing frame can only be one a CPU-starved userspace OVS or the receiver's socket dropped
# (few in short bursts at this rate, many in long bursts at twice it). Allow a quarter; a failed
# path delivers 0, so working and failed stay apart.
def delivered_all(got, sent):
    """`got` frames of `sent` is what a working path delivers on a loaded machine."""
    return sent - max(1, sent // 4) <= got <= sent
