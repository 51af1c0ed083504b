"""NEEDS TSHARK (installed by scripts/setup.sh), not root: an independent dissector (Wireshark's
InfiniBand/RoCEv2) reads codec frames from a pcap and must see RoCEv2 with the right BTH values,
in ECMP mode (IPv6/UDP) and SRv6 mode (IPv6-in-IPv6/UDP)."""
import shutil
import subprocess

import pytest

pytestmark = pytest.mark.needs_tshark
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from model.topology import FabricSpec, Topology, make_ev
from traffic.core.codec import MODES, Codec
from traffic.core.messages import DataPacket, Nack, Opcode, Probe, Sack

TOPO = Topology(FabricSpec())
# Entropy above 4791: Wireshark tries the lower UDP port's dissector first, so a source port
# below 4791 that belongs to another protocol (53, 123, ...) would be dissected as that one.
EV = make_ev(1, 1, 0xC001)


def packets():
    return [
        DataPacket(dest_qp=0x1234, psn=0x5678, opcode=Opcode.WRITE_ONLY, msn=1, va=0x10,
                   rkey=2, dma_len=64, payload=bytes(64), ack_req=True, ev=EV),
        DataPacket(dest_qp=0xABCDEF, psn=0xFFFFFF, opcode=Opcode.WRITE_LAST_IMM, msn=2, va=0,
                   rkey=3, dma_len=4096, payload=b"x" * 33, imm=9, timestamp=1, ev=EV),
        Sack(dest_qp=0x22, cum_psn=77, bitmap=0b101, path_ev=EV),
        Nack(dest_qp=0x23, psn=78, reason=1, path_ev=EV),
        Probe(ev=EV, seq=79, response=True),
        Probe(ev=EV, seq=0xABCDEF, src_qp=0x10, timestamp=5),
    ]


def expected(msg):
    if isinstance(msg, DataPacket):
        return msg.opcode, msg.dest_qp, msg.psn
    if isinstance(msg, Sack):
        return Opcode.SACK, msg.dest_qp, msg.cum_psn
    if isinstance(msg, Nack):
        return Opcode.NACK, msg.dest_qp, msg.psn
    return (Opcode.EP_RESPONSE if msg.response else Opcode.EP_REQUEST), 2, msg.seq


@pytest.mark.parametrize("mode", MODES)
def test_tshark_dissects_codec_frames_as_rocev2(mode, tmp_path):
    tshark = shutil.which("tshark")
    assert tshark, "tshark is missing: run scripts/setup.sh (it installs tshark)"
    codec = Codec(TOPO)
    msgs = packets()
    frames = [codec.encoder(0, 3, 1, mode).encode(m) for m in msgs]
    pcap = tmp_path / f"codec-{mode}.pcap"
    wrpcap(str(pcap), [Ether(f) for f in frames])
    run = subprocess.run(
        [tshark, "-n", "-r", str(pcap), "-T", "fields", "-E", "separator=,",
         "-e", "frame.protocols", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp",
         "-e", "infiniband.bth.psn", "-e", "udp.dstport", "-e", "ipv6.dst"],
        capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, f"tshark failed: {run.stderr}"
    rows = [line.split(",") for line in run.stdout.splitlines() if line.strip()]
    assert len(rows) == len(msgs), run.stdout
    layers = "eth:ethertype:ipv6:ipv6:udp:infiniband" if mode == "srv6" \
        else "eth:ethertype:ipv6:udp:infiniband"
    for row, msg in zip(rows, msgs):
        protocols, opcode, qp, psn, dport, ip_dsts = row[0], row[1], row[2], row[3], row[4], row[5:]
        assert protocols.startswith(layers), protocols
        assert (int(opcode), int(qp, 16), int(psn), int(dport)) == (*expected(msg), 4791)
        if mode == "srv6":
            assert ip_dsts[0] == TOPO.usid_container(0, 3, 1, 1)
