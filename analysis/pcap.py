"""MRC captures (pcap) -> pandas DataFrame, one row per MRC packet.

Why not Scapy's rdpcap: it builds a Python object per packet (~thousands of packets/s here);
a run's captures hold millions. This loader walks the pcap record headers once with
`struct` (the only per-packet Python work), then decodes every header field for all packets at
once with numpy gathers at per-packet offsets. Text columns are categoricals, optional fields
are nullable integer arrays (missing when the opcode does not carry them or the capture was
cut short by the snap length).

Clock (documented choice): tcpdump stamps packets with CLOCK_REALTIME; endpoints and the fault
log use CLOCK_MONOTONIC. The runner writes `clock.json` = {"monotonic_ns": M, "realtime_ns": R}
(both read back to back at run start) into the run directory. A pcap timestamp T converts to
    monotonic = T - (R - M)
This assumes the wall clock is not stepped during the run (no NTP jump); slewing (ppm) is
negligible over a run. Without clock.json the column `time_ns` holds the wall-clock value and
`df.attrs["clock"]` says "realtime".

Wire layout: the wire table (model/wire.py; traffic/WIRE_FORMAT.md compares it with the
sources), from which every offset, width and number below is taken:
Ethernet / [outer IPv6 nh=41 (SRv6)] / IPv6 nh=17 / UDP dport 4791 / BTH 12 B / opcode headers.
EV probes are endpoint requests / responses: probe id = BTH PSN.
ECN and DSCP are read from the outermost IPv6 header (what switches mark and the trimmer sets).

Corrupt or truncated files: everything readable is returned; `df.attrs["pcap_report"]` (a
PcapReport as dict) says what was not (bad record header, cut-off tail, unknown link type).
"""
from __future__ import annotations

import ipaddress
import json
import mmap
import os
import re
import struct
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.jsonl import MAX_TIME_SPREAD_S
from analysis.logs import run_topology
from analysis.timescale import time_scale_of
from model import timescale, wire
from model.wire import ECN_CE, EV, EV_FLOW, EndpointOp, NackReason, Opcode

ROCE_PORT = wire.ROCE_UDP_PORT
MAX_RECORD = 1 << 18          # larger incl_len than this means a corrupt record header

OPCODE_NAMES = {int(op): op.name for op in Opcode}
NACK_REASON_NAMES = {int(r): r.name for r in NackReason}
DATA_OPCODES = tuple(sorted(int(op) for op in wire.WRITE_OPCODES))
IMM_OPCODES = tuple(sorted(int(op) for op in wire.IMM_OPCODES))

# Header sizes, from the wire table.
ETH, IPV6, UDP, BTH = wire.ETHERNET.size, wire.IPV6.size, wire.UDP.size, wire.BTH.size
METH, TSETH, RETH, IMMDT, ICRC = (wire.METH.size, wire.TSETH.size, wire.RETH.size,
                                  wire.IMMDT.size, wire.ICRC_LEN)
SACK_LEN, NACK_LEN, PROBE_LEN = wire.SACK.size, wire.NACK.size, wire.EPH.size

# The body columns: (column, wire-table field) per control message; each is a nullable
# unsigned integer as wide as the field's word.
SACK_COLUMNS = (("sack_cum_psn", "cum_psn"), ("sack_base", "sack_base"),
                ("sack_bitmap", "bitmap"), ("sack_ev", "ev"), ("sack_skip", "skip"),
                ("sack_mpr", "mpr"), ("sack_port_status", "port_status"),
                ("sack_echo_ts", "echo_ts"), ("sack_ooo", "ooo_count"),
                ("sack_window_penalty", "window_penalty"), ("sack_rx_bytes", "rx_bytes"))
NACK_COLUMNS = (("nack_port_status", "port_status"), ("nack_ev", "ev"),
                ("nack_echo_ts", "echo_ts"))
PROBE_COLUMNS = (("probe_port_status", "port_status"), ("probe_ev", "ev"),
                 ("probe_src_qp", "src_qp"), ("probe_ts", "timestamp"))
_UINT_OF_SIZE = {1: "UInt8", 2: "UInt16", 4: "UInt32", 8: "UInt64"}

# at most 6 digits: a fabric has far fewer hosts and planes, and a longer number (a renamed or
# planted file) would make an address that does not exist
_CAPTURE_NAME = re.compile(r"^(?P<host>h\d{1,6})-p(?P<plane>\d{1,6})(?:\.|$)")

# Link types we understand: Ethernet, Linux cooked v1/v2, raw IP.
LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_SLL, LINKTYPE_IPV6, LINKTYPE_SLL2 = 1, 101, 113, 229, 276


class PcapError(ValueError):
    """The file is not a pcap at all (bad magic); anything else is reported, not raised."""


@dataclass
class PcapReport:
    path: str
    records: int = 0              # pcap records read
    mrc_packets: int = 0          # rows returned
    other_packets: int = 0        # readable, but not IPv6/UDP 4791
    short_packets: int = 0        # MRC rows whose capture ended inside an MRC header (snaplen)
    unreadable_bytes: int = 0     # trailing bytes not parsed (corrupt/truncated tail)
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ClockOffset:
    """realtime_ns - monotonic_ns at run start (see module docstring)."""

    monotonic_ns: int
    realtime_ns: int

    @property
    def offset_ns(self) -> int:
        return self.realtime_ns - self.monotonic_ns

    def to_monotonic(self, realtime_ns):
        return realtime_ns - self.offset_ns

    @classmethod
    def load(cls, path) -> "ClockOffset":
        """Raises ValueError naming the file when it is not the runner's clock.json."""
        try:
            data = json.loads(Path(path).read_bytes())
        except RecursionError:
            raise ValueError(f"{path}: not JSON (nested too deeply)") from None
        except ValueError as exc:
            raise ValueError(f"{path}: not JSON ({exc})") from None
        values = [data.get(k) for k in ("monotonic_ns", "realtime_ns")] \
            if isinstance(data, dict) else [None]
        if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 63
                   for v in values):
            raise ValueError(f"{path}: clock file needs integer monotonic_ns and realtime_ns")
        return cls(*values)


def capture_identity(path) -> tuple[str | None, int | None]:
    """(host, plane) from the runner's capture name `<host>-p<plane>.pcap`, else (None, None)."""
    m = _CAPTURE_NAME.match(Path(path).name)
    if not m:
        return None, None
    return m.group("host"), int(m.group("plane"))


# ---------------------------------------------------------------- record walk


def _walk_records(buf, report: PcapReport):
    """Return (linktype, ts_ns, data_off, incl_len, orig_len) arrays for all readable records."""
    if len(buf) < 24:
        raise PcapError(f"{report.path}: {len(buf)} bytes, too short for a pcap header")
    magic = buf[:4]
    table = {b"\xd4\xc3\xb2\xa1": ("<", 1000), b"\xa1\xb2\xc3\xd4": (">", 1000),
             b"\x4d\x3c\xb2\xa1": ("<", 1), b"\xa1\xb2\x3c\x4d": (">", 1)}
    if magic not in table:
        if magic == b"\x0a\x0d\x0d\x0a":
            raise PcapError(f"{report.path}: pcapng is not supported; capture with "
                            f"`tcpdump -w` (pcap) or convert with `editcap -F pcap`")
        raise PcapError(f"{report.path}: not a pcap file (magic {magic.hex()})")
    endian, ts_scale = table[magic]
    _, _, _, _, snaplen, linktype = struct.unpack_from(endian + "HHiIII", buf, 4)
    linktype &= 0x0FFFFFFF
    rec = struct.Struct(endian + "IIII")
    size = len(buf)
    ts_s, ts_f, offs, incls, origs = [], [], [], [], []
    pos = 24
    unpack = rec.unpack_from
    while pos + 16 <= size:
        sec, frac, incl, orig = unpack(buf, pos)
        if incl > MAX_RECORD or pos + 16 + incl > size:
            if incl > MAX_RECORD:
                report.problems.append(f"corrupt record header at byte {pos} (captured length "
                                       f"{incl}); stopped reading")
            else:
                report.problems.append(f"truncated record at byte {pos}: needs {incl} bytes, "
                                       f"file has {size - pos - 16}")
            break
        ts_s.append(sec)
        ts_f.append(frac)
        offs.append(pos + 16)
        incls.append(incl)
        origs.append(orig)
        pos += 16 + incl
    if pos < size:
        report.unreadable_bytes = size - pos
        if not report.problems:
            report.problems.append(f"{size - pos} trailing bytes after the last full record")
    report.records = len(offs)
    ts = np.asarray(ts_s, dtype=np.int64) * 1_000_000_000 + np.asarray(ts_f, dtype=np.int64) * ts_scale
    return (linktype, ts, np.asarray(offs, dtype=np.int64), np.asarray(incls, dtype=np.int64),
            np.asarray(origs, dtype=np.int64))


# ---------------------------------------------------------------- vectorised field access


class _Frames:
    """Big-endian field reads at per-packet offsets, with a 'captured' mask per read."""

    def __init__(self, data: np.ndarray, start: np.ndarray, incl: np.ndarray):
        self.data = data
        self.start = start
        self.incl = incl
        self.last = len(data) - 1

    def u(self, rel: np.ndarray, width: int):
        """Unsigned big-endian integer of `width` bytes at start+rel; (values, present)."""
        present = rel + width <= self.incl
        value = np.zeros(len(rel), dtype=np.uint64)
        base = self.start + rel
        for k in range(width):
            idx = np.minimum(base + k, self.last)
            value = (value << np.uint64(8)) | self.data[idx].astype(np.uint64)
        value[~present] = 0
        return value, present

    def field(self, rel: np.ndarray, fld: wire.Field):
        """The wire-table field `fld` of the header at start+rel; (values, present)."""
        value, present = self.u(rel + fld.offset, fld.size)
        if fld.bits:
            value = (value >> np.uint64(fld.shift)) & np.uint64(fld.mask)
        return value, present

    def bytes16(self, rel: np.ndarray) -> np.ndarray:
        idx = np.minimum((self.start + rel)[:, None] + np.arange(16), self.last)
        return np.ascontiguousarray(self.data[idx]).view("V16").ravel()


def _nullable(values: np.ndarray, present: np.ndarray, dtype: str) -> pd.arrays.IntegerArray:
    np_dtype = {"UInt8": np.uint8, "UInt16": np.uint16, "UInt32": np.uint32,
                "UInt64": np.uint64, "Int64": np.int64}[dtype]
    return pd.arrays.IntegerArray(values.astype(np_dtype), ~present)


def _addr_strings(raw: np.ndarray) -> pd.Categorical:
    uniq, inverse = np.unique(raw, return_inverse=True)
    names = [str(ipaddress.IPv6Address(bytes(u))) for u in uniq]
    return pd.Categorical.from_codes(inverse.astype(np.int32), categories=names) \
        if len(set(names)) == len(names) else pd.Categorical(np.asarray(names, dtype=object)[inverse])


# ---------------------------------------------------------------- public API

COLUMNS = [
    "time_ns", "pcap_time_ns", "host", "plane", "direction", "opcode", "opname", "qp", "psn",
    "ev", "ev_plane", "ev_spine", "size", "captured", "payload_len", "trimmed", "dscp", "ecn", "ce", "retx",
    "ack_req", "srv6", "src", "dst", "short",
    "msn", "tseth", "va", "rkey", "dma_len", "imm",
    "sack_cum_psn", "sack_base", "sack_bitmap", "sack_ev", "sack_skip", "sack_mpr",
    "sack_port_status", "sack_echo_ts", "sack_ooo", "sack_window_penalty", "sack_rx_bytes",
    "nack_reason", "nack_reason_name", "nack_port_status", "nack_ev", "nack_echo_ts",
    "probe_response", "probe_port_status", "probe_seq", "probe_ev", "probe_src_qp", "probe_ts",
]


def load_pcap(path, *, host: str | None = None, plane: int | None = None,
              clock: ClockOffset | None = None, local_addr: str | None = None) -> pd.DataFrame:
    """Load one capture. host/plane default to the `<host>-p<plane>.pcap` file name.

    direction is "tx" when the inner IPv6 source is the capturing NIC (local_addr, or else the
    address present in the most packets: a NIC capture sees itself in every packet), "rx"
    otherwise. Raises PcapError only when the file is not a pcap at all.
    """
    path = Path(path)
    report = PcapReport(path=str(path))
    if local_addr is not None:
        local_addr = str(ipaddress.IPv6Address(local_addr))   # canonical form, as in src/dst
    name_host, name_plane = capture_identity(path)
    host = host if host is not None else name_host
    plane = plane if plane is not None else name_plane
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            raise PcapError(f"{path}: empty file, not a pcap")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            linktype, ts, offs, incl, orig = _walk_records(mm, report)
            data = np.frombuffer(mm, dtype=np.uint8)
            try:
                df = _decode(data, linktype, ts, offs, incl, orig, report, local_addr)
            finally:
                del data
    n = len(df)
    df.insert(2, "host", pd.Categorical([host] * n) if host else pd.Categorical([None] * n))
    df.insert(3, "plane", np.full(n, -1 if plane is None else plane, dtype=np.int8))
    if clock is not None:
        df["time_ns"] = clock.to_monotonic(df["pcap_time_ns"].to_numpy())
        df.attrs["clock"] = "monotonic"
    else:
        df.attrs["clock"] = "realtime"
    df = df[COLUMNS]
    df.attrs["pcap_report"] = report.as_dict()
    return df


def _decode(data, linktype, ts, offs, incl, orig, report, local_addr) -> pd.DataFrame:
    f = _Frames(data, offs, incl)
    n = len(offs)
    l3, is_v6 = _network_offsets(f, n, linktype, report)
    if l3 is None:
        return _empty()
    ip6, udp_h = wire.IPV6, wire.UDP
    ver, ok = f.u(l3, 1)
    is_v6 &= ok & ((ver >> np.uint64(4)) == wire.IP_VERSION_6)
    nh, _ = f.field(l3, ip6["next_header"])
    srv6 = is_v6 & (nh == wire.NEXT_HEADER_IPV6)
    inner = np.where(srv6, l3 + IPV6, l3)
    nh_in, _ = f.field(inner, ip6["next_header"])
    udp = inner + IPV6
    dport, have_udp = f.field(udp, udp_h["dport"])
    mrc = is_v6 & have_udp & (nh_in == wire.NEXT_HEADER_UDP) & (dport == ROCE_PORT)
    mrc &= f.field(udp + UDP, wire.BTH["dqpn"])[1]   # BTH opcode..dest QP captured, else not decodable
    report.other_packets = int(n - mrc.sum())
    keep = np.flatnonzero(mrc)
    f = _Frames(data, offs[keep], incl[keep])
    l3, inner, udp, srv6 = l3[keep], inner[keep], udp[keep], srv6[keep]
    ts, orig, incl = ts[keep], orig[keep], incl[keep]
    m = len(keep)
    report.mrc_packets = m
    if m == 0:
        return _empty()

    cols: dict[str, object] = {}
    cols["time_ns"] = ts
    cols["pcap_time_ns"] = ts.copy()
    outer_dscp, _ = f.field(l3, ip6["dscp"])       # the outermost header: what the fabric set
    ecn = f.field(l3, ip6["ecn"])[0].astype(np.uint8)
    fl, _ = f.field(inner, ip6["flow_label"])
    sport, _ = f.field(udp, udp_h["sport"])
    ev = (((fl & np.uint64(EV_FLOW.mask)) << np.uint64(EV_FLOW.shift)) | sport).astype(np.uint32)
    plen, _ = f.field(inner, ip6["payload_len"])
    bth = udp + UDP
    opcode, qp, psn, have_psn, bth_cols = _bth_columns(f, bth)
    src = _addr_strings(f.bytes16(inner + ip6["src"].offset))
    dst = _addr_strings(f.bytes16(inner + ip6["dst"].offset))
    direction = _direction(src, dst, local_addr, report)
    ev_plane, ev_spine = EV["plane"], EV["spine"]
    cols.update(direction=pd.Categorical(direction, categories=["tx", "rx"]),
                opcode=opcode, qp=qp, psn=psn, ev=ev,
                ev_plane=((ev >> ev_plane.shift) & ev_plane.mask).astype(np.int8),
                ev_spine=((ev >> ev_spine.shift) & ev_spine.mask).astype(np.int8),
                size=orig.astype(np.uint32), captured=incl.astype(np.uint32),
                ecn=ecn, ce=ecn == ECN_CE, **bth_cols, srv6=srv6, src=src, dst=dst)
    # opcode names via a lookup table (vectorised)
    names = np.array([OPCODE_NAMES.get(i, f"0x{i:02X}") for i in range(256)], dtype=object)
    cols["opname"] = pd.Categorical(names[opcode])
    cols["dscp"] = outer_dscp.astype(np.uint8)

    hdr = bth + BTH
    short = _data_columns(f, cols, hdr, opcode, plen, orig, inner)
    short |= _body_columns(f, cols, hdr, opcode == Opcode.SACK, wire.SACK, SACK_COLUMNS)
    short |= _nack_columns(f, cols, hdr, opcode)
    short |= _probe_columns(f, cols, hdr, opcode, psn, have_psn)
    short |= ~have_psn
    cols["short"] = short
    report.short_packets = int(short.sum())
    return pd.DataFrame(cols)


def _network_offsets(f: _Frames, n: int, linktype: int, report: PcapReport):
    """(offset of the first IPv6 header, is-IPv6 mask) per packet by link type; (None, None)
    for a link type this loader does not read (reported)."""
    zero = np.zeros(n, dtype=np.int64)
    ipv6 = wire.ETHERTYPE_IPV6
    if linktype == LINKTYPE_ETHERNET:
        type_off = wire.ETHERNET["ethertype"].offset
        etype, _ = f.u(zero + type_off, 2)
        l3 = np.full(n, ETH, dtype=np.int64)
        vlan = (etype == 0x8100) | (etype == 0x88A8)
        if vlan.any():
            etype2, _ = f.u(zero + type_off + 4, 2)
            etype = np.where(vlan, etype2, etype)
            l3 = np.where(vlan, ETH + 4, l3)
        return l3, etype == ipv6
    if linktype == LINKTYPE_SLL:
        etype, _ = f.u(zero + 14, 2)
        return zero + 16, etype == ipv6
    if linktype == LINKTYPE_SLL2:
        etype, _ = f.u(zero, 2)
        return zero + 20, etype == ipv6
    if linktype in (LINKTYPE_RAW, LINKTYPE_IPV6):
        return zero, np.ones(n, dtype=bool)
    report.problems.append(f"link type {linktype} not supported (Ethernet, Linux cooked, "
                           f"raw IP are); no packet decoded")
    report.other_packets = n
    return None, None


def _direction(src, dst, local_addr, report: PcapReport) -> np.ndarray:
    """"tx" where the source is the capturing NIC (local_addr, else the address present in
    the most packets), "rx" elsewhere."""
    if local_addr is None:
        counts = pd.Series(np.concatenate([np.asarray(src, dtype=object),
                                           np.asarray(dst, dtype=object)])).value_counts()
        local_addr = counts.index[0] if len(counts) else None
        if len(counts) > 1 and counts.iloc[0] == counts.iloc[1]:
            report.problems.append(
                f"direction ambiguous: {counts.index[0]} and {counts.index[1]} are in every "
                f"packet; pass local_addr (load_captures takes it from the run's fabric spec)")
    return np.where(np.asarray(src, dtype=object) == local_addr, "tx", "rx")


def _bth_columns(f: _Frames, bth: np.ndarray):
    """(opcode, qp, psn, PSN captured, {retx, ack_req}) of the BTH at `bth`."""
    b = wire.BTH
    opcode = f.field(bth, b["opcode"])[0].astype(np.uint8)
    qp = f.field(bth, b["dqpn"])[0].astype(np.uint32)
    retx, _ = f.field(bth, b["retransmit"])
    psn, have_psn = f.field(bth, b["psn"])
    ack_req, _ = f.field(bth, b["ackreq"])
    return (opcode, qp, psn.astype(np.uint32), have_psn,
            {"retx": retx != 0, "ack_req": (ack_req != 0) & have_psn})


def _data_columns(f: _Frames, cols: dict, hdr, opcode, plen, orig, inner) -> np.ndarray:
    """METH / [TSETH] / RETH / [ImmDt] columns of WRITE packets; returns their `short` mask."""
    is_data = np.isin(opcode, DATA_OPCODES)
    is_imm = np.isin(opcode, IMM_OPCODES)
    meth_h, reth_h = wire.METH, wire.RETH
    flags, have_meth = f.field(hdr, meth_h["flags"])
    have_meth &= is_data
    has_ts = have_meth & ((flags & np.uint64(wire.METH_FLAG_TSETH)) != 0)
    msn, _ = f.field(hdr, meth_h["msn"])
    cols["msn"] = _nullable(msn, have_meth, "UInt32")
    tseth, have_ts = f.field(hdr + METH, wire.TSETH["timestamp"])
    cols["tseth"] = _nullable(tseth, have_ts & has_ts, "UInt64")
    reth = hdr + METH + np.where(has_ts, TSETH, 0)
    va, have_va = f.field(reth, reth_h["va"])
    rkey, have_rkey = f.field(reth, reth_h["rkey"])
    dlen, have_dlen = f.field(reth, reth_h["dmalen"])
    cols["va"] = _nullable(va, have_va & have_meth, "UInt64")
    cols["rkey"] = _nullable(rkey, have_rkey & have_meth, "UInt32")
    cols["dma_len"] = _nullable(dlen, have_dlen & have_meth, "UInt32")
    imm, have_imm = f.field(reth + RETH, wire.IMMDT["imm"])
    cols["imm"] = _nullable(imm, have_imm & have_meth & is_imm, "UInt32")
    # payload from the inner IPv6 payload length (the header is always captured)
    hdr_bytes = UDP + BTH + METH + np.where(has_ts, TSETH, 0) + RETH + np.where(is_imm, IMMDT, 0) + ICRC
    payload = plen.astype(np.int64) - hdr_bytes
    cols["payload_len"] = _nullable(np.maximum(payload, 0), have_meth, "UInt32")
    # in-fabric trimming cuts the frame but leaves the IP/UDP lengths: wire length < announced
    # (OVS max_len truncation); the BPF trimmer instead fixes the lengths to the headers, no ICRC
    cols["trimmed"] = is_data & ((orig < inner + IPV6 + plen.astype(np.int64)) | (payload == -ICRC))
    return is_data & ~(have_meth & have_va & have_rkey & have_dlen & (~is_imm | have_imm))


def _body_columns(f: _Frames, cols: dict, hdr, rows, header: wire.Header, columns) -> np.ndarray:
    """One nullable column per (column, field) of `header` at `hdr`, set on `rows`; returns the
    rows whose body was not captured whole."""
    complete = rows.copy()
    for name, field_name in columns:
        fld = header[field_name]
        v, p = f.field(hdr, fld)
        cols[name] = _nullable(v, p & rows, _UINT_OF_SIZE[fld.size])
        complete &= p
    return rows & ~complete


def _nack_columns(f: _Frames, cols: dict, hdr, opcode) -> np.ndarray:
    is_nack = opcode == Opcode.NACK
    reason, p_reason = f.field(hdr, wire.NACK["reason"])
    p_reason &= is_nack
    cols["nack_reason"] = _nullable(reason, p_reason, "UInt8")
    rnames = np.array([NACK_REASON_NAMES.get(i, f"0x{i:02X}") for i in range(256)], dtype=object)
    cols["nack_reason_name"] = pd.Categorical(np.where(p_reason, rnames[reason.astype(np.uint8)], None))
    return (is_nack & ~p_reason) | _body_columns(f, cols, hdr, is_nack, wire.NACK, NACK_COLUMNS)


def _probe_columns(f: _Frames, cols: dict, hdr, opcode, psn, have_psn) -> np.ndarray:
    """EV probes: endpoint request / response carrying the EV_PROBE operation; id = BTH PSN."""
    ep_op, p_op = f.field(hdr, wire.EPH["op"])
    is_probe = (np.isin(opcode, (int(Opcode.EP_REQUEST), int(Opcode.EP_RESPONSE)))
                & (~p_op | (ep_op == np.uint64(EndpointOp.EV_PROBE))))
    cols["probe_response"] = pd.array(opcode == int(Opcode.EP_RESPONSE), dtype="boolean")
    cols["probe_response"][~is_probe] = pd.NA
    cols["probe_seq"] = _nullable(psn, is_probe & have_psn, "UInt32")
    return (is_probe & ~p_op) | _body_columns(f, cols, hdr, is_probe, wire.EPH, PROBE_COLUMNS)


def _empty() -> pd.DataFrame:
    df = pd.DataFrame({c: pd.Series(dtype="int64") for c in COLUMNS if c not in ("host", "plane")})
    for c in ("direction", "opname", "src", "dst", "nack_reason_name"):
        df[c] = pd.Categorical([])
    return df


# Columns on the run's CLOCK_MONOTONIC: the capture time and the senders' stamps echoed back.
CLOCK_COLUMNS = ("time_ns", "tseth", "sack_echo_ts", "nack_echo_ts", "probe_ts")


def find_captures(run_dir) -> list[Path]:
    """Every *.pcap under a transport run directory (or a top-level run with transports)."""
    return sorted(Path(run_dir).rglob("*.pcap"))


def load_captures(run_dir, *, clock: ClockOffset | None = None,
                  transport: str | None = None) -> pd.DataFrame:
    """Load and concatenate all captures under run_dir. Uses run_dir's clock.json when present
    (searching the directory and its parents up to the run's top level). Reports of each file are
    in df.attrs["pcap_reports"]; unreadable files are reported there, never raised."""
    run_dir = Path(run_dir)
    clock_kind = "monotonic"
    clock_problems: list[str] = []
    if clock is None:
        clock = find_clock(run_dir, clock_problems)
    if clock is None and find_captures(run_dir):
        clock, clock_kind = clock_now(), "estimated_at_analysis"
    frames, reports, topologies = [], [], {}
    for path in find_captures(run_dir):
        host, plane = capture_identity(path)
        local = None
        topo = topologies.setdefault(path.parent, _topology_of(path.parent))
        if topo is not None and host is not None:
            try:
                local = topo.nic_addr(int(host[1:]), plane)
            except (KeyError, ValueError):
                local = None
        try:
            df = load_pcap(path, clock=clock, local_addr=local)
        except (PcapError, OSError) as exc:
            reports.append({"path": str(path), "problems": [str(exc)], "mrc_packets": 0})
            continue
        reports.append(df.attrs["pcap_report"])
        k = time_scale_of(path.parent)           # a dilated run: emulated times
        if k != 1.0:
            for column in CLOCK_COLUMNS:
                df[column] = timescale.emulated_ns(df[column], k)
        if transport is None:
            rel = path.relative_to(run_dir).parts
            tname = rel[0] if len(rel) > 1 else None
        else:
            tname = transport
        df["transport"] = pd.Categorical([tname] * len(df))
        frames.append(df)
    if frames:
        # a capture without a decodable record adds no row, and its empty columns (object
        # dtype) would turn the others' bool and int columns into objects
        out = pd.concat([f for f in frames if len(f)] or frames[:1], ignore_index=True)
        for c in ("host", "direction", "opname", "src", "dst", "nack_reason_name", "transport"):
            out[c] = out[c].astype("category")
        out = out.sort_values("time_ns", kind="stable").reset_index(drop=True)
    else:
        out = _empty()
        out.insert(2, "host", pd.Categorical([]))
        out.insert(3, "plane", np.zeros(0, dtype=np.int8))
        out["transport"] = pd.Categorical([])
        out = out[COLUMNS + ["transport"]]
    if clock_problems:
        reports.append({"path": str(run_dir), "mrc_packets": 0, "problems": clock_problems})
    if clock_kind != "monotonic":
        reports.append({"path": str(run_dir), "mrc_packets": 0, "problems": [
            "no clock.json: pcap times converted with the realtime-monotonic offset of the analysis "
            "machine now (right only on the same boot, without a clock step since the run)"]})
    out.attrs = {"pcap_reports": reports, "clock": clock_kind}
    return out


def drop_far_packets(pk: pd.DataFrame, reference_ns: int | None, problems: list[str],
                     spread_s: float = MAX_TIME_SPREAD_S) -> pd.DataFrame:
    """pk without the packets whose time_ns lies more than spread_s from reference_ns (the
    event logs' median time; the packets' own median without one), named in `problems`. A run
    lasts minutes: a packet a day away comes from a corrupt timestamp or clock.json, and the
    analysis puts packets on time grids that would then ask for terabytes."""
    if len(pk) == 0:
        return pk
    times = pk["time_ns"].to_numpy()
    ref = int(np.median(times)) if reference_ns is None else int(reference_ns)
    far = np.abs(times.astype(np.float64) - float(ref)) > spread_s * 1e9
    if not far.any():
        return pk
    problems.append(f"captures: {int(far.sum())} of {len(pk)} packets time-stamped more than "
                    f"{spread_s:g} s from the run's {'log' if reference_ns is not None else 'median'}"
                    f" time (a corrupt timestamp or clock.json): skipped")
    out = pk[~far].reset_index(drop=True)
    out.attrs = dict(pk.attrs)
    return out


def _topology_of(directory):
    return run_topology(directory)


def clock_now() -> ClockOffset:
    """The offset right now (the runner writes the same thing into clock.json at run start)."""
    import time
    return ClockOffset(time.monotonic_ns(), time.time_ns())


def find_clock(run_dir, problems: list | None = None) -> ClockOffset | None:
    """clock.json in run_dir or one of its two parents (per-transport dirs sit under the run);
    an unreadable one is reported in `problems` and the next one up is tried."""
    d = Path(run_dir).resolve()
    for candidate in (d, d.parent, d.parent.parent):
        p = candidate / "clock.json"
        if p.is_file():
            try:
                return ClockOffset.load(p)
            except (ValueError, OSError) as exc:
                if problems is not None:
                    problems.append(str(exc))
    return None
