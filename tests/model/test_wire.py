"""The wire table against the numbers the sources give, typed here by hand: header lengths,
field places, opcodes, the UDP port, the EV's bit fields, the DSCP and ECN code points."""
from __future__ import annotations

import pytest

from model import wire


@pytest.mark.parametrize("header,size", [
    (wire.ETHERNET, 14), (wire.IPV6, 40), (wire.UDP, 8),
    (wire.BTH, 12), (wire.METH, 4), (wire.TSETH, 8), (wire.RETH, 16), (wire.IMMDT, 4),
    (wire.SACK, 48), (wire.NACK, 16), (wire.EPH, 20),
], ids=lambda v: getattr(v, "name", str(v)))
def test_header_lengths(header, size):
    assert header.size == size
    assert wire.ICRC_LEN == 4


def test_opcodes_as_the_ocp_spec_lists_them():
    op = wire.Opcode
    assert [op.WRITE_FIRST, op.WRITE_MIDDLE, op.WRITE_LAST, op.WRITE_LAST_IMM, op.WRITE_ONLY,
            op.WRITE_ONLY_IMM] == [0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xCB]
    assert (op.ACK, op.EP_REQUEST, op.EP_RESPONSE) == (0xD1, 0xD8, 0xD9)
    assert (op.SACK, op.NACK, op.RELIABILITY_PROBE) == (0xDC, 0xDD, 0xDE)
    assert wire.WRITE_OPCODES == {0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xCB}
    assert wire.IMM_OPCODES == {0xC9, 0xCB}


def test_udp_port_and_code_points():
    assert wire.ROCE_UDP_PORT == 4791
    assert (wire.ECN_NOT_ECT, wire.ECN_ECT1, wire.ECN_ECT0, wire.ECN_CE) == (0, 1, 2, 3)
    assert (wire.DSCP_TRIMMED, wire.DSCP_TRIMMED_LASTHOP) == (0x3B, 0x3F)
    # RFC 2474 pool 3 (xxxx11): every DSCP of ours ends in binary 11
    assert all(d & 0b11 == 0b11 for d in (wire.DSCP_TRIMMED, wire.DSCP_TRIMMED_LASTHOP,
                                          wire.DSCP_CONTROL))


def test_struct_formats_of_the_fixed_headers():
    # IBA BTH: opcode, flags byte, P_Key, FECN/BECN/reserved + dest QP, AckReq/reserved + PSN
    assert wire.BTH.struct_format == "BBHII"
    assert wire.SACK.struct_format == "IIQIBBBBQIIQ"
    assert wire.NACK.struct_format == "BBHIQ"
    assert wire.EPH.struct_format == "BBHIIQ"
    assert wire.IPV6.struct_format == "IHBB16s16s"


@pytest.mark.parametrize("header,name,span", [
    # BTH (traffic/WIRE_FORMAT.md): byte, count, mask inside that byte
    (wire.BTH, "opcode", (0, 1, None)), (wire.BTH, "se", (1, 1, 0x80)),
    (wire.BTH, "padcount", (1, 1, 0x30)), (wire.BTH, "tver", (1, 1, 0x0F)),
    (wire.BTH, "pkey", (2, 2, None)), (wire.BTH, "retransmit", (4, 1, 0x20)),
    (wire.BTH, "dqpn", (5, 3, None)), (wire.BTH, "ackreq", (8, 1, 0x80)),
    (wire.BTH, "psn", (9, 3, None)),
    (wire.METH, "flags", (0, 1, None)), (wire.METH, "msn", (1, 3, None)),
    (wire.RETH, "va", (0, 8, None)), (wire.RETH, "rkey", (8, 4, None)),
    (wire.RETH, "dmalen", (12, 4, None)),
    (wire.SACK, "cum_psn", (1, 3, None)), (wire.SACK, "sack_base", (4, 4, None)),
    (wire.SACK, "bitmap", (8, 8, None)), (wire.SACK, "ev", (16, 4, None)),
    (wire.SACK, "skip", (20, 1, None)), (wire.SACK, "mpr", (21, 1, None)),
    (wire.SACK, "port_status", (22, 1, None)), (wire.SACK, "echo_ts", (24, 8, None)),
    (wire.SACK, "ooo_count", (32, 4, None)), (wire.SACK, "window_penalty", (36, 4, None)),
    (wire.SACK, "rx_bytes", (40, 8, None)),
    (wire.NACK, "reason", (0, 1, None)), (wire.NACK, "port_status", (1, 1, None)),
    (wire.NACK, "ev", (4, 4, None)), (wire.NACK, "echo_ts", (8, 8, None)),
    (wire.EPH, "op", (0, 1, None)), (wire.EPH, "ev", (4, 4, None)),
    (wire.EPH, "src_qp", (8, 4, None)), (wire.EPH, "timestamp", (12, 8, None)),
    (wire.IPV6, "payload_len", (4, 2, None)), (wire.IPV6, "next_header", (6, 1, None)),
    (wire.IPV6, "dst", (24, 16, None)), (wire.UDP, "dport", (2, 2, None)),
], ids=lambda v: getattr(v, "name", str(v)))
def test_field_places(header, name, span):
    assert header[name].byte_span() == span


def test_ipv6_traffic_class_and_flow_label_bits():
    # first IPv6 word: version 4 bits, DSCP 6, ECN 2, flow label 20
    word = 6 << 28 | 0x3B << 22 | 3 << 20 | 0xABCDE
    ip6 = wire.IPV6
    assert [(word >> ip6[n].shift) & ip6[n].mask for n in ("version", "dscp", "ecn", "flow_label")] \
        == [6, 0x3B, 3, 0xABCDE]


def test_ev_bit_fields():
    # plane 3, spine 5, entropy 0xC123: 0x30000000 | 0x01400000 | 0xC123
    ev = 0x3140C123
    assert (ev >> wire.EV_PLANE_SHIFT) & wire.EV_PLANE_MASK == 3
    assert (ev >> wire.EV_SPINE_SHIFT) & wire.EV_SPINE_MASK == 5
    assert ev & wire.EV_ENTROPY_MASK == 0xC123
    # UDP source port = low 16 bits, flow label = high 16 bits
    assert ev & ((1 << wire.EV_FLOW.shift) - 1) == 0xC123
    assert (ev >> wire.EV_FLOW.shift) & wire.EV_FLOW.mask == 0x3140


@pytest.mark.parametrize("header", [wire.ETHERNET, wire.IPV6, wire.UDP, *wire.MRC_HEADERS,
                                    wire.EV], ids=lambda h: h.name)
def test_words_tile_each_header_and_fields_fill_their_words(header):
    at = 0
    for offset, size in header.words():
        assert offset == at, f"{header.name}: gap or overlap at byte {at}"
        fields = [f for f in header.fields if (f.offset, f.size) == (offset, size)]
        bits = sorted((f.shift, f.width) for f in fields)
        low = 0
        for shift, width in bits:
            assert shift == low, f"{header.name}: bits of the word at {offset} do not tile"
            low += width
        assert low == 8 * size
        at += size


def test_a_field_across_a_byte_boundary_has_no_byte_span():
    with pytest.raises(ValueError):
        wire.Field("odd", 0, 2, 4, 8).byte_span()
