"""Scapy layers for the MRC wire format: a readable declaration of the bytes, independent of
the codec.

The layout itself is the wire table's (model/wire.py): the fast codec (traffic/core/codec.py) builds
its struct formats from it, and tests/traffic/test_layers_wire_table.py checks every field below
(name, bit position, width) against it. These layers exist so tests can check the codec against
an independent implementation, and tools can print captured packets. Too slow for the data path.

Layout (traffic/WIRE_FORMAT.md compares every field with the public sources):
Ethernet / [outer IPv6 nh=41] / IPv6 nh=17 / UDP dport 4791 / BTH / by opcode:
  WRITE family 0xC6..0xCB: METH / [TSETH if METH flag bit0] / RETH / [ImmDt on *_IMM] / payload
  SACK 0xDC: SACK        NACK 0xDD: NACK
  EP_REQUEST 0xD8 / EP_RESPONSE 0xD9: EPH (an EV probe; its id is the BTH PSN)
and a 4-byte ICRC trailer after everything: zlib.crc32 of BTH..payload in network byte order
(an integrity check of our own, not RoCE's masked ICRC). The ICRC is held by the BTH layer
(field `icrc`): computed on build when left None, taken from the last 4 bytes on dissection.

Written for this project (no scapy.contrib.roce import, which would bind UDP 4791 twice).
"""
from __future__ import annotations

import zlib

from scapy.fields import (BitField, ByteEnumField, ByteField, FlagsField,
                          IntField, LongField, ShortField, X3BytesField, XByteField,
                          XIntField, XLongField, XShortField)
from scapy.layers.inet import UDP
from scapy.packet import Packet, Raw, bind_layers

from model.wire import (ICRC_LEN, IMM_OPCODES, METH_FLAG_TSETH, ROCE_UDP_PORT, WRITE_OPCODES,
                        EndpointOp, NackReason, Opcode, SkipMode)

OPCODE_NAMES = {op.value: op.name for op in Opcode}
NACK_REASON_NAMES = {r.value: r.name for r in NackReason}
SKIP_MODE_NAMES = {m.value: m.name for m in SkipMode}
ENDPOINT_OP_NAMES = {o.value: o.name for o in EndpointOp}
# METH flag names by bit (LSB first, as FlagsField numbers them): the table's TSETH flag.
METH_FLAG_NAMES = [("tseth" if METH_FLAG_TSETH == 1 << bit else f"f{bit}") for bit in range(8)]


def icrc_of(covered: bytes) -> int:
    """The project's ICRC: CRC-32 (zlib) of BTH..payload."""
    return zlib.crc32(covered) & 0xFFFFFFFF


class _ICRCPlaceholder(XIntField):
    """Declares `icrc` on BTH without taking bytes at its position: the value lives at the
    END of the packet (after the payload), which BTH.post_dissect / post_build handle."""

    def getfield(self, pkt, s):
        return s, None

    def addfield(self, pkt, s, val):
        return s


class BTH(Packet):
    """Base Transport Header (12 B, RoCEv2 layout); byte 4 bit 0x20 = retransmission (ours)."""

    name = "BTH"
    fields_desc = [
        ByteEnumField("opcode", Opcode.WRITE_ONLY, OPCODE_NAMES),
        BitField("se", 0, 1),
        BitField("migreq", 0, 1),
        BitField("padcount", 0, 2),
        BitField("tver", 0, 4),
        XShortField("pkey", 0xFFFF),
        BitField("fecn", 0, 1),
        BitField("becn", 0, 1),
        BitField("retransmit", 0, 1),
        BitField("resv5", 0, 5),
        X3BytesField("dqpn", 0),
        BitField("ackreq", 0, 1),
        BitField("resv7", 0, 7),
        X3BytesField("psn", 0),
        _ICRCPlaceholder("icrc", None),
    ]

    def post_dissect(self, s):
        if len(s) >= ICRC_LEN:
            self.icrc = int.from_bytes(s[-ICRC_LEN:], "big")
            s = s[:-ICRC_LEN]
        # Rebuilding a dissected packet must go through post_build to re-append the trailer.
        self.raw_packet_cache = None
        return s

    def post_build(self, pkt, pay):
        icrc = self.icrc if self.icrc is not None else icrc_of(pkt + pay)
        return pkt + pay + icrc.to_bytes(ICRC_LEN, "big")

    def guess_payload_class(self, payload):
        if self.opcode in WRITE_OPCODES:
            return METH
        return {Opcode.SACK: SACK, Opcode.NACK: NACK, Opcode.EP_REQUEST: EPH,
                Opcode.EP_RESPONSE: EPH}.get(self.opcode, Raw)

    def mysummary(self):
        return self.sprintf("BTH %opcode% qp=%dqpn% psn=%psn%")


class METH(Packet):
    """MRC extended header on WRITE packets: flags (bit0 = TSETH follows) and the 24-bit MSN."""

    name = "METH"
    fields_desc = [
        FlagsField("flags", 0, 8, METH_FLAG_NAMES),
        X3BytesField("msn", 0),
    ]

    def guess_payload_class(self, payload):
        return TSETH if self.flags.tseth else RETH


class TSETH(Packet):
    """Timestamp extended header: the sender's send time in ns, echoed in SACK/NACK."""

    name = "TSETH"
    fields_desc = [LongField("timestamp", 0)]

    def guess_payload_class(self, payload):
        return RETH


def _bth_below(layer):
    under = layer.underlayer
    while under is not None and not isinstance(under, BTH):
        under = under.underlayer
    return under


class RETH(Packet):
    """RDMA extended transport header: where this packet's payload lands (RoCE layout)."""

    name = "RETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0), IntField("dmalen", 0)]

    def guess_payload_class(self, payload):
        bth = _bth_below(self)
        if bth is not None and bth.opcode in IMM_OPCODES:
            return ImmDt
        return Raw


class ImmDt(Packet):
    name = "ImmDt"
    fields_desc = [XIntField("imm", 0)]

    def guess_payload_class(self, payload):
        return Raw


class SACK(Packet):
    """Selective ACK with the congestion block (48 B)."""

    name = "SACK"
    fields_desc = [
        BitField("cum_resv", 0, 8),
        X3BytesField("cum_psn", 0),
        XIntField("sack_base", 0),
        XLongField("bitmap", 0),
        XIntField("ev", 0),
        ByteEnumField("skip", 0, SKIP_MODE_NAMES),
        ByteField("mpr", 8),
        XByteField("port_status", 0),
        ByteField("resv", 0),
        LongField("echo_ts", 0),
        IntField("ooo_count", 0),
        IntField("window_penalty", 0),
        LongField("rx_bytes", 0),
    ]

    def guess_payload_class(self, payload):
        return Raw


class NACK(Packet):
    name = "NACK"
    fields_desc = [
        ByteEnumField("reason", NackReason.TRIMMED, NACK_REASON_NAMES),
        XByteField("port_status", 0),
        ShortField("resv", 0),
        XIntField("ev", 0),
        LongField("echo_ts", 0),
    ]

    def guess_payload_class(self, payload):
        return Raw


class EPH(Packet):
    """Endpoint request/response body (20 B). For an EV probe: the probed EV, the QP whose path
    health asked, and the requester's send time (echoed, for the RTT). The probe id is the BTH
    PSN and request vs response is the BTH opcode, so neither is repeated here."""

    name = "EPH"
    fields_desc = [
        ByteEnumField("op", EndpointOp.EV_PROBE, ENDPOINT_OP_NAMES),
        XByteField("port_status", 0),
        ShortField("resv", 0),
        XIntField("ev", 0),
        XIntField("src_qp", 0),
        LongField("timestamp", 0),
    ]

    def guess_payload_class(self, payload):
        return Raw


bind_layers(UDP, BTH, dport=ROCE_UDP_PORT)
# RoCEv2 is recognised by its destination port alone. The source port carries the EV and may
# equal a port Scapy binds (53 DNS, 123 NTP, ...), whose binding would win if tried first, so
# ours goes to the front of UDP's list.
UDP.payload_guess = ([g for g in UDP.payload_guess if g[1] is BTH]
                     + [g for g in UDP.payload_guess if g[1] is not BTH])
