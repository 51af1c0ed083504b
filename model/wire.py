"""The MRC wire table: every header this emulator puts on the wire, each field's place in it,
and the numbers the fields carry (opcodes, NACK reasons, skip modes, endpoint operations, the
UDP port, the DSCP and ECN code points, the EV's bit fields).

Why one table: the same bytes are written or read in six places and four languages: the codec
(struct), the pcap loader (numpy), the Scapy layers, the trimmer's Python model, the Wireshark
dissector (Lua) and the in-fabric trimmer (C, BPF). A field typed into each of them separately
can be changed in five and missed in the sixth, and the sixth still looks right on its own.
Here the layout is written once: the codec's struct formats and the pcap loader's offsets are
built from it, the dissector's generated block and the trimmer's header
(emulation/network/bpf/mrc_wire.h) are written from it by scripts/gen_wire.py (a unit test fails when
the committed files differ), and a test checks the Scapy layers against it.
traffic/WIRE_FORMAT.md compares every field with the public sources.

How a field is described: `offset` and `size` name the big-endian word (1, 2, 4, 8 or 16 bytes)
that holds it, the unit struct reads; `shift` and `bits` say where in that word the field sits
(shift = the bit number of its least significant bit, bit 0 = the word's LSB). A field that is
the whole word has shift 0 and bits = 8 * size.

Pure data: stdlib only, so every package (and the generator script) can read it.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


@dataclass(frozen=True)
class Field:
    """One field: `bits` bits at `shift` (LSB = 0) of the `size`-byte word at byte `offset`."""

    name: str
    offset: int
    size: int
    shift: int = 0
    bits: int = 0           # 0: the whole word (8 * size)

    @property
    def width(self) -> int:
        """The field's width in bits."""
        return self.bits or 8 * self.size

    @property
    def mask(self) -> int:
        """The field's value mask after shifting it down."""
        return (1 << self.width) - 1

    @property
    def first_bit(self) -> int:
        """Bit position of the field's most significant bit from the header start (bit 0 =
        the first byte's most significant bit, the order the bytes go on the wire)."""
        return 8 * self.offset + 8 * self.size - self.shift - self.width

    def byte_span(self) -> tuple[int, int, int | None]:
        """(byte offset, byte count, mask in that span or None): the smallest run of whole
        bytes holding the field, with the mask a dissector applies to it (None when the field
        fills the bytes). A field that is not byte aligned must sit inside one byte."""
        first = self.first_bit
        if first % 8 == 0 and self.width % 8 == 0:
            return first // 8, self.width // 8, None
        byte = first // 8
        if (first + self.width - 1) // 8 != byte:
            raise ValueError(f"field {self.name} crosses a byte boundary without filling it")
        low = 8 - (first % 8) - self.width
        return byte, 1, ((1 << self.width) - 1) << low


_STRUCT_CODES = {1: "B", 2: "H", 4: "I", 8: "Q", 16: "16s", 6: "6s"}


@dataclass(frozen=True)
class Header:
    """A header: its fields in wire order (fields of one word share its offset and size)."""

    name: str
    fields: tuple[Field, ...]

    def words(self) -> tuple[tuple[int, int], ...]:
        """(offset, size) of each word in order; they tile the header without a gap."""
        out: list[tuple[int, int]] = []
        for f in self.fields:
            if not out or out[-1] != (f.offset, f.size):
                out.append((f.offset, f.size))
        return tuple(out)

    @property
    def size(self) -> int:
        offset, size = self.words()[-1]
        return offset + size

    @property
    def struct_format(self) -> str:
        """struct codes of the words, without the byte-order prefix (headers are concatenated)."""
        return "".join(_STRUCT_CODES[size] for _, size in self.words())

    def format_through(self, name: str) -> str:
        """struct codes of the words up to and including the one holding field `name`."""
        end = self.field(name).offset
        return "".join(_STRUCT_CODES[size] for offset, size in self.words() if offset <= end)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no field {name!r}")

    def __getitem__(self, name: str) -> Field:
        return self.field(name)


def _word(name: str, offset: int, size: int) -> Field:
    return Field(name, offset, size)


# ---------------------------------------------------------------- numbers carried in fields


class Opcode(IntEnum):
    """BTH opcodes (OCP MRC 1.0 as quoted by secondary sources). The WRITE family mirrors
    IBA/RoCEv2 RC 0x06..0x0B at base 0xC0.

    EV probes travel as endpoint requests/responses: the OCP API makes an EV probe an endpoint
    operation (MRC_CTL_EP_OP_EV_PROBE). ACK (cumulative ACKs ride in SACK here) and
    RELIABILITY_PROBE are named so captures and decoders know them; this emulator sends neither.
    """

    WRITE_FIRST = 0xC6
    WRITE_MIDDLE = 0xC7
    WRITE_LAST = 0xC8
    WRITE_LAST_IMM = 0xC9
    WRITE_ONLY = 0xCA
    WRITE_ONLY_IMM = 0xCB
    ACK = 0xD1
    EP_REQUEST = 0xD8
    EP_RESPONSE = 0xD9
    SACK = 0xDC
    NACK = 0xDD
    RELIABILITY_PROBE = 0xDE


WRITE_OPCODES = frozenset(range(Opcode.WRITE_FIRST, Opcode.WRITE_ONLY_IMM + 1))
IMM_OPCODES = frozenset((Opcode.WRITE_LAST_IMM, Opcode.WRITE_ONLY_IMM))
LAST_OPCODES = frozenset((Opcode.WRITE_LAST, Opcode.WRITE_LAST_IMM,
                          Opcode.WRITE_ONLY, Opcode.WRITE_ONLY_IMM))
PROBE_OPCODES = frozenset((Opcode.EP_REQUEST, Opcode.EP_RESPONSE))


class NackReason(IntEnum):
    """NACK reason codes (secondary; the same numbers as UET 1.0's PDS NACK codes)."""

    TRIMMED = 0x01
    TRIMMED_LASTHOP = 0x02
    NO_BITMAP = 0x06
    NO_PKT_BUFFER = 0x07
    NO_RESOURCE = 0x0A
    PSN_OOR_WINDOW = 0x0B
    UNEXP_EVENT = 0x19
    # Project choice for the single-path RoCE RC baseline (traffic/core/roce_rc.py): the RoCE AETH
    # NAK "PSN sequence error" syndrome (0x60) carried in the same NACK message, so the
    # baseline uses the same message types as MRC.
    PSN_SEQ_ERR = 0x60


class SkipMode(IntEnum):
    """SACK M field: what the sender should do with the reflected EV (secondary)."""

    NONE = 0
    SKIP_ONCE = 1       # ECN echo: pass over this EV for a while
    ALWAYS_SKIP = 2


class EndpointOp(IntEnum):
    """What an endpoint request asks for: numbered as the OCP API's enum mrc_ctl_ep_op_type
    (whether those numbers are also the wire values is not public: project choice)."""

    EV_PROBE = 0
    PORT_STATUS_UPDATE = 1      # not sent here: port status rides in every SACK/NACK/probe


# RoCEv2's UDP destination port, which MRC keeps (secondary).
ROCE_UDP_PORT = 4791
PROBE_QP = 0x2          # destination QP of endpoint requests/responses (secondary)
PSN_BITS = 24           # IBA/RoCEv2
PSN_MASK = (1 << PSN_BITS) - 1
SACK_BITMAP_BITS = 64   # secondary
BTH_PKEY_DEFAULT = 0xFFFF   # IBA default partition
HOP_LIMIT = 64
METH_FLAG_TSETH = 0x01  # METH flags bit 0: a TSETH follows (project choice)

# ---------------------------------------------------------------- traffic class (IPv6)

# Traffic-class values the fabric writes and the endpoints read (outermost IPv6 header).
# The trimming program (emulation/network/bpf/trim.c, modelled by emulation/network/vqueue.py) marks trimmed
# packets with these DSCPs; receivers (traffic/core/codec.py) map them to NACK TRIMMED /
# TRIMMED_LASTHOP. All come from RFC 2474 pool 3 (xxxx11: experimental / local use), so they
# cannot collide with a standard marking; MRC senders use DSCP 0 for data, DSCP_CONTROL for
# the rest.
DSCP_DATA = 0x00
DSCP_TRIMMED = 0x3B
DSCP_TRIMMED_LASTHOP = 0x3F
TRIMMED_DSCPS = frozenset((DSCP_TRIMMED, DSCP_TRIMMED_LASTHOP))
# SACKs, NACKs and EV probes (requests and responses) leave the endpoints with this DSCP, and
# every port serves it ahead of data (the trimmed headers' HTB priority class): an ACK that
# waits behind a queue of data inflates the round trip every timer of the sender is built on,
# which is why deployments carry acknowledgements in a class of their own.
DSCP_CONTROL = 0x37
# The DSCPs a port's priority class serves ahead of data.
PRIORITY_DSCPS = (DSCP_TRIMMED, DSCP_TRIMMED_LASTHOP, DSCP_CONTROL)

# RFC 3168 ECN field values.
ECN_NOT_ECT = 0
ECN_ECT1 = 1
ECN_ECT0 = 2
ECN_CE = 3

# ---------------------------------------------------------------- headers

ETHERTYPE_IPV6 = 0x86DD
NEXT_HEADER_IPV6 = 41   # IPv6-in-IPv6 (the SRv6 outer header)
NEXT_HEADER_UDP = 17
IP_VERSION_6 = 6

ETHERNET = Header("Ethernet", (_word("dst", 0, 6), _word("src", 6, 6), _word("ethertype", 12, 2)))

IPV6 = Header("IPv6", (
    Field("version", 0, 4, 28, 4),
    Field("dscp", 0, 4, 22, 6),
    Field("ecn", 0, 4, 20, 2),
    Field("flow_label", 0, 4, 0, 20),
    _word("payload_len", 4, 2),
    _word("next_header", 6, 1),
    _word("hop_limit", 7, 1),
    _word("src", 8, 16),
    _word("dst", 24, 16),
))

UDP = Header("UDP", (_word("sport", 0, 2), _word("dport", 2, 2), _word("length", 4, 2),
                     _word("checksum", 6, 2)))

# Base Transport Header (RoCEv2 layout); byte 4 bit 0x20 = retransmission (project choice).
BTH = Header("BTH", (
    _word("opcode", 0, 1),
    Field("se", 1, 1, 7, 1),
    Field("migreq", 1, 1, 6, 1),
    Field("padcount", 1, 1, 4, 2),
    Field("tver", 1, 1, 0, 4),
    _word("pkey", 2, 2),
    Field("fecn", 4, 4, 31, 1),
    Field("becn", 4, 4, 30, 1),
    Field("retransmit", 4, 4, 29, 1),
    Field("resv5", 4, 4, 24, 5),
    Field("dqpn", 4, 4, 0, 24),
    Field("ackreq", 8, 4, 31, 1),
    Field("resv7", 8, 4, 24, 7),
    Field("psn", 8, 4, 0, PSN_BITS),
))

# MRC extended header on every WRITE packet: flags (METH_FLAG_TSETH) and the 24-bit MSN.
METH = Header("METH", (Field("flags", 0, 4, 24, 8), Field("msn", 0, 4, 0, 24)))
# Timestamp extended header: the sender's send time in ns, echoed in SACK/NACK.
TSETH = Header("TSETH", (_word("timestamp", 0, 8),))
# RDMA extended transport header: where this packet's payload lands (RoCE layout).
RETH = Header("RETH", (_word("va", 0, 8), _word("rkey", 8, 4), _word("dmalen", 12, 4)))
IMMDT = Header("ImmDt", (_word("imm", 0, 4),))

# Selective ACK with the congestion block.
SACK = Header("SACK", (
    Field("cum_resv", 0, 4, 24, 8),
    Field("cum_psn", 0, 4, 0, PSN_BITS),
    _word("sack_base", 4, 4),
    _word("bitmap", 8, 8),
    _word("ev", 16, 4),
    _word("skip", 20, 1),
    _word("mpr", 21, 1),
    _word("port_status", 22, 1),
    _word("resv", 23, 1),
    _word("echo_ts", 24, 8),
    _word("ooo_count", 32, 4),
    _word("window_penalty", 36, 4),
    _word("rx_bytes", 40, 8),
))

NACK = Header("NACK", (
    _word("reason", 0, 1),
    _word("port_status", 1, 1),
    _word("resv", 2, 2),
    _word("ev", 4, 4),
    _word("echo_ts", 8, 8),
))

# Endpoint request/response body of an EV probe: the probed EV, the QP whose path health asked,
# the requester's send time (echoed). The probe id is the BTH PSN and request vs response the
# BTH opcode, so neither is repeated here.
EPH = Header("EPH", (
    _word("op", 0, 1),
    _word("port_status", 1, 1),
    _word("resv", 2, 2),
    _word("ev", 4, 4),
    _word("src_qp", 8, 4),
    _word("timestamp", 12, 8),
))

# CRC-32 (zlib polynomial) of BTH..payload, after the payload (project choice).
ICRC_LEN = 4

# The MRC headers after UDP, in the order a WRITE packet carries them.
MRC_HEADERS = (BTH, METH, TSETH, RETH, IMMDT, SACK, NACK, EPH)

# The body after BTH of each control opcode.
CONTROL_BODIES = {Opcode.SACK: SACK, Opcode.NACK: NACK, Opcode.EP_REQUEST: EPH,
                  Opcode.EP_RESPONSE: EPH}

# ---------------------------------------------------------------- the entropy value (EV)

# EV layout (32 bits, project choice): bits 31..28 plane, 27..22 spine (T0 uplink index),
# 21..16 reserved 0, 15..0 entropy. It travels as the UDP source port (EV_SPORT, the low 16
# bits) and the low 16 bits of the 20-bit IPv6 flow label (EV_FLOW, the high 16 bits).
EV = Header("EV", (
    Field("plane", 0, 4, 28, 4),
    Field("spine", 0, 4, 22, 6),
    Field("resv", 0, 4, 16, 6),
    Field("entropy", 0, 4, 0, 16),
))
EV_PLANE_SHIFT = EV["plane"].shift
EV_PLANE_MASK = EV["plane"].mask
EV_SPINE_SHIFT = EV["spine"].shift
EV_SPINE_MASK = EV["spine"].mask
EV_ENTROPY_MASK = EV["entropy"].mask
EV_SPORT = Field("sport", 0, 4, 0, 16)
EV_FLOW = Field("flow", 0, 4, 16, 16)

