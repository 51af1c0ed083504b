"""traffic/codec.py objects built inside each test (not at import), and DecodeError's message.

The UDP checksum is checked against Scapy's own computation over the RFC 8200 pseudo-header
(Scapy recomputes it when the field is deleted); the outer header of a source-routed frame
must name the uSID container of the EV's spine.
"""
from __future__ import annotations

import ipaddress

from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from model.topology import FabricSpec, Topology, make_ev
from traffic.codec import Codec, DecodeError, Encoder
from traffic.messages import DataPacket, Opcode


def data(ev: int) -> DataPacket:
    return DataPacket(dest_qp=5, psn=7, opcode=Opcode.WRITE_ONLY, msn=1, va=0x1000, rkey=9,
                      dma_len=4, payload=b"abcd", ev=ev)


def test_decode_error_message_is_the_reason_and_the_detail():
    assert str(DecodeError("bad_icrc")) == "bad_icrc"
    assert str(DecodeError("truncated", "no METH")) == "truncated: no METH"
    assert DecodeError("truncated", "no METH").reason == "truncated"
    assert isinstance(DecodeError("x"), ValueError)


def test_a_codec_asked_for_checksums_writes_them_and_one_not_asked_writes_zero():
    topo = Topology(FabricSpec(planes=1, groups=2, spines=2, hosts_per_group=1))
    ev = make_ev(0, 1, 0xC001)
    for mode in ("srv6", "ecmp"):
        frame = Codec(topo, udp_checksum=True).encoder(0, 1, 0, mode).encode(data(ev))
        pkt = Ether(frame)
        sent = pkt[UDP].chksum
        del pkt[UDP].chksum
        assert sent == Ether(bytes(pkt))[UDP].chksum != 0
        assert Ether(Codec(topo).encoder(0, 1, 0, mode).encode(data(ev)))[UDP].chksum == 0
    direct = Encoder(topo, 0, 1, 0, "ecmp").encode(data(ev))        # the default: no checksum
    assert Ether(direct)[UDP].chksum == 0


def test_a_one_spine_fabric_source_routes_through_its_only_spine():
    topo = Topology(FabricSpec(planes=1, groups=2, spines=1, hosts_per_group=1))
    codec = Codec(topo)
    ev = make_ev(0, 0, 0xC0DE)
    frame = codec.encoder(0, 1, 0, "srv6").encode(data(ev))
    outer = Ether(frame)[IPv6]
    assert ipaddress.IPv6Address(outer.dst) == ipaddress.IPv6Address(
        topo.usid_container(0, 1, 0, 0))
    msg, meta = codec.decode(frame)
    assert meta.srv6 and msg.payload == b"abcd" and meta.ev == ev
