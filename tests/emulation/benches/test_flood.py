"""The benches' packet flood, run the way the fabric trim bench runs it (a module in a child
process): its count is of frames the interface really transmitted, and bad arguments get a
message, not a traceback."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.paths import REPO as ROOT

# Broadcast, a locally administered source, EtherType 0x88b5 (IEEE local experimental), padded
# to the 60-byte minimum: nothing on the machine listens for it.
FRAME_HEX = "ffffffffffff" + "020000000001" + "88b5" + "00" * 46


def run_flood(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "emulation.benches.flood", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def lo_tx_packets() -> int:
    return int(Path("/sys/class/net/lo/statistics/tx_packets").read_text())


@pytest.mark.integration          # a raw packet socket needs root
def test_the_count_is_of_frames_the_interface_sent():
    before = lo_tx_packets()
    done = run_flood("lo", FRAME_HEX, "0.05")
    after = lo_tx_packets()
    assert done.returncode == 0, done.stderr
    count = int(done.stdout)
    # lo also carries whatever else the machine sends meanwhile, so the delta is an upper bound
    assert 0 < count <= after - before


@pytest.mark.parametrize("args,code,message", [
    (("lo", "not-hex", "1"), 2, "FRAME_HEX must be hex"),
    (("lo", FRAME_HEX, "soon"), 2, "SECONDS a number"),
    (("lo", FRAME_HEX), 2, "usage: python -m emulation.benches.flood"),
    (("mrclabnosuch0", FRAME_HEX, "0.01"), 1, "cannot send on mrclabnosuch0"),
])
def test_bad_arguments_are_named_without_a_traceback(args, code, message):
    done = run_flood(*args)
    assert done.returncode == code
    assert message in done.stderr and "Traceback" not in done.stderr
