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
from pathlib import Path

import dpkt
import pandas as pd
import pytest

from analysis.pcap import load_pcap
from emulation.run.runner import CAPTURE_SNAPLEN
from model.topology import FabricSpec, Topology, make_ev
from traffic.core.codec import Codec
from traffic.core.messages import DataPacket, Opcode

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


def _udp_dport(frame: bytes) -> int | None:
    """UDP destination port of an Ethernet frame, through any IPv6-in-IPv6 (SRv6) layers."""
    layer = dpkt.ethernet.Ethernet(frame).data
    while isinstance(layer, dpkt.ip6.IP6):
        layer = layer.data
    return layer.dport if isinstance(layer, dpkt.udp.UDP) else None


def wait_until_carrying(netns: str, devices, timeout_s: float = 10.0) -> None:
    """Poll until every device is up with its real qdisc: a fresh veth starts on the `noop`
    qdisc, which drops every frame, until the kernel's link watcher activates it (it runs
    deferred, up to a second later, longer on a busy machine)."""
    deadline = time.monotonic() + timeout_s
    while True:
        shown = [subprocess.run(["ip", "-n", netns, "-o", "link", "show", "dev", dev],
                                check=True, capture_output=True, text=True).stdout
                 for dev in devices]
        if all("state UP" in out and "qdisc noop" not in out for out in shown):
            return
        assert time.monotonic() < deadline, f"veth not carrying after {timeout_s} s: {shown}"
        time.sleep(0.05)


def wait_for_rocev2_frames(pcap: Path, count: int, timeout_s: float = 10.0) -> None:
    """Poll the pcap tcpdump writes (-U: one write per packet) until it holds `count` UDP 4791
    frames; anything else the fresh link carries (IPv6 neighbour discovery) does not count."""
    deadline = time.monotonic() + timeout_s
    while True:
        seen = 0
        try:
            with open(pcap, "rb") as f:
                seen = sum(_udp_dport(frame) == 4791 for _ts, frame in dpkt.pcap.Reader(f))
        except (OSError, ValueError, dpkt.dpkt.NeedData, dpkt.dpkt.UnpackError):
            pass                                   # not written yet, or a record half-written
        if seen >= count:
            return
        assert time.monotonic() < deadline, f"{seen} of {count} frames captured in {timeout_s} s"
        time.sleep(0.05)


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
        wait_until_carrying(veth_ns, ("snapa", "snapb"))
        subprocess.run(["ip", "netns", "exec", veth_ns, sys.executable, "-c", SEND,
                        *(f.hex() for f in frames)], check=True, timeout=20)
        wait_for_rocev2_frames(pcap, len(frames))
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
