"""Regression: hand-written bytes of one packet of each kind, checked against the Scapy layers
and the fast codec. The hex below was composed by hand from traffic/WIRE_FORMAT.md and the
fabric's address plan, header by header; only the ICRC (a CRC-32) is computed here."""
import zlib

import pytest
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from model.topology import FabricSpec, Topology
from traffic.core.codec import Codec
from traffic.layers import BTH, EPH, METH, NACK, RETH, SACK, TSETH, ImmDt
from traffic.core.messages import DataPacket, Nack, NackReason, Opcode, Probe, Sack

pytestmark = pytest.mark.core

TOPO = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2))

# NIC addresses (fd00:<plane>:<group>:<local>::1) and MACs (02:00:00:<plane>:<group>:<local>).
H0P0 = "fd00 0000 0000 0000 0000 0000 0000 0001"
H1P0 = "fd00 0000 0000 0001 0000 0000 0000 0001"
H2P0 = "fd00 0000 0001 0000 0000 0000 0000 0001"
H3P0 = "fd00 0000 0001 0001 0000 0000 0000 0001"
H0P1 = "fd00 0001 0000 0000 0000 0000 0000 0001"
H2P1 = "fd00 0001 0001 0000 0000 0000 0000 0001"
H3P1 = "fd00 0001 0001 0001 0000 0000 0000 0001"


def hexbytes(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


def with_icrc(head: str, covered: str) -> bytes:
    """head = bytes before BTH, covered = BTH..payload; appends CRC-32(covered) big-endian."""
    body = hexbytes(covered)
    return hexbytes(head) + body + zlib.crc32(body).to_bytes(4, "big")


# WRITE_ONLY, ECMP mode, h0 -> h3 on plane 0, EV = plane 0 | spine 1 | entropy 0xBEEF
# = 0x0040BEEF -> flow label 0x00040, UDP sport 0xBEEF; ECT(0): traffic class 0x02.
DATA_FRAME = with_icrc(
    "020000000101 020000000000 86dd"                     # Ethernet dst h3p0, src h0p0, IPv6
    "60200040 0030 11 40" + H0P0 + H3P0 +                # IPv6 tc 0x02 fl 0x40, plen 48, UDP
    "beef 12b7 0030 0000",                               # UDP sport EV, 4791, len 48, csum 0
    "ca 00 ffff 00 000123 80 000456"                     # BTH WRITE_ONLY qp 0x123 AckReq psn
    "00 000007"                                          # METH no TSETH, MSN 7
    "1122334455667788 aabbccdd 00000004"                 # RETH va, rkey, dma length
    "deadbeef")                                          # payload
DATA_MSG = DataPacket(dest_qp=0x123, psn=0x456, opcode=Opcode.WRITE_ONLY, msn=7,
                      va=0x1122334455667788, rkey=0xAABBCCDD, dma_len=4,
                      payload=b"\xde\xad\xbe\xef", ack_req=True, ev=0x0040BEEF)

# Control packets (SACK, NACK, probes) carry DSCP_CONTROL 0x37 (model/dscp.py): traffic class
# 0x37 << 2 | ECN = 0xDE with ECT(0), 0xDF with CE; first IPv6 word 6, tc, flow label.

# SACK, SRv6 mode, h3 -> h0 on plane 1 via spine 0; path EV 0x10000101 (plane 1, spine 0).
# uSID container: locator fcbb:bb00, T0 p1g1 0x1101, T1 p1s0 0x2100, T0 p1g0 0x1100, down 0x3000.
SACK_FRAME = with_icrc(
    "020000010000 020000010101 86dd"
    "6de01000 0070 29 40" + H3P1 + "fcbb bb00 1101 2100 1100 3000 0000 0000"   # outer
    "6de01000 0048 11 40" + H3P1 + H0P1 +                                       # inner
    "0101 12b7 0048 0000",
    "dc 00 ffff 00 000042 00 000100"                     # BTH SACK qp 0x42, PSN = cum PSN
    "00000100 00000102 0000000000000005 10400001"        # cum, base, bitmap, reflected EV
    "01 08 03 00 0102030405060708"                       # skip once, mpr 8, ports, resv, echo
    "00000002 00000000 0000000000010000")                # ooo, penalty, rx bytes
SACK_MSG = Sack(dest_qp=0x42, cum_psn=0x100, bitmap=5, sack_base=0x102, ev=0x10400001, skip=1,
                mpr=8, port_status=3, echo_timestamp=0x0102030405060708, ooo_count=2,
                window_penalty=0, rx_bytes=0x10000, path_ev=0x10000101)

# NACK, ECMP mode, h1 -> h2 on plane 0, path EV 7, ECN CE (tc 0xDF) as a switch would mark it.
NACK_FRAME = with_icrc(
    "020000000100 020000000001 86dd"
    "6df00000 0028 11 40" + H1P0 + H2P0 +
    "0007 12b7 0028 0000",
    "dd 00 ffff 00 000010 00 abcdef"
    "02 01 0000 00400009 0000000000000064")              # TRIMMED_LASTHOP, ports, resv, ev, echo
NACK_MSG = Nack(dest_qp=0x10, psn=0xABCDEF, reason=NackReason.TRIMMED_LASTHOP, ev=0x00400009,
                port_status=1, echo_timestamp=0x64, path_ev=7)

# EV probe response = endpoint response 0xD9, SRv6 mode, h0 -> h1 (same group: no T1 uSID),
# EV 0x00402222, probe id 0x010005 in the PSN. UDP length 8 + 12 + 20 + 4 = 44 (0x2c); outer
# IPv6 payload 44 + 40 = 84 (0x54).
PROBE_FRAME = with_icrc(
    "020000000001 020000000000 86dd"
    "6de00040 0054 29 40" + H0P0 + "fcbb bb00 1000 0000 1000 3001 0000 0000"
    "6de00040 002c 11 40" + H0P0 + H1P0 +
    "2222 12b7 002c 0000",
    "d9 00 ffff 00 000002 00 010005"                     # BTH EP_RESPONSE on QP 2, PSN = probe id
    "00 01 0000 00402222 00000077 0000000000000a0b")     # EV_PROBE, ports, resv, EV, src QP, ts
PROBE_MSG = Probe(ev=0x00402222, seq=0x010005, timestamp=0xA0B, response=True, src_qp=0x77,
                  port_status=1, path_ev=0x00402222)

# EV probe request = endpoint request 0xD8, ECMP mode, h2 -> h0 on plane 1, EV 0x1040C001
# (plane 1, spine 1, entropy 0xC001): flow label 0x01040, UDP sport 0xC001; probe id 0xFFFFFF.
PROBE_REQUEST_FRAME = with_icrc(
    "020000010000 020000010100 86dd"
    "6de01040 002c 11 40" + H2P1 + H0P1 +
    "c001 12b7 002c 0000",
    "d8 00 ffff 00 000002 00 ffffff"                     # BTH EP_REQUEST on QP 2, PSN = probe id
    "00 03 0000 1040c001 00000001 1122334455667788")
PROBE_REQUEST_MSG = Probe(ev=0x1040C001, seq=0xFFFFFF, timestamp=0x1122334455667788,
                          src_qp=1, port_status=3, path_ev=0x1040C001)

CASES = {
    "data": (DATA_FRAME, DATA_MSG, (0, 3, 0, "ecmp")),
    "sack": (SACK_FRAME, SACK_MSG, (3, 0, 1, "srv6")),
    "nack": (NACK_FRAME, NACK_MSG, (1, 2, 0, "ecmp")),
    "probe": (PROBE_FRAME, PROBE_MSG, (0, 1, 0, "srv6")),
    "probe_request": (PROBE_REQUEST_FRAME, PROBE_REQUEST_MSG, (2, 0, 1, "ecmp")),
}


def scapy_frames():
    """The same four packets built field by field with the Scapy layers."""
    eth = dict(type=0x86DD)
    data = (Ether(dst="02:00:00:00:01:01", src="02:00:00:00:00:00", **eth)
            / IPv6(tc=2, fl=0x40, src="fd00::1", dst="fd00:0:1:1::1")
            / UDP(sport=0xBEEF, dport=4791, chksum=0)
            / BTH(opcode=Opcode.WRITE_ONLY, dqpn=0x123, ackreq=1, psn=0x456)
            / METH(msn=7) / RETH(va=0x1122334455667788, rkey=0xAABBCCDD, dmalen=4)
            / Raw(b"\xde\xad\xbe\xef"))
    sack = (Ether(dst="02:00:00:01:00:00", src="02:00:00:01:01:01", **eth)
            / IPv6(tc=0xDE, fl=0x1000, src="fd00:1:1:1::1",
                   dst="fcbb:bb00:1101:2100:1100:3000::")
            / IPv6(tc=0xDE, fl=0x1000, src="fd00:1:1:1::1", dst="fd00:1::1")
            / UDP(sport=0x0101, dport=4791, chksum=0)
            / BTH(opcode=Opcode.SACK, dqpn=0x42, psn=0x100)
            / SACK(cum_psn=0x100, sack_base=0x102, bitmap=5, ev=0x10400001, skip=1, mpr=8,
                   port_status=3, echo_ts=0x0102030405060708, ooo_count=2, rx_bytes=0x10000))
    nack = (Ether(dst="02:00:00:00:01:00", src="02:00:00:00:00:01", **eth)
            / IPv6(tc=0xDF, src="fd00:0:0:1::1", dst="fd00:0:1::1")
            / UDP(sport=7, dport=4791, chksum=0)
            / BTH(opcode=Opcode.NACK, dqpn=0x10, psn=0xABCDEF)
            / NACK(reason=NackReason.TRIMMED_LASTHOP, port_status=1, ev=0x00400009, echo_ts=0x64))
    probe = (Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:00", **eth)
             / IPv6(tc=0xDE, fl=0x40, src="fd00::1", dst="fcbb:bb00:1000:0:1000:3001::")
             / IPv6(tc=0xDE, fl=0x40, src="fd00::1", dst="fd00:0:0:1::1")
             / UDP(sport=0x2222, dport=4791, chksum=0)
             / BTH(opcode=Opcode.EP_RESPONSE, dqpn=2, psn=0x010005)
             / EPH(op=0, port_status=1, ev=0x00402222, src_qp=0x77, timestamp=0xA0B))
    probe_request = (Ether(dst="02:00:00:01:00:00", src="02:00:00:01:01:00", **eth)
                     / IPv6(tc=0xDE, fl=0x1040, src="fd00:1:1::1", dst="fd00:1::1")
                     / UDP(sport=0xC001, dport=4791, chksum=0)
                     / BTH(opcode=Opcode.EP_REQUEST, dqpn=2, psn=0xFFFFFF)
                     / EPH(op=0, port_status=3, ev=0x1040C001, src_qp=1,
                           timestamp=0x1122334455667788))
    return {"data": data, "sack": sack, "nack": nack, "probe": probe,
            "probe_request": probe_request}


@pytest.mark.parametrize("kind", CASES)
def test_scapy_layers_build_the_hand_written_bytes(kind):
    assert bytes(scapy_frames()[kind]) == CASES[kind][0]


@pytest.mark.parametrize("kind", CASES)
def test_scapy_dissection_round_trips(kind):
    frame = CASES[kind][0]
    pkt = Ether(frame)
    assert BTH in pkt and pkt[UDP].dport == 4791
    assert pkt[BTH].icrc == zlib.crc32(bytes(pkt[BTH])[:-4])
    assert bytes(pkt) == frame


def test_scapy_dissects_each_header_of_the_data_packet():
    pkt = Ether(DATA_FRAME)
    assert (pkt[BTH].opcode, pkt[BTH].dqpn, pkt[BTH].psn, pkt[BTH].ackreq) == (0xCA, 0x123, 0x456, 1)
    assert pkt[METH].msn == 7 and not pkt[METH].flags.tseth and TSETH not in pkt
    assert (pkt[RETH].va, pkt[RETH].rkey, pkt[RETH].dmalen) == (0x1122334455667788, 0xAABBCCDD, 4)
    assert ImmDt not in pkt
    assert pkt[Raw].load == b"\xde\xad\xbe\xef"


def test_scapy_dissects_control_packets():
    sack = Ether(SACK_FRAME)
    assert sack[IPv6].nh == 41 and sack[SACK].ev == 0x10400001 and sack[SACK].rx_bytes == 0x10000
    nack = Ether(NACK_FRAME)
    assert nack[NACK].reason == NackReason.TRIMMED_LASTHOP and nack[BTH].psn == 0xABCDEF
    probe = Ether(PROBE_FRAME)
    assert (probe[BTH].opcode, probe[BTH].psn, probe[BTH].dqpn) == (0xD9, 0x010005, 2)
    assert (probe[EPH].op, probe[EPH].ev, probe[EPH].src_qp) == (0, 0x00402222, 0x77)
    request = Ether(PROBE_REQUEST_FRAME)
    assert (request[BTH].opcode, request[BTH].psn) == (0xD8, 0xFFFFFF)
    assert request[EPH].timestamp == 0x1122334455667788


@pytest.mark.parametrize("kind", CASES)
def test_codec_encodes_the_hand_written_bytes(kind):
    frame, msg, (src, dst, plane, mode) = CASES[kind]
    enc = Codec(TOPO).encoder(src, dst, plane, mode)
    ecn = 3 if kind == "nack" else 2
    assert enc.encode(msg, ecn=ecn) == frame


@pytest.mark.parametrize("kind", CASES)
def test_codec_decodes_the_hand_written_bytes(kind):
    frame, msg, (src, dst, plane, mode) = CASES[kind]
    got, meta = Codec(TOPO).decode(frame)
    assert got == msg
    assert (meta.src_host, meta.dst_host, meta.src_plane, meta.dst_plane) == (src, dst, plane, plane)
    assert meta.srv6 == (mode == "srv6")
    assert meta.ecn_ce == (kind == "nack")
    assert meta.frame_len == len(frame) and not meta.trimmed
    assert meta.ev == (msg.ev if kind == "data" else msg.path_ev)
