"""Property tests: the fast codec and the Scapy layers agree byte for byte on random field values
for every message kind, in both modes, in both directions (codec -> Scapy, Scapy -> codec)."""
import dataclasses
import ipaddress
import zlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

import pytest

from traffic.core.codec import Codec
from traffic.layers import BTH, EPH, METH, NACK, RETH, SACK, TSETH, ImmDt
from traffic.core.messages import DataPacket, Nack, Sack

from tests.helpers.codec_strategies import CODEC, TOPO, messages

pytestmark = pytest.mark.core

CODEC_WITH_CHECKSUM = Codec(TOPO, udp_checksum=True)
PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def scapy_frame(route, msg, ecn):
    """The frame built with the Scapy layers only (independent of the codec)."""
    src, dst, plane, mode, ev = route
    spine = (ev >> 22) & 0x3F
    # data: DSCP 0; control: DSCP_CONTROL 0x37 (model/dscp.py) above the ECN bits
    tc, fl = (ecn if isinstance(msg, DataPacket) else 0x37 << 2 | ecn), ev >> 16
    src_addr, dst_addr = TOPO.nic_addr(src, plane), TOPO.nic_addr(dst, plane)
    pkt = Ether(src=TOPO.nic_mac(src, plane), dst=TOPO.nic_mac(dst, plane), type=0x86DD)
    if mode == "srv6":
        pkt /= IPv6(tc=tc, fl=fl, src=src_addr, dst=TOPO.usid_container(src, dst, plane, spine))
    pkt /= IPv6(tc=tc, fl=fl, src=src_addr, dst=dst_addr)
    pkt /= UDP(sport=ev & 0xFFFF, dport=4791, chksum=0)
    if isinstance(msg, DataPacket):
        pkt /= BTH(opcode=msg.opcode, retransmit=int(msg.retransmit), dqpn=msg.dest_qp,
                   ackreq=int(msg.ack_req), psn=msg.psn)
        pkt /= METH(flags=int(msg.timestamp is not None), msn=msg.msn)
        if msg.timestamp is not None:
            pkt /= TSETH(timestamp=msg.timestamp)
        pkt /= RETH(va=msg.va, rkey=msg.rkey, dmalen=msg.dma_len)
        if msg.imm is not None:
            pkt /= ImmDt(imm=msg.imm)
        if msg.payload:
            pkt /= Raw(bytes(msg.payload))
    elif isinstance(msg, Sack):
        pkt /= BTH(opcode=0xDC, dqpn=msg.dest_qp, psn=msg.cum_psn)
        pkt /= SACK(cum_psn=msg.cum_psn, sack_base=msg.sack_base, bitmap=msg.bitmap, ev=msg.ev,
                    skip=msg.skip, mpr=msg.mpr, port_status=msg.port_status,
                    echo_ts=msg.echo_timestamp, ooo_count=msg.ooo_count,
                    window_penalty=msg.window_penalty, rx_bytes=msg.rx_bytes)
    elif isinstance(msg, Nack):
        pkt /= BTH(opcode=0xDD, dqpn=msg.dest_qp, psn=msg.psn)
        pkt /= NACK(reason=msg.reason, port_status=msg.port_status, ev=msg.ev,
                    echo_ts=msg.echo_timestamp)
    else:
        pkt /= BTH(opcode=0xD9 if msg.response else 0xD8, dqpn=2, psn=msg.seq)
        pkt /= EPH(op=0, port_status=msg.port_status, ev=msg.ev, src_qp=msg.src_qp,
                   timestamp=msg.timestamp)
    return bytes(pkt)


def ip(text):
    return ipaddress.IPv6Address(text)


def expected_decode(msg):
    """What decode() must give back: the message plus the fields the receiver side fills."""
    if isinstance(msg, DataPacket):
        return dataclasses.replace(msg, payload=bytes(msg.payload))
    return msg


@PROPS
@given(messages())
def test_codec_and_scapy_build_identical_bytes(case):
    route, msg, ecn = case
    enc = CODEC.encoder(*route[:4])
    assert enc.encode(msg, ecn=ecn) == scapy_frame(route, msg, ecn)


@PROPS
@given(messages())
def test_scapy_dissects_codec_frames_to_the_message_fields(case):
    route, msg, ecn = case
    src, dst, plane, mode, ev = route
    pkt = Ether(CODEC.encoder(src, dst, plane, mode).encode(msg, ecn=ecn))
    outer, inner = pkt[IPv6], pkt[UDP].underlayer
    assert (outer.nh == 41) == (mode == "srv6")
    assert outer.tc & 3 == ecn and inner.fl == ev >> 16 and pkt[UDP].sport == ev & 0xFFFF
    assert (ip(inner.src), ip(inner.dst)) == (ip(TOPO.nic_addr(src, plane)),
                                              ip(TOPO.nic_addr(dst, plane)))
    if mode == "srv6":
        assert ip(outer.dst) == ip(TOPO.usid_container(src, dst, plane, (ev >> 22) & 0x3F))
    bth = pkt[BTH]
    assert bth.icrc == zlib.crc32(bytes(bth)[:-4])
    if isinstance(msg, DataPacket):
        assert (bth.opcode, bth.dqpn, bth.psn, bth.ackreq, bth.retransmit) == (
            msg.opcode, msg.dest_qp, msg.psn, msg.ack_req, msg.retransmit)
        assert pkt[METH].msn == msg.msn
        assert (pkt[TSETH].timestamp if TSETH in pkt else None) == msg.timestamp
        assert (pkt[RETH].va, pkt[RETH].rkey, pkt[RETH].dmalen) == (msg.va, msg.rkey, msg.dma_len)
        assert (pkt[ImmDt].imm if ImmDt in pkt else None) == msg.imm
        assert (pkt[Raw].load if Raw in pkt else b"") == bytes(msg.payload)
    elif isinstance(msg, Sack):
        s = pkt[SACK]
        assert (bth.opcode, bth.dqpn, bth.psn) == (0xDC, msg.dest_qp, msg.cum_psn)
        assert (s.cum_psn, s.sack_base, s.bitmap, s.ev, s.skip, s.mpr, s.port_status, s.echo_ts,
                s.ooo_count, s.window_penalty, s.rx_bytes) == (
            msg.cum_psn, msg.sack_base, msg.bitmap, msg.ev, msg.skip, msg.mpr, msg.port_status,
            msg.echo_timestamp, msg.ooo_count, msg.window_penalty, msg.rx_bytes)
    elif isinstance(msg, Nack):
        n = pkt[NACK]
        assert (bth.opcode, bth.dqpn, bth.psn) == (0xDD, msg.dest_qp, msg.psn)
        assert (n.reason, n.port_status, n.ev, n.echo_ts) == (
            msg.reason, msg.port_status, msg.ev, msg.echo_timestamp)
    else:
        p = pkt[EPH]
        assert (bth.opcode, bth.dqpn, bth.psn) == (0xD9 if msg.response else 0xD8, 2, msg.seq)
        assert (p.op, p.port_status, p.ev, p.src_qp, p.timestamp) == (
            0, msg.port_status, msg.ev, msg.src_qp, msg.timestamp)


@PROPS
@given(messages())
def test_codec_decodes_scapy_frames_to_the_message(case):
    route, msg, ecn = case
    src, dst, plane, mode, ev = route
    got, meta = CODEC.decode(scapy_frame(route, msg, ecn))
    want = expected_decode(msg)
    if isinstance(want, DataPacket):
        want.ecn_ce = ecn == 3
    assert got == want
    assert (meta.src_host, meta.src_plane, meta.dst_host, meta.dst_plane) == (src, plane, dst, plane)
    assert (meta.ev, meta.ecn_ce, meta.srv6, meta.trimmed) == (ev, ecn == 3, mode == "srv6", False)


@PROPS
@given(messages(), st.sampled_from(["bytes", "bytearray", "memoryview"]))
def test_round_trip_from_any_buffer_type(case, kind):
    route, msg, ecn = case
    frame = CODEC.encoder(*route[:4]).encode(msg, ecn=ecn)
    buf = {"bytes": bytes, "bytearray": bytearray, "memoryview": memoryview}[kind](frame)
    got, _ = CODEC.decode(buf)
    if isinstance(got, DataPacket):
        got.payload = bytes(got.payload)
    want = expected_decode(msg)
    if isinstance(want, DataPacket):
        want.ecn_ce = ecn == 3
    assert got == want


@PROPS
@given(messages())
def test_optional_udp_checksum_matches_scapy(case):
    route, msg, ecn = case
    frame = CODEC_WITH_CHECKSUM.encoder(*route[:4]).encode(msg, ecn=ecn)
    pkt = Ether(frame)
    sent = pkt[UDP].chksum
    del pkt[UDP].chksum
    assert sent == Ether(bytes(pkt))[UDP].chksum != 0
