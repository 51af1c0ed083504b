"""tcpdump with the runner's snap length keeps a data packet's RETH and ImmDt readable (root; its
own namespace `mrcsnap-<pid>` with a veth pair, deleted afterwards).

Codec frames (SRv6, TSETH + RETH + ImmDt, 1000-byte payload) go out of one veth end through an
AF_PACKET socket; tcpdump on the other end writes the pcap that analysis.pcap reads back.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pandas as pd
import pytest

from analysis.pcap import load_pcap
from emulation.runner import CAPTURE_SNAPLEN
from model.topology import FabricSpec, Topology, make_ev
from traffic.codec import Codec
from traffic.messages import DataPacket, Opcode

pytestmark = pytest.mark.integration

TOPO = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=1))
EV = make_ev(0, 1, 0x0BEE)
NS = f"mrcsnap-{os.getpid()}"
SEND = """
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("snapa", 0))
for h in sys.argv[1:]:
    s.send(bytes.fromhex(h))
"""


def _ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=20)


@pytest.fixture
def veth_ns():
    _ip("netns", "add", NS)
    try:
        _ip("-n", NS, "link", "add", "snapa", "type", "veth", "peer", "name", "snapb")
        for dev in ("snapa", "snapb"):
            _ip("-n", NS, "link", "set", dev, "up")
        yield NS
    finally:
        subprocess.run(["ip", "netns", "del", NS], capture_output=True, timeout=20)


def test_tcpdump_capture_keeps_reth_and_immdt(veth_ns, tmp_path):
    enc = Codec(TOPO).encoder(0, 1, 0, "srv6")
    sent = [DataPacket(dest_qp=0x10 + i, psn=100 + i, opcode=Opcode.WRITE_ONLY_IMM, msn=i + 1,
                       va=0x1000_0000 + 1000 * i, rkey=0x55 + i, dma_len=1000,
                       payload=bytes([i]) * 1000, imm=0xCAFE00 + i, timestamp=123456789 + i,
                       ev=EV) for i in range(3)]
    frames = [enc.encode(m) for m in sent]
    pcap = tmp_path / "h0-p0.pcap"
    dump = subprocess.Popen(["ip", "netns", "exec", veth_ns, "tcpdump", "-i", "snapb", "-U", "-n",
                             "-s", str(CAPTURE_SNAPLEN), "-w", str(pcap)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = dump.stderr.readline()
        assert "listening on" in line, f"tcpdump did not start: {line}"
        time.sleep(0.5)      # a fresh veth pair can drop the first frames while it comes up
        subprocess.run(["ip", "netns", "exec", veth_ns, sys.executable, "-c", SEND,
                        *(f.hex() for f in frames)], check=True, timeout=20)
        time.sleep(0.5)
    finally:
        dump.terminate()
        dump.wait(timeout=10)
    df = load_pcap(pcap, local_addr=TOPO.nic_addr(0, 0))
    report = df.attrs["pcap_report"]
    assert len(df) == len(sent), report
    assert report["short_packets"] == 0
    # the payload was cut (the snap length is a header snap length) but no header was
    assert (df["captured"] == CAPTURE_SNAPLEN).all()
    assert list(df["size"]) == [len(f) for f in frames]
    for row, m in zip(df.itertuples(), sent):
        assert (row.va, row.rkey, row.dma_len, row.imm, row.tseth, row.msn, row.psn) == \
            (m.va, m.rkey, m.dma_len, m.imm, m.timestamp, m.msn, m.psn)
        assert not pd.isna(row.imm)
