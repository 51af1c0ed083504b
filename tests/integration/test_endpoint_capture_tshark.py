"""Packets captured from the emulator (tcpdump on a host port during a real MRC transfer over
the fabric) dissect in tshark as RoCEv2: BTH opcode, destination QP and PSN as sent."""
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from emulation.topology import FabricSpec
from traffic.bench import BENCH_SPEC, _EndpointPair

pytestmark = pytest.mark.integration

WRITE_OPCODES = set(range(0xC6, 0xCC))
SACK = 0xDC


def test_captured_transfer_dissects_as_rocev2(tmp_path):
    from emulation.fabric import Fabric
    tshark = shutil.which("tshark")
    assert tshark, "tshark is missing: run scripts/setup.sh"
    # tcpdump drops root privileges: the pcap must live where user tcpdump can write
    capdir = Path(tempfile.mkdtemp(prefix="mrcep-cap-"))
    capdir.chmod(0o755)
    pcap = capdir / "h2-p0.pcap"
    size = 1 << 20
    with Fabric(FabricSpec(**BENCH_SPEC), routing="srv6") as fab:
        cap = fab.capture(2, 0, pcap, snaplen=128)
        pair = _EndpointPair(fab, str(tmp_path), "srv6")
        try:
            pair.write(size, rkey=0x33, seed=4)
            done = pair.wait_recv(60)
            assert done["completions"][0]["bytes"] == size
            time.sleep(0.2)
        finally:
            pair.close()
            cap.stop()
    run = subprocess.run(
        [tshark, "-n", "-r", str(pcap), "-Y", "infiniband", "-T", "fields", "-E", "separator=,",
         "-e", "frame.protocols", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp",
         "-e", "infiniband.bth.psn", "-e", "udp.dstport"],
        capture_output=True, text=True, timeout=120)
    shutil.rmtree(capdir, ignore_errors=True)
    assert run.returncode == 0, run.stderr
    rows = [line.split(",") for line in run.stdout.splitlines() if line.strip()]
    data = [r for r in rows if int(r[1]) in WRITE_OPCODES]
    sacks = [r for r in rows if int(r[1]) == SACK]
    assert all("udp:infiniband" in r[0] and r[4] == "4791" for r in rows)
    # plane 0 carries about half of the 1 MiB (~780 packets of 1344 B over 2 planes)
    assert len(data) > 200, len(rows)
    assert {int(r[2], 16) for r in data} == {0x200}          # to the receiver's QP
    assert sacks and {int(r[2], 16) for r in sacks} == {0x100}
    psns = {int(r[3]) for r in data}
    assert len(psns) > 200 and max(psns) < 2 * (size // 1000)    # distinct, in the transfer's range
