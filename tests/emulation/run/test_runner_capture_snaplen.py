"""The runner's tcpdump snap length keeps every MRC header of every frame the codec writes."""
from __future__ import annotations

import pytest

from emulation.run.runner import CAPTURE_SNAPLEN
from model.topology import FabricSpec, Topology, make_ev
from traffic.core.codec import Codec
from traffic.core.messages import DataPacket, Nack, Opcode, Probe, Sack

TOPO = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=1))
EV = make_ev(0, 1, 0x0BEE)
PAYLOAD = bytes(1000)


def test_snaplen_is_the_deepest_header_stack_by_hand():
    # SRv6 frame: Ethernet 14 + outer IPv6 40 + inner IPv6 40 + UDP 8 + BTH 12 = 114.
    # Data: METH 4 + TSETH 8 + RETH 16 + ImmDt 4 = 32 -> 146 (payload follows).
    # SACK body (traffic/WIRE_FORMAT.md): 4+4+8+4+1+1+1+1+8+4+4+8 = 48, + ICRC 4 = 52 -> 166, the deepest.
    assert CAPTURE_SNAPLEN == 166


@pytest.mark.parametrize("mode", ["srv6", "ecmp"])
def test_every_codec_frame_keeps_its_headers(mode):
    """Encode the largest header variant of each message with the real codec; what precedes the
    payload (data) or the whole frame (control packets carry no payload) fits the snap length."""
    enc = Codec(TOPO).encoder(0, 1, 0, mode)
    data = DataPacket(dest_qp=0x10, psn=7, opcode=Opcode.WRITE_ONLY_IMM, msn=3, va=0x1000,
                      rkey=0x55, dma_len=len(PAYLOAD), payload=PAYLOAD, imm=0xCAFE,
                      timestamp=123456789, ev=EV)
    frame = enc.encode(data)
    headers = len(frame) - len(PAYLOAD) - 4       # ICRC trails the payload
    assert headers <= CAPTURE_SNAPLEN < len(frame)
    for msg in (Sack(dest_qp=0x11, cum_psn=5, ev=EV, path_ev=EV),
                Nack(dest_qp=0x11, psn=5, reason=1, ev=EV, path_ev=EV),
                Probe(ev=EV, seq=9, path_ev=EV)):
        assert len(enc.encode(msg)) <= CAPTURE_SNAPLEN, type(msg).__name__
