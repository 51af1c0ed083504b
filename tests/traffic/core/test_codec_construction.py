"""traffic/core/codec.py objects built inside each test (not at import), and what its errors say.

The UDP checksum is checked against Scapy's own computation over the RFC 8200 pseudo-header
(Scapy recomputes it when the field is deleted); the outer header of a source-routed frame
must name the uSID container of the EV's spine.
"""
from __future__ import annotations

import ipaddress

import pytest

from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from model.topology import FabricSpec, Topology, make_ev
from traffic.core.codec import Codec, DecodeError, Encoder
from traffic.core.messages import DataPacket, Opcode


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


# ecmp frames: Ethernet 14 + IPv6 40 + UDP 8, then BTH (12 bytes); the ICRC is zlib's CRC-32
# over BTH .. payload in the last 4 bytes (RoCEv2's ICRC polynomial, the project's coverage).
UDP_OFF, BTH_OFF = 54, 62


def ecmp_codec():
    topo = Topology(FabricSpec(planes=1, groups=2, spines=2, hosts_per_group=1))
    return Codec(topo), make_ev(0, 1, 0xC001)


def reason_and_detail(codec, frame) -> str:
    try:
        codec.decode(bytes(frame))
    except DecodeError as e:
        return str(e)
    raise AssertionError("decoded")


def with_icrc(frame: bytearray) -> bytearray:
    import zlib
    frame[-4:] = zlib.crc32(bytes(frame[BTH_OFF:-4])).to_bytes(4, "big")
    return frame


def test_decode_errors_name_what_was_wrong():
    codec, ev = ecmp_codec()
    enc = codec.encoder(0, 1, 0, "ecmp")
    frame = bytearray(enc.encode(data(ev)))
    port = bytearray(frame)
    port[UDP_OFF + 2:UDP_OFF + 4] = (4792).to_bytes(2, "big")
    assert reason_and_detail(codec, port) == "not_roce: UDP port 4792"
    opcode = bytearray(frame)
    opcode[BTH_OFF] = 0x0A
    assert reason_and_detail(codec, opcode) == "bad_opcode: opcode 0xa"
    from traffic.core.messages import Probe
    probe = bytearray(enc.encode(Probe(ev=ev, seq=3, timestamp=5, path_ev=ev)))
    probe[BTH_OFF + 12] = 1                      # EPH: PORT_STATUS_UPDATE, not an EV probe
    assert reason_and_detail(codec, with_icrc(probe)) == \
        "bad_opcode: endpoint operation 1 is not an EV probe"


def test_frames_cut_in_the_data_headers_are_truncated_not_malformed():
    codec, ev = ecmp_codec()
    frame = codec.encoder(0, 1, 0, "ecmp").encode(data(ev))
    assert reason_and_detail(codec, frame[:BTH_OFF + 12]) == "truncated: no METH"
    assert reason_and_detail(codec, frame[:BTH_OFF + 14]) == "truncated: no METH"
    assert reason_and_detail(codec, frame[:BTH_OFF + 11]) == "truncated: shorter than UDP + BTH"
    srv6 = Codec(Topology(FabricSpec(planes=1, groups=2, spines=2, hosts_per_group=1)))
    outer_only = srv6.encoder(0, 1, 0, "srv6").encode(data(ev))[:14 + 40 + 20]
    assert reason_and_detail(srv6, outer_only) == "truncated: shorter than the inner IPv6 header"


def test_payloads_larger_than_the_preallocated_buffer_round_trip():
    codec, ev = ecmp_codec()
    enc = codec.encoder(0, 1, 0, "ecmp")
    for size in (2100, 3000, 8900, 100):
        payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
        msg = DataPacket(dest_qp=5, psn=7, opcode=Opcode.WRITE_ONLY, msn=1, va=0, rkey=9,
                         dma_len=size, payload=payload, ev=ev)
        got, meta = codec.decode(enc.encode(msg))
        assert bytes(got.payload) == payload and meta.frame_len == BTH_OFF + 12 + 4 + 16 + size + 4


def test_encode_names_a_field_that_does_not_fit():
    import pytest
    codec, ev = ecmp_codec()
    enc = codec.encoder(0, 1, 0, "ecmp")
    for bad in (1 << 32, -1, "1"):
        with pytest.raises(ValueError) as err:
            enc.encode(data(ev), ev=bad)
        assert str(err.value) == f"ev={bad!r} is not a 32-bit entropy value"
    msg = data(ev)
    msg.msn = 1 << 24
    with pytest.raises(ValueError) as err:
        enc.encode(msg)
    assert str(err.value) == "msn=16777216 does not fit 24 bits"
    msg = data(ev)
    msg.dest_qp = 1 << 24
    with pytest.raises(ValueError) as err:
        enc.encode(msg)
    assert str(err.value) == "dest_qp=16777216 does not fit 24 bits"


def test_a_hop_encoder_goes_from_a_host_to_itself_in_srv6_only():
    """A hop probe (Topology.hop_container) is the one frame whose source and destination are
    the same host; anything else asking for that is refused by name."""
    topo = Topology(FabricSpec())
    with pytest.raises(ValueError, match="same host"):
        Encoder(topo, 1, 1, 0, "srv6")
    for src, dst, mode, tier in ((1, 2, "srv6", 0), (1, 1, "ecmp", 0), (1, 1, "srv6", 2)):
        with pytest.raises(ValueError, match="a hop probe goes from a host back to itself"):
            Encoder(topo, src, dst, 0, mode, hop_tier=tier)
    codec = Codec(topo)
    assert codec.hop_encoder(1, 0, 1) is codec.hop_encoder(1, 0, 1)      # cached
