"""Fast MRC wire codec: traffic/messages objects <-> full Ethernet frames, without Scapy per packet.

API (everything else in this module is private):

    codec = Codec(topology)                    # once per process; topology = model.topology.Topology
    enc = codec.encoder(src_host, dst_host, plane, mode)   # mode "srv6" | "ecmp"; cached per key
    hop = codec.hop_encoder(host, plane, tier)  # a per-hop self-probe: tier 0 turns at the host's
        T0, tier 1 at the T1 its EV's spine names (Topology.hop_container; srv6 only)
    frame: bytes = enc.encode(msg, ev=None, ecn=ECN_ECT0)
        msg: messages.DataPacket | Sack | Nack | Probe.  ev: the wire EV (UDP sport = ev & 0xffff,
        flow label(s) = ev >> 16; in srv6 mode the outer destination is the uSID container of
        spine ev_spine(ev)); defaults to DataPacket.ev, or Sack/Nack/Probe.path_ev (the EV the
        message travels on; if that is 0, their .ev = the reflected/probed EV in their body).
        The EV's plane bits must equal the encoder's plane. ecn: the 2 ECN bits
        written in every IPv6 header (ECT(0) by default so switches may mark CE).
        Raises ValueError on a message that cannot be encoded (field out of range, imm on a
        non-IMM opcode, ...).
    msg, meta = codec.decode(frame)            # frame: bytes | bytearray | memoryview
        meta: FrameMeta(src_host, src_plane, dst_host, dst_plane, src_addr, dst_addr, ev, ecn_ce,
        srv6, trimmed, trim_lasthop, frame_len). DataPacket gets ev/ecn_ce/trimmed/trim_lasthop
        filled from meta; Sack/Nack/Probe get path_ev = the wire EV.
        A DataPacket's payload is a slice of `frame`: bytes in -> a bytes copy; memoryview in ->
        a zero-copy view (copy it before reusing a receive buffer).
        Raises only DecodeError; its .reason is one of DECODE_REASONS (count drops by it).
    (the trimmer's reference model is emulation.network.vqueue.trim_frame; tests decode its output)

Wire layout: the wire table model/wire.py defines it (every struct format and bit position below
is built from it at import); traffic/WIRE_FORMAT.md compares it with the sources; the Scapy
layers (traffic/layers.py) are an independent implementation the tests compare with.
Project decisions made here:
- Trimmed packets: a WRITE frame that still holds every header through RETH/ImmDt but lost its
  payload+ICRC decodes as trimmed=True with an empty payload (ICRC unchecked: it is gone). Two
  trimmers exist: the tc BPF one (emulation/network/bpf/trim.c) cuts to the headers, fixes the lengths
  (UDP length == headers exactly, no ICRC) and sets the outer DSCP to DSCP_TRIMMED or
  DSCP_TRIMMED_LASTHOP (-> trim_lasthop=True); without one of those DSCPs such a frame is
  "bad_length" (nothing else vouches for its headers). A plain truncation (OVS output max_len)
  leaves the lengths alone, so the frame is shorter than its UDP length says. Headers cut ->
  DecodeError("truncated"). Control packets (SACK/NACK/endpoint requests) are never trimmed.
- UDP checksum: 0 by default. IPv6 normally forbids a zero UDP checksum (RFC 8200); RFC 6935/6936
  allow it for tunnel-like encapsulations whose payload carries its own integrity check, which
  is how RoCEv2 is deployed: the ICRC (here CRC-32 over BTH..payload) covers everything that
  matters, and a trimmer need not fix a checksum. Our receivers read frames with AF_PACKET,
  so the kernel's UDP stack never has to accept them. Codec(topology, udp_checksum=True) computes a correct checksum instead (cheap: one big-int
  modulo), for tools that insist. The decoder ignores the UDP checksum (the ICRC decides).
- Payload is not padded to 4 bytes (BTH pad count stays 0); the payload length comes from the
  UDP length.
- Destination MAC is the destination host's NIC MAC on that plane (the hosts' permanent
  neighbour entries); switches forward on IPv6 only.
"""
from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

try:
    # ISA-L's CRC-32: the same polynomial and results as zlib.crc32, with carry-less multiply
    # instructions (several times faster than zlib's over a jumbo frame:
    # docs/results/2026-11-27-performance.md),
    # and the ICRC is computed twice per data packet (encode, decode).
    from isal.isal_zlib import crc32
except ImportError:                         # a platform without its wheel: zlib, same values
    from zlib import crc32

from model.topology import Topology, ev_spine
# The layout and every number on the wire: the wire table. The outer DSCPs are the ones the
# in-fabric trimmer writes (emulation/network/bpf/trim.c; vqueue is its pure model).
from model.wire import (BTH, BTH_PKEY_DEFAULT, CONTROL_BODIES, DSCP_CONTROL,  # noqa: F401
                        DSCP_DATA, DSCP_TRIMMED_LASTHOP, ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT,
                        EPH, ETHERNET, ETHERTYPE_IPV6, EV_FLOW, EV_PLANE_SHIFT, HOP_LIMIT,
                        ICRC_LEN, IMMDT, IP_VERSION_6, IPV6, METH, METH_FLAG_TSETH, NACK,
                        NEXT_HEADER_IPV6, NEXT_HEADER_UDP, RETH, ROCE_UDP_PORT, SACK,
                        TRIMMED_DSCPS, TSETH, UDP)
from traffic.core.messages import (IMM_OPCODES, PROBE_QP, PSN_MASK, WRITE_OPCODES, DataPacket,
                              EndpointOp, Nack, Opcode, Probe, Sack)

MODES = ("srv6", "ecmp")

DECODE_REASONS = (
    "not_bytes",      # decode() was handed something that is not a buffer
    "truncated",      # frame ends before a header it announces
    "not_ipv6",       # ethertype or IP version is not IPv6
    "not_udp",        # (inner) next header is not UDP (extension headers are not used)
    "not_roce",       # UDP destination port != 4791
    "bad_length",     # IPv6 / UDP / message lengths disagree
    "bad_opcode",     # BTH opcode MRC does not use here
    "bad_icrc",       # CRC-32 over BTH..payload does not match
    "foreign_addr",   # source or destination address is not a NIC of this fabric
    "malformed",      # anything else (should not happen; kept so decode never raises otherwise)
)


class DecodeError(ValueError):
    """A frame that is not a valid MRC packet of this fabric. .reason is a DECODE_REASONS key."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass(slots=True)
class FrameMeta:
    """What the headers around an MRC message say (the endpoint needs it; messages do not carry it)."""

    src_host: int
    src_plane: int
    dst_host: int
    dst_plane: int
    src_addr: str
    dst_addr: str
    ev: int             # from UDP sport + inner flow label
    ecn_ce: bool        # CE in the outermost IPv6 header (the one switches mark)
    srv6: bool          # IPv6-in-IPv6 (source routed) frame
    trimmed: bool       # a WRITE whose payload was cut in-fabric
    trim_lasthop: bool  # ... by the receiver's last-hop port (outer DSCP_TRIMMED_LASTHOP)
    frame_len: int


# ------------------------------------------------------------------ layout constants

# Everything below is built at import from the wire table (model/wire.py): lengths,
# bit positions and struct formats. Nothing here restates a width or an offset.
ETH_LEN, IP6_LEN, UDP_LEN, BTH_LEN = ETHERNET.size, IPV6.size, UDP.size, BTH.size
METH_LEN, TSETH_LEN, RETH_LEN, IMM_LEN = METH.size, TSETH.size, RETH.size, IMMDT.size
NH_IPV6, NH_UDP = NEXT_HEADER_IPV6, NEXT_HEADER_UDP
RETRANSMIT_BIT = 1 << BTH["retransmit"].shift     # in the BTH word at byte 4 (project choice)
ACKREQ_BIT = 1 << BTH["ackreq"].shift             # in the BTH word at byte 8
QP_MASK = BTH["dqpn"].mask
METH_TSETH = METH_FLAG_TSETH << METH["flags"].shift   # in the METH word
METH_FLAGS_SHIFT = METH["flags"].shift
MSN_MASK = METH["msn"].mask
_IP6_V6 = IP_VERSION_6 << IPV6["version"].shift
_IP6_DSCP_SHIFT = IPV6["dscp"].shift
_IP6_DSCP_MASK = IPV6["dscp"].mask
_IP6_ECN_SHIFT = IPV6["ecn"].shift
_IP6_ECN_MASK = IPV6["ecn"].mask
_ECN_VALUES = tuple(range(_IP6_ECN_MASK + 1))
_IP6_NH_OFF = IPV6["next_header"].offset
_IP6_DST_OFF = IPV6["dst"].offset
_IP6_DST_LEN = IPV6["dst"].size
_ETHERTYPE_OFF = ETHERNET["ethertype"].offset
_ETHERTYPE_HI, _ETHERTYPE_LO = ETHERTYPE_IPV6.to_bytes(ETHERNET["ethertype"].size, "big")
_UDP_CHECKSUM_OFF = UDP["checksum"].offset
_EV_FLOW_SHIFT, _EV_FLOW_MASK = EV_FLOW.shift, EV_FLOW.mask
_EV_SPORT_MASK = (1 << _EV_FLOW_SHIFT) - 1
# Field widths the encoders check per packet, looked up once here (the table's lookup by name
# is a search, too slow for the per-packet path).
_QP_BITS = BTH["dqpn"].width
_PSN_BITS = BTH["psn"].width
_MSN_BITS = METH["msn"].width
_CUM_PSN_BITS = SACK["cum_psn"].width


def _struct(*headers) -> struct.Struct:
    """One big-endian struct over the words of `headers` laid end to end."""
    return struct.Struct("!" + "".join(h.struct_format for h in headers))


_U16 = struct.Struct("!H")
_U32 = struct.Struct("!I")
_IP6_HEAD = struct.Struct("!" + IPV6.format_through("payload_len"))  # first word, payload length
_UDP = _struct(UDP)
_BTH = _struct(BTH)               # opcode, se/m/pad/tver, pkey, byte4 flags | qp, ackreq | psn
_METH = _struct(METH)
_RETH = _struct(RETH)
_IMM = _struct(IMMDT)
_SACK = _struct(SACK)
_NACK = _struct(NACK)
_PROBE = _struct(EPH)             # endpoint request/response body (EPH) of an EV probe
SACK_LEN, NACK_LEN, PROBE_LEN = _SACK.size, _NACK.size, _PROBE.size
# Every header from the (outer) IPv6 header through BTH in one unpack (decode reads them all for
# every frame): IPv6 first word, payload length, next header, hop limit, source, destination;
# once more for the inner IPv6 header in SRv6 mode; UDP; BTH.
_HEADERS_SRV6 = _struct(IPV6, IPV6, UDP, BTH)
_HEADERS_PLAIN = _struct(IPV6, UDP, BTH)
_TSETH_RETH = _struct(TSETH, RETH)            # timestamp, then RETH (va, rkey, dma_len)
_METH_TSETH_RETH = _struct(METH, TSETH, RETH)  # what every data packet of this sender carries

_CONTROL_BODY = {op: body.size for op, body in CONTROL_BODIES.items()}


def _check(name: str, value, bits: int) -> None:
    if not isinstance(value, int) or not 0 <= value < (1 << bits):
        raise ValueError(f"{name}={value!r} does not fit {bits} bits")


def _ones_sum(data) -> int:
    """Internet ones'-complement sum of data, mod 0xFFFF: 2**16 == 1 (mod 0xFFFF), so the
    big-endian integer of the bytes is congruent to the sum of its 16-bit words."""
    n = int.from_bytes(data, "big")
    if len(data) & 1:
        n <<= 8
    return n % 0xFFFF


# ------------------------------------------------------------------ encoder


class Encoder:
    """Frames from one host NIC to another host's NIC on one plane in one mode.

    Built once from a Scapy template (so the static header bytes are Scapy's), then each
    encode() patches only the per-packet fields into a preallocated buffer.
    """

    def __init__(self, topo: Topology, src_host: int, dst_host: int, plane: int, mode: str,
                 udp_checksum: bool = False, hop_tier: int | None = None):
        from scapy.layers.inet import UDP
        from scapy.layers.inet6 import IPv6
        from scapy.layers.l2 import Ether

        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if hop_tier is None and src_host == dst_host:
            raise ValueError(f"source and destination are the same host {src_host}")
        if hop_tier is not None and (src_host != dst_host or mode != "srv6"
                                     or hop_tier not in (0, 1)):
            raise ValueError(f"a hop probe goes from a host back to itself (got {src_host} -> "
                             f"{dst_host}) in srv6 mode (got {mode!r}), turning at tier 0 or 1 "
                             f"(got {hop_tier!r})")
        self.src_host, self.dst_host, self.plane, self.mode = src_host, dst_host, plane, mode
        src_addr, dst_addr = topo.nic_addr(src_host, plane), topo.nic_addr(dst_host, plane)
        template = Ether(src=topo.nic_mac(src_host, plane), dst=topo.nic_mac(dst_host, plane))
        self.srv6 = mode == "srv6"
        if self.srv6:
            # One container per spine: the EV's spine bits pick the path.
            self._containers = [ipaddress.IPv6Address(
                topo.usid_container(src_host, dst_host, plane, s) if hop_tier is None
                else topo.hop_container(src_host, plane, s if hop_tier else None)).packed
                for s in range(topo.spec.spines)]
            template /= IPv6(src=src_addr, dst=ipaddress.IPv6Address(self._containers[0]).compressed,
                             nh=NH_IPV6, hlim=HOP_LIMIT)
        template /= IPv6(src=src_addr, dst=dst_addr, nh=NH_UDP, hlim=HOP_LIMIT)
        template /= UDP(sport=1, dport=ROCE_UDP_PORT, chksum=0)
        prefix = bytes(template)
        self._outer_off = ETH_LEN
        self._ip_off = ETH_LEN + (IP6_LEN if self.srv6 else 0)
        self._udp_off = self._ip_off + IP6_LEN
        self._bth_off = self._udp_off + UDP_LEN
        assert len(prefix) == self._bth_off
        self._buf = bytearray(prefix) + bytearray(2048)
        self._view = memoryview(self._buf)
        self._udp_checksum = udp_checksum
        pseudo = (ipaddress.IPv6Address(src_addr).packed + ipaddress.IPv6Address(dst_addr).packed)
        self._pseudo_sum = _ones_sum(pseudo) + NH_UDP

    def encode(self, msg, ev: int | None = None, ecn: int = ECN_ECT0) -> bytes:
        """The frame of `msg`; data with DSCP 0, every control message with DSCP_CONTROL (the
        ports' priority class: model/dscp.py)."""
        dscp = DSCP_CONTROL
        if isinstance(msg, DataPacket):
            end = self._write_data(msg)
            dscp = DSCP_DATA
        elif isinstance(msg, Sack):
            end = self._write_sack(msg)
        elif isinstance(msg, Nack):
            end = self._write_nack(msg)
        elif isinstance(msg, Probe):
            end = self._write_probe(msg)
        else:
            raise ValueError(f"cannot encode {type(msg).__name__}: not an MRC message")
        crc = crc32(self._view[self._bth_off:end])
        _U32.pack_into(self._buf, end, crc)
        end += ICRC_LEN
        if ev is None:
            ev = getattr(msg, "path_ev", 0) or msg.ev
        self._write_ip_udp(ev, ecn, end - self._udp_off, dscp)
        return bytes(self._view[:end])

    def _room(self, end: int) -> None:
        """Grow the buffer for an unusually large payload (rare; keeps encode() simple)."""
        if end + ICRC_LEN > len(self._buf):
            self._view.release()
            self._buf.extend(bytearray(end + ICRC_LEN - len(self._buf) + 1024))
            self._view = memoryview(self._buf)

    def _write_ip_udp(self, ev: int, ecn: int, udp_len: int, dscp: int = 0) -> None:
        if not isinstance(ev, int) or not 0 <= ev <= 0xFFFFFFFF:
            raise ValueError(f"ev={ev!r} is not a 32-bit entropy value")
        if ev >> EV_PLANE_SHIFT != self.plane:
            raise ValueError(f"ev {ev:#x} belongs to plane {ev >> EV_PLANE_SHIFT}, "
                             f"this encoder sends on plane {self.plane}")
        if ecn not in _ECN_VALUES:
            raise ValueError(f"ecn={ecn!r} is not a 2-bit ECN codepoint")
        buf = self._buf
        word = _IP6_V6 | dscp << _IP6_DSCP_SHIFT | ecn << _IP6_ECN_SHIFT | ev >> _EV_FLOW_SHIFT
        if self.srv6:
            _IP6_HEAD.pack_into(buf, self._outer_off, word, udp_len + IP6_LEN)
            dst_off = self._outer_off + _IP6_DST_OFF
            buf[dst_off:dst_off + _IP6_DST_LEN] = self._containers[
                ev_spine(ev) % len(self._containers)]
        _IP6_HEAD.pack_into(buf, self._ip_off, word, udp_len)
        _UDP.pack_into(buf, self._udp_off, ev & _EV_SPORT_MASK, ROCE_UDP_PORT, udp_len, 0)
        if self._udp_checksum:
            total = self._pseudo_sum + udp_len + _ones_sum(
                self._view[self._udp_off:self._udp_off + udp_len])
            _U16.pack_into(buf, self._udp_off + _UDP_CHECKSUM_OFF, 0xFFFF - total % 0xFFFF)

    def _write_bth(self, opcode: int, flags4: int, qp: int, ackreq: bool, psn: int) -> None:
        """flags4: the flag bits of the BTH word at byte 4 (RETRANSMIT_BIT), in place."""
        _check("dest_qp", qp, _QP_BITS)
        _check("psn", psn, _PSN_BITS)
        _BTH.pack_into(self._buf, self._bth_off, opcode, 0, BTH_PKEY_DEFAULT, flags4 | qp,
                       (ACKREQ_BIT if ackreq else 0) | psn)

    def _write_data(self, m: DataPacket) -> int:
        op = m.opcode
        if op not in WRITE_OPCODES:
            raise ValueError(f"DataPacket opcode {op!r} is not a WRITE opcode (0xC6..0xCB)")
        has_imm = op in IMM_OPCODES
        if has_imm != (m.imm is not None):
            raise ValueError(f"imm must be set exactly on *_IMM opcodes (opcode {op:#x}, "
                             f"imm {m.imm!r})")
        _check("msn", m.msn, _MSN_BITS)
        self._write_bth(op, RETRANSMIT_BIT if m.retransmit else 0, m.dest_qp, m.ack_req, m.psn)
        buf = self._buf
        off = self._bth_off + BTH_LEN
        try:
            if m.timestamp is not None:
                _METH_TSETH_RETH.pack_into(buf, off, METH_TSETH | m.msn, m.timestamp, m.va,
                                           m.rkey, m.dma_len)
                off += METH_LEN + TSETH_LEN + RETH_LEN
            else:
                _METH.pack_into(buf, off, m.msn)
                _RETH.pack_into(buf, off + METH_LEN, m.va, m.rkey, m.dma_len)
                off += METH_LEN + RETH_LEN
            if has_imm:
                _IMM.pack_into(buf, off, m.imm)
                off += IMM_LEN
        except struct.error as exc:
            raise ValueError(f"DataPacket field out of range: {exc}") from None
        end = off + len(m.payload)
        self._room(end)
        self._buf[off:end] = m.payload
        return end

    def _write_sack(self, m: Sack) -> int:
        _check("cum_psn", m.cum_psn, _CUM_PSN_BITS)
        self._write_bth(Opcode.SACK, 0, m.dest_qp, False, m.cum_psn)
        off = self._bth_off + BTH_LEN
        try:
            _SACK.pack_into(self._buf, off, m.cum_psn, m.sack_base, m.bitmap, m.ev, m.skip,
                            m.mpr, m.port_status, 0, m.echo_timestamp, m.ooo_count,
                            m.window_penalty, m.rx_bytes)
        except struct.error as exc:
            raise ValueError(f"Sack field out of range: {exc}") from None
        return off + SACK_LEN

    def _write_nack(self, m: Nack) -> int:
        self._write_bth(Opcode.NACK, 0, m.dest_qp, False, m.psn)
        off = self._bth_off + BTH_LEN
        try:
            _NACK.pack_into(self._buf, off, m.reason, m.port_status, 0, m.ev, m.echo_timestamp)
        except struct.error as exc:
            raise ValueError(f"Nack field out of range: {exc}") from None
        return off + NACK_LEN

    def _write_probe(self, m: Probe) -> int:
        _check("seq", m.seq, _PSN_BITS)       # the probe id is the PSN
        self._write_bth(Opcode.EP_RESPONSE if m.response else Opcode.EP_REQUEST, 0, PROBE_QP,
                        False, m.seq)
        off = self._bth_off + BTH_LEN
        try:
            _PROBE.pack_into(self._buf, off, EndpointOp.EV_PROBE, m.port_status, 0, m.ev,
                             m.src_qp, m.timestamp)
        except struct.error as exc:
            raise ValueError(f"Probe field out of range: {exc}") from None
        return off + PROBE_LEN


# ------------------------------------------------------------------ decoder


def _ip_udp_offsets(frame) -> tuple[int, int, bool]:
    """(inner IPv6 offset, UDP offset, srv6) after checking Ethernet/IPv6/UDP framing."""
    n = len(frame)
    if n < ETH_LEN + IP6_LEN:
        raise DecodeError("truncated", "shorter than Ethernet + IPv6")
    if frame[_ETHERTYPE_OFF] != _ETHERTYPE_HI or frame[_ETHERTYPE_OFF + 1] != _ETHERTYPE_LO:
        raise DecodeError("not_ipv6", f"ethertype {frame[_ETHERTYPE_OFF]:02x}"
                                      f"{frame[_ETHERTYPE_OFF + 1]:02x}")
    if frame[ETH_LEN] >> 4 != IP_VERSION_6:
        raise DecodeError("not_ipv6", "IP version is not 6")
    nh = frame[ETH_LEN + _IP6_NH_OFF]
    ip = ETH_LEN
    srv6 = False
    if nh == NH_IPV6:
        srv6 = True
        ip = ETH_LEN + IP6_LEN
        if n < ip + IP6_LEN:
            raise DecodeError("truncated", "shorter than the inner IPv6 header")
        if frame[ip] >> 4 != IP_VERSION_6:
            raise DecodeError("not_ipv6", "inner IP version is not 6")
        nh = frame[ip + _IP6_NH_OFF]
    if nh != NH_UDP:
        raise DecodeError("not_udp", f"next header {nh}")
    return ip, ip + IP6_LEN, srv6


class Codec:
    """Encoders (cached) and the decoder for one fabric. See the module docstring for the API."""

    def __init__(self, topo: Topology, udp_checksum: bool = False):
        self.topo = topo
        self.udp_checksum = udp_checksum
        self._encoders: dict[tuple, Encoder] = {}
        self._addrs: dict[bytes, tuple[int, int, str]] = {}
        for h in topo.hosts:
            for p in range(topo.spec.planes):
                a = topo.nic_addr(h.index, p)
                self._addrs[ipaddress.IPv6Address(a).packed] = (h.index, p, a)

    def encoder(self, src_host: int, dst_host: int, plane: int, mode: str) -> Encoder:
        key = (src_host, dst_host, plane, mode)
        enc = self._encoders.get(key)
        if enc is None:
            enc = self._encoders[key] = Encoder(self.topo, src_host, dst_host, plane, mode,
                                                self.udp_checksum)
        return enc

    def hop_encoder(self, host: int, plane: int, tier: int) -> Encoder:
        """The encoder of `host`'s hop probes on `plane` turning at `tier` (0: its T0, 1: the
        T1 of the EV's spine)."""
        key = (host, host, plane, "srv6", tier)
        enc = self._encoders.get(key)
        if enc is None:
            enc = self._encoders[key] = Encoder(self.topo, host, host, plane, "srv6",
                                                self.udp_checksum, hop_tier=tier)
        return enc

    def decode(self, frame):
        """(message, FrameMeta) of one frame; raises only DecodeError."""
        try:
            return self._decode(frame)
        except DecodeError:
            raise
        except TypeError as exc:
            raise DecodeError("not_bytes", str(exc)) from None
        except Exception as exc:  # a bug here must not kill an endpoint: count it instead
            raise DecodeError("malformed", f"{type(exc).__name__}: {exc}") from None

    def _decode(self, frame):
        view = memoryview(frame)
        n = len(frame)
        _, udp, srv6 = _ip_udp_offsets(frame)
        if n < udp + UDP_LEN + BTH_LEN:
            raise DecodeError("truncated", "shorter than UDP + BTH")
        if srv6:
            (first_word, outer_plen, _, _, _, _, word, plen, _, _, src_addr, dst_addr,
             sport, dport, udp_len, _, opcode, _, _, w4, w8) = _HEADERS_SRV6.unpack_from(
                frame, ETH_LEN)
            if dport == ROCE_UDP_PORT and udp_len == plen and outer_plen != plen + IP6_LEN:
                raise DecodeError("bad_length", "outer IPv6 payload length != inner + 40")
        else:
            (first_word, plen, _, _, src_addr, dst_addr, sport, dport, udp_len, _, opcode, _,
             _, w4, w8) = _HEADERS_PLAIN.unpack_from(frame, ETH_LEN)
            word = first_word
        ecn_ce = (first_word >> _IP6_ECN_SHIFT) & _IP6_ECN_MASK == ECN_CE
        dscp = (first_word >> _IP6_DSCP_SHIFT) & _IP6_DSCP_MASK
        if dport != ROCE_UDP_PORT:
            raise DecodeError("not_roce", f"UDP port {dport}")
        if udp_len != plen:
            raise DecodeError("bad_length", f"UDP length {udp_len} != IPv6 payload {plen}")
        src = self._addrs.get(src_addr)
        dst = self._addrs.get(dst_addr)
        if src is None or dst is None:
            raise DecodeError("foreign_addr", "address is not a NIC of this fabric")
        ev = (word & _EV_FLOW_MASK) << _EV_FLOW_SHIFT | sport
        bth = udp + UDP_LEN
        end = udp + udp_len                       # where the ICRC ends per the lengths
        short = n < end                           # trimmed (or cut) in flight
        qp, psn = w4 & QP_MASK, w8 & PSN_MASK
        off = bth + BTH_LEN
        trimmed = trim_lasthop = False
        if opcode in WRITE_OPCODES:
            meth = _METH.unpack_from(frame, off)[0] if n >= off + METH_LEN else None
            if meth is None:
                raise DecodeError("truncated", "no METH")
            has_ts = meth >> METH_FLAGS_SHIFT & METH_FLAG_TSETH
            hdr_end = off + METH_LEN + (TSETH_LEN if has_ts else 0) + RETH_LEN + (
                IMM_LEN if opcode in IMM_OPCODES else 0)
            if n < hdr_end:
                raise DecodeError("truncated", "data headers cut")
            if end == hdr_end and dscp in TRIMMED_DSCPS:   # trimmed, lengths fixed by the trimmer
                short = True
            elif hdr_end + ICRC_LEN > end:
                raise DecodeError("bad_length", "UDP length does not fit the data headers + ICRC")
            off += METH_LEN
            if has_ts:
                timestamp, va, rkey, dma_len = _TSETH_RETH.unpack_from(frame, off)
                off += TSETH_LEN + RETH_LEN
            else:
                timestamp = None
                va, rkey, dma_len = _RETH.unpack_from(frame, off)
                off += RETH_LEN
            imm = None
            if opcode in IMM_OPCODES:
                imm = _IMM.unpack_from(frame, off)[0]
                off += IMM_LEN
            if short:
                trimmed = True
                trim_lasthop = dscp == DSCP_TRIMMED_LASTHOP
                payload = frame[off:off]
            else:
                self._check_icrc(view, bth, end)
                payload = frame[off:end - ICRC_LEN]
            msg = DataPacket(dest_qp=qp, psn=psn, opcode=opcode, msn=meth & MSN_MASK, va=va,
                             rkey=rkey, dma_len=dma_len, payload=payload, imm=imm,
                             timestamp=timestamp, ack_req=bool(w8 & ACKREQ_BIT),
                             retransmit=bool(w4 & RETRANSMIT_BIT), ev=ev, ecn_ce=ecn_ce,
                             trimmed=trimmed, trim_lasthop=trim_lasthop)
        else:
            body = _CONTROL_BODY.get(opcode)
            if body is None:
                raise DecodeError("bad_opcode", f"opcode {opcode:#x}")
            if udp_len != UDP_LEN + BTH_LEN + body + ICRC_LEN:
                raise DecodeError("bad_length", f"UDP length {udp_len} for opcode {opcode:#x}")
            if short:
                raise DecodeError("truncated", "control packet cut")
            self._check_icrc(view, bth, end)
            if opcode == Opcode.SACK:
                (cum, base, bitmap, rev, skip, mpr, ports, _, echo, ooo, penalty,
                 rx_bytes) = _SACK.unpack_from(frame, off)
                msg = Sack(dest_qp=qp, cum_psn=cum & PSN_MASK, bitmap=bitmap, sack_base=base,
                           ev=rev, skip=skip, mpr=mpr, port_status=ports, echo_timestamp=echo,
                           ooo_count=ooo, window_penalty=penalty, rx_bytes=rx_bytes,
                           path_ev=ev)
            elif opcode == Opcode.NACK:
                reason, ports, _, rev, echo = _NACK.unpack_from(frame, off)
                msg = Nack(dest_qp=qp, psn=psn, reason=reason, ev=rev, port_status=ports,
                           echo_timestamp=echo, path_ev=ev)
            else:
                ep_op, ports, _, rev, src_qp, ts = _PROBE.unpack_from(frame, off)
                if ep_op != EndpointOp.EV_PROBE:
                    raise DecodeError("bad_opcode", f"endpoint operation {ep_op} is not an EV probe")
                msg = Probe(ev=rev, seq=psn, timestamp=ts,
                            response=opcode == Opcode.EP_RESPONSE, src_qp=src_qp,
                            port_status=ports, path_ev=ev)
        meta = FrameMeta(src[0], src[1], dst[0], dst[1], src[2], dst[2], ev, ecn_ce, srv6,
                         trimmed, trim_lasthop, n)
        return msg, meta

    @staticmethod
    def _check_icrc(view, bth: int, end: int) -> None:
        got = _U32.unpack_from(view, end - ICRC_LEN)[0]
        if crc32(view[bth:end - ICRC_LEN]) != got:
            raise DecodeError("bad_icrc")
