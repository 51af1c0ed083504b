"""Pure model of the in-fabric virtual queue (emulation/network/bpf/trim.c): arithmetic and decisions.

The BPF program at every switch egress port cannot see the real queue of userspace OVS + HTB, so
it keeps a virtual one: bytes offered minus what the link rate has drained since the previous
packet. This module is the same integer arithmetic and the same decisions in Python, so that
configurations can be tried and the rules unit-tested without root; trim.c and this file must
stay in step (the integration tests compare the kernel's output with `trim_frame`).

Rules, per arriving packet of `pkt_len` bytes (all integers, as in the BPF program):
  drain   = rate * (dt // 1e9) + rate * (dt % 1e9) // 1e9   (dt = now - last, 0 if the clock
            went backwards; an idle gap of >= 1000 s drains everything)
  queue   = max(0, vq - drain);  backlog = queue + pkt_len   (the queue as offered)
  trim    if trimming is on, the packet is MRC data with payload to cut, and backlog > trim_bytes:
          only its header bytes enter the queue;
  drop    else if backlog > drop_bytes and the packet is not an already-trimmed MRC header:
          nothing enters the queue (non-MRC traffic, MRC control, or MRC data with trimming off);
  mark    if not dropped, ECN-capable (ECT(0)/ECT(1)), marking on, not a last-hop port and
          backlog > ecn_min: CE with probability (backlog - min) / (max - min), 1 at >= max;
          decided as rand_u32 < ((backlog - min) << 32) // (max - min)  (2**32 at >= max).
  vq      = queue + enqueued bytes.
"""
from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from typing import Callable

# The layout and the code points are the wire table's (model/wire.py), as trim.c's are (its
# header emulation/network/bpf/mrc_wire.h is generated from the same table); re-exported, since this
# module is the trimmer's reference model.
from model import wire
from model.wire import (DSCP_TRIMMED, DSCP_TRIMMED_LASTHOP, ECN_CE, ECN_ECT0,  # noqa: F401
                        ECN_ECT1, ECN_NOT_ECT, IMM_OPCODES, METH_FLAG_TSETH, ROCE_UDP_PORT,
                        TRIMMED_DSCPS)

NS_PER_S = 1_000_000_000
MAX_DRAIN_SECONDS = 1000

ETH_HLEN = wire.ETHERNET.size
IPV6_HLEN = wire.IPV6.size
UDP_HLEN = wire.UDP.size
BTH_LEN = wire.BTH.size
METH_LEN = wire.METH.size
TSETH_LEN = wire.TSETH.size
RETH_LEN = wire.RETH.size
IMMDT_LEN = wire.IMMDT.size
WRITE_OPCODE_FIRST = min(wire.WRITE_OPCODES)
WRITE_OPCODE_LAST = max(wire.WRITE_OPCODES)
_ETHERTYPE = wire.ETHERTYPE_IPV6.to_bytes(2, "big")
_ETHERTYPE_OFF = wire.ETHERNET["ethertype"].offset
_NH_OFF = wire.IPV6["next_header"].offset
_PLEN_OFF = wire.IPV6["payload_len"].offset
_DPORT_OFF = wire.UDP["dport"].offset
_ULEN_OFF = wire.UDP["length"].offset
_DSCP = wire.IPV6["dscp"]
_ECN = wire.IPV6["ecn"]


def mrc_header_len(outer: bool = True, tseth: bool = False, imm: bool = False) -> int:
    """Bytes a trimmed MRC data frame keeps: Eth+[outer IPv6]+IPv6+UDP+BTH+METH+[TSETH]+RETH+[ImmDt]."""
    return (ETH_HLEN + (IPV6_HLEN if outer else 0) + IPV6_HLEN + UDP_HLEN + BTH_LEN + METH_LEN
            + (TSETH_LEN if tseth else 0) + RETH_LEN + (IMMDT_LEN if imm else 0))


# The port policy (thresholds, their floors, validation) is the fabric's shared model: the
# endpoints derive their trimming delay bound from it (re-exported here for the BPF loader).
from model.switchport import (  # noqa: E402,F401
    DEFAULT_FRAME_MTU, ECN_MIN_FLOOR_FRAMES, MAX_RATE_BYTES_PER_S, U32_MAX, ECN_RAMP_FLOOR_FRAMES, TRIM_FLOOR_FRAMES,
    ConfigError, PortConfig, default_port_config)


def mark_threshold(backlog: int, cfg: PortConfig) -> int:
    """CE is set when rand_u32 < this value (0 = never, 2**32 = always)."""
    if backlog <= cfg.ecn_min_bytes:
        return 0
    if backlog >= cfg.ecn_max_bytes:
        return 1 << 32
    return ((backlog - cfg.ecn_min_bytes) << 32) // (cfg.ecn_max_bytes - cfg.ecn_min_bytes)


def drain_bytes(rate_bytes_per_s: int, dt_ns: int) -> int:
    secs, rem = divmod(dt_ns, NS_PER_S)
    if secs >= MAX_DRAIN_SECONDS:
        return (1 << 64) - 1
    return rate_bytes_per_s * secs + rate_bytes_per_s * rem // NS_PER_S


@dataclass(frozen=True)
class Decision:
    action: str          # "drop" | "trim" | "mark" | "pass" (trim wins over mark in the name)
    marked: bool
    trimmed: bool
    dropped: bool
    backlog: int         # queue as offered, including this packet
    vq_after: int


@dataclass
class VirtualQueue:
    """One port's virtual queue and counters; rng returns uniform 32-bit integers."""

    config: PortConfig
    rng: Callable[[], int] | None = None   # None: a seeded random.Random (reproducible)
    vq_bytes: int = 0
    last_ns: int = 0
    counters: dict = field(default_factory=lambda: dict.fromkeys(
        ("offered_packets", "offered_bytes", "marked", "trimmed", "trimmed_bytes_cut",
         "dropped", "dropped_bytes", "mrc_data_packets"), 0))

    def __post_init__(self) -> None:
        if self.rng is None:
            source = random.Random(0)
            self.rng = lambda: source.getrandbits(32)
        elif not callable(self.rng):
            raise ConfigError("rng must be a callable returning a 32-bit integer")

    def decide(self, pkt_len: int, now_ns: int, is_mrc_data: bool, ect: bool,
               header_len: int | None = None) -> Decision:
        """Account one packet and say what the port does with it.

        header_len: bytes an MRC data packet keeps when trimmed (default: SRv6-encapsulated,
        no TSETH, no ImmDt); a packet that is already only headers is never trimmed or dropped.
        """
        cfg = self.config
        if header_len is None:
            header_len = mrc_header_len(outer=True)
        if is_mrc_data and header_len > pkt_len:
            raise ValueError(f"header_len {header_len} exceeds pkt_len {pkt_len}: "
                             "a truncated packet is not MRC data")
        c = self.counters
        c["offered_packets"] += 1
        c["offered_bytes"] += pkt_len
        dt = now_ns - self.last_ns if now_ns > self.last_ns else 0
        self.last_ns = max(self.last_ns, now_ns)
        drain = drain_bytes(cfg.rate_bytes_per_s, dt)
        queue = self.vq_bytes - drain if self.vq_bytes > drain else 0
        backlog = queue + pkt_len
        header_only = is_mrc_data and header_len == pkt_len
        trimmed = dropped = marked = False
        enqueued = pkt_len
        if is_mrc_data:
            c["mrc_data_packets"] += 1
        if cfg.trim and is_mrc_data and not header_only and backlog > cfg.trim_bytes:
            trimmed, enqueued = True, header_len
        elif not header_only and backlog > cfg.drop_threshold:
            dropped, enqueued = True, 0
        if not dropped and ect and cfg.mark and not cfg.last_hop:
            threshold = mark_threshold(backlog, cfg)
            if threshold:   # the RNG is drawn only above ecn_min, as in trim.c
                marked = (self.rng() & U32_MAX) < threshold
        self.vq_bytes = queue + enqueued
        if marked:
            c["marked"] += 1
        if trimmed:
            c["trimmed"] += 1
            c["trimmed_bytes_cut"] += pkt_len - header_len
        if dropped:
            c["dropped"] += 1
            c["dropped_bytes"] += pkt_len
        action = ("drop" if dropped else "trim" if trimmed else "mark" if marked else "pass")
        return Decision(action, marked, trimmed, dropped, backlog, self.vq_bytes)


# ---------------------------------------------------------------- frames (same parse as trim.c)


@dataclass(frozen=True)
class FrameInfo:
    ipv6: bool
    ecn: int             # ECN bits of the outermost IPv6 header (0 if not IPv6)
    dscp: int
    inner_off: int       # offset of the IPv6 header carrying UDP (0 if none)
    udp_off: int
    mrc_data: bool
    header_len: int      # bytes kept when trimmed (0 unless mrc_data)

    @property
    def ect(self) -> bool:
        return self.ipv6 and self.ecn in (ECN_ECT1, ECN_ECT0)


def parse_frame(frame: bytes) -> FrameInfo:
    """Classify an Ethernet frame exactly as trim.c does (never raises on short or foreign frames)."""
    none = FrameInfo(False, 0, 0, 0, 0, False, 0)
    if len(frame) < ETH_HLEN + 8 or frame[_ETHERTYPE_OFF:_ETHERTYPE_OFF + 2] != _ETHERTYPE \
            or frame[ETH_HLEN] >> 4 != wire.IP_VERSION_6:
        return none
    word = struct.unpack_from("!I", frame, ETH_HLEN)[0]
    base = dict(ipv6=True, ecn=word >> _ECN.shift & _ECN.mask, dscp=word >> _DSCP.shift & _DSCP.mask)
    off = ETH_HLEN
    nh = frame[off + _NH_OFF]
    if nh == wire.NEXT_HEADER_IPV6:
        off += IPV6_HLEN
        if len(frame) < off + 8 or frame[off] >> 4 != wire.IP_VERSION_6:
            return FrameInfo(**base, inner_off=0, udp_off=0, mrc_data=False, header_len=0)
        nh = frame[off + _NH_OFF]
    udp = off + IPV6_HLEN
    if nh != wire.NEXT_HEADER_UDP or len(frame) < udp + UDP_HLEN + 1:
        return FrameInfo(**base, inner_off=0, udp_off=0, mrc_data=False, header_len=0)
    dport = struct.unpack_from("!H", frame, udp + _DPORT_OFF)[0]
    opcode = frame[udp + UDP_HLEN]
    if dport != ROCE_UDP_PORT or not WRITE_OPCODE_FIRST <= opcode <= WRITE_OPCODE_LAST \
            or len(frame) < udp + UDP_HLEN + BTH_LEN + 1:
        return FrameInfo(**base, inner_off=off, udp_off=udp, mrc_data=False, header_len=0)
    meth_flags = frame[udp + UDP_HLEN + BTH_LEN]
    hdr = (udp + UDP_HLEN + BTH_LEN + METH_LEN + (TSETH_LEN if meth_flags & METH_FLAG_TSETH else 0)
           + RETH_LEN + (IMMDT_LEN if opcode in IMM_OPCODES else 0))
    if hdr > len(frame):
        return FrameInfo(**base, inner_off=off, udp_off=udp, mrc_data=False, header_len=0)
    return FrameInfo(**base, inner_off=off, udp_off=udp, mrc_data=True, header_len=hdr)


def set_traffic_class(frame: bytes, dscp: int | None = None, ecn: int | None = None) -> bytes:
    """Return frame with the outermost IPv6 DSCP and/or ECN bits replaced."""
    out = bytearray(frame)
    word = struct.unpack_from("!I", out, ETH_HLEN)[0]
    if dscp is not None:
        word = word & ~(_DSCP.mask << _DSCP.shift) | (dscp & _DSCP.mask) << _DSCP.shift
    if ecn is not None:
        word = word & ~(_ECN.mask << _ECN.shift) | (ecn & _ECN.mask) << _ECN.shift
    struct.pack_into("!I", out, ETH_HLEN, word)
    return bytes(out)


def trim_frame(frame: bytes, last_hop: bool = False) -> bytes:
    """What the fabric makes of an MRC data frame it trims: headers only, lengths fixed, UDP
    checksum 0, outermost DSCP TRIMMED (TRIMMED_LASTHOP on a last hop), ECN bits unchanged."""
    info = parse_frame(frame)
    if not info.mrc_data:
        raise ValueError("not an MRC data frame (IPv6[/IPv6]/UDP 4791/BTH opcode 0xC6..0xCB)")
    hdr = info.header_len
    out = bytearray(frame[:hdr])
    if info.inner_off != ETH_HLEN:
        struct.pack_into("!H", out, ETH_HLEN + _PLEN_OFF, hdr - ETH_HLEN - IPV6_HLEN)
    struct.pack_into("!H", out, info.inner_off + _PLEN_OFF, hdr - info.inner_off - IPV6_HLEN)
    struct.pack_into("!HH", out, info.udp_off + _ULEN_OFF, hdr - info.udp_off, 0)
    return set_traffic_class(bytes(out), dscp=DSCP_TRIMMED_LASTHOP if last_hop else DSCP_TRIMMED)
