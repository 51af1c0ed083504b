"""Synthetic MRC frames, captures, logs and run directories for the analysis tests.

Frames follow the wire layout of traffic/WIRE_FORMAT.md byte for byte (Ethernet, optional
outer IPv6 nh=41 for SRv6, IPv6, UDP 4791, BTH, METH/TSETH/RETH/ImmDt, SACK, NACK, PROBE, ICRC);
L2-L4 are built by Scapy, the MRC headers by struct with the wire table's formats and bit
positions (model/wire.py). Captures are written with Scapy's wrpcap.
tests/helpers/test_synth.py checks the builder itself against Scapy's decoding.
"""
from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

from scapy.layers.inet6 import IPv6
from scapy.layers.inet import UDP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from model import wire
from model.events import Event
from model.topology import FabricSpec, Topology, make_ev

TOPO = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=1))


def _pack(header, *words):
    return struct.pack("!" + header.struct_format, *words)


def _bits(header, name, value):
    fld = header[name]
    return (value & fld.mask) << fld.shift


def bth(opcode, qp, psn, *, retx=False, ack_req=False):
    b = wire.BTH
    return _pack(b, opcode, 0, wire.BTH_PKEY_DEFAULT,
                 _bits(b, "retransmit", int(retx)) | _bits(b, "dqpn", qp),
                 _bits(b, "ackreq", int(ack_req)) | _bits(b, "psn", psn))


def data_hdrs(msn, va, rkey, dma_len, *, ts=None, imm=None):
    flags = wire.METH_FLAG_TSETH if ts is not None else 0
    out = _pack(wire.METH, _bits(wire.METH, "flags", flags) | _bits(wire.METH, "msn", msn))
    if ts is not None:
        out += _pack(wire.TSETH, ts)
    out += _pack(wire.RETH, va, rkey, dma_len)
    if imm is not None:
        out += _pack(wire.IMMDT, imm)
    return out


def sack_hdr(cum_psn, sack_base, bitmap, ev, skip=0, mpr=8, port_status=3, echo_ts=0, ooo=0,
             penalty=0, rx_bytes=0):
    return _pack(wire.SACK, cum_psn, sack_base, bitmap, ev, skip, mpr, port_status, 0,
                 echo_ts, ooo, penalty, rx_bytes)


def nack_hdr(reason, port_status=3, ev=0, echo_ts=0):
    return _pack(wire.NACK, reason, port_status, 0, ev, echo_ts)


def probe_hdr(ev, *, port_status=3, src_qp=0, ts=0):
    """EPH of an EV probe; the probe id goes in the BTH PSN, request/response in the BTH
    opcode (EP_REQUEST / EP_RESPONSE)."""
    return _pack(wire.EPH, wire.EndpointOp.EV_PROBE, port_status, 0, ev, src_qp, ts)


def frame(src_host, dst_host, plane, ev, mrc, *, srv6=True, ecn=0, spine=0):
    """One Ethernet frame carrying `mrc` (BTH onwards, without ICRC) from src to dst host."""
    payload = mrc + struct.pack("!I", zlib.crc32(mrc))
    flow = (ev >> 16) & 0xFFFF
    src = TOPO.nic_addr(src_host, plane)
    dst = TOPO.nic_addr(dst_host, plane)
    inner = IPv6(src=src, dst=dst, nh=wire.NEXT_HEADER_UDP, fl=flow, tc=0 if srv6 else ecn) / \
        UDP(sport=ev & 0xFFFF, dport=wire.ROCE_UDP_PORT, chksum=0) / payload
    eth = Ether(src=TOPO.nic_mac(src_host, plane), dst="02:ff:00:00:00:01")
    if srv6:
        outer = IPv6(src=src, dst=TOPO.usid_container(src_host, dst_host, plane, spine),
                     nh=wire.NEXT_HEADER_IPV6,
                     fl=flow, tc=ecn)
        return eth / outer / inner
    return eth / inner


def write_capture(path, frames_with_times, snaplen=65535):
    pkts = []
    for t_ns, fr in frames_with_times:
        fr.time = t_ns / 1e9
        pkts.append(fr)
    wrpcap(str(path), pkts, snaplen=snaplen, nano=True)


def write_jsonl(path, records, extra_lines=()):
    with open(path, "w") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
        for line in extra_lines:
            fh.write(line)


# ---------------------------------------------------------------- one frame of each kind

EV0 = make_ev(0, 1, 0x0BEE)


def mixed_frames(srv6: bool):
    t0 = 5_000_000_000
    return [
        (t0, frame(0, 1, 0, EV0, bth(0xCA, 0x10, 100, ack_req=True) +
                   data_hdrs(7, 0x2000, 0x55, 2048, ts=123456789) + bytes(512), srv6=srv6)),
        (t0 + 1000, frame(0, 1, 0, EV0, bth(0xC9, 0x10, 101, retx=True) +
                          data_hdrs(8, 0x3000, 0x55, 300, imm=0xCAFE) + bytes(300), srv6=srv6,
                          ecn=3)),
        (t0 + 2000, frame(1, 0, 0, EV0, bth(0xDC, 0x11, 102) +
                          sack_hdr(102, 104, 0b1011, EV0, skip=1, mpr=8, port_status=2,
                                   echo_ts=99, ooo=4, penalty=5, rx_bytes=1 << 40), srv6=srv6)),
        (t0 + 3000, frame(1, 0, 0, EV0, bth(0xDD, 0x11, 105) +
                          nack_hdr(0x01, port_status=1, ev=EV0, echo_ts=77), srv6=srv6)),
        (t0 + 4000, frame(0, 1, 0, EV0, bth(0xD9, 0x2, 9) +
                          probe_hdr(EV0, src_qp=0x10, ts=555), srv6=srv6)),
    ]


# ---------------------------------------------------------------- a synthetic run directory

REALTIME_OFFSET = 1_700_000_000_000_000_000


def make_run(root: Path, transports=("mrc", "roce", "tcp"), *, packets=200, fault_at_ms=50):
    """A run directory shaped like the runner's: top-level summary + one dir per transport."""
    root.mkdir(parents=True, exist_ok=True)
    mono0 = 10_000_000_000
    (root / "clock.json").write_text(json.dumps({"monotonic_ns": mono0,
                                                 "realtime_ns": mono0 + REALTIME_OFFSET}))
    fault_t = mono0 + fault_at_ms * 1_000_000
    summary = {"transports": {}}
    for ti, tr in enumerate(transports):
        d = root / tr
        d.mkdir(exist_ok=True)
        (d / "clock.json").write_text(json.dumps({"monotonic_ns": mono0,
                                                  "realtime_ns": mono0 + REALTIME_OFFSET}))
        (d / "scenario.toml").write_text(
            '[fabric]\nplanes = 2\ngroups = 2\nspines = 2\nhosts_per_group = 1\n')
        faults = [{"t_ns": fault_t, "action": "link_down", "a": "t0p0g0", "b": "t1p0s0"},
                  {"t_ns": fault_t + 40_000_000, "action": "link_up", "a": "t0p0g0", "b": "t1p0s0"}]
        write_jsonl(d / "faults.jsonl", faults)
        # captures: h0 sends to h1 on both planes, h1 sends SACKs back
        tx = {0: [], 1: []}
        rx = {0: [], 1: []}
        for i in range(packets):
            plane = i % 2
            spine = (i // 2) % 2
            ev = make_ev(plane, spine, 100 + i % 8)
            t = mono0 + i * 500_000
            lost = tr != "tcp" and plane == 0 and spine == 0 and fault_t <= t < fault_t + 10_000_000
            pkt = frame(0, 1, plane, ev, bth(0xCA, 5, i, retx=(i % 17 == 0)) +
                        data_hdrs(i, 4096 * i, 7, 1024) + bytes(1024), spine=spine)
            tx[plane].append((t + REALTIME_OFFSET, pkt))
            if not lost:
                rx[plane].append((t + 200_000 + REALTIME_OFFSET, pkt.copy()))
                sack = frame(1, 0, plane, ev, bth(0xDC, 5, i + 1) +
                             sack_hdr(i + 1, i + 1, 0, ev, rx_bytes=1024 * (i + 1)), spine=spine)
                rx[plane].append((t + 250_000 + REALTIME_OFFSET, sack))
        for plane in (0, 1):
            write_capture(d / f"h0-p{plane}.pcap", tx[plane])
            write_capture(d / f"h1-p{plane}.pcap", rx[plane])
        # endpoint log
        events = []
        for k in range(20):
            t = mono0 + k * 10_000_000
            events.append({"t_ns": t, "host": "h0", "event": Event.GOODPUT,
                           "rx_bytes": 0, "tx_bytes": k * 1_000_000 // (2 + ti),
                           "rx_packets": 0, "tx_packets": k * 100, "retransmits": k})
            events.append({"t_ns": t, "host": "h1", "event": Event.GOODPUT,
                           "rx_bytes": k * 1_000_000 // (2 + ti) - (200_000 if 6 <= k <= 8 else 0),
                           "tx_bytes": 0, "rx_packets": k * 100, "tx_packets": 0, "retransmits": 0})
        for ev_i in range(4):
            ev = make_ev(ev_i % 2, ev_i // 2, 100 + ev_i)
            events.append({"t_ns": mono0, "host": "h0", "event": Event.EV_STATE, "qp": 5, "ev": ev,
                           "plane": ev_i % 2, "old": "UNKNOWN", "new": "GOOD", "reason": "init"})
        bad_ev = make_ev(0, 0, 100)
        events.append({"t_ns": fault_t + 2_000_000, "host": "h0", "event": Event.EV_STATE, "qp": 5,
                       "ev": bad_ev, "plane": 0, "old": "GOOD", "new": "ASSUMED_BAD",
                       "reason": "timeout"})
        events.append({"t_ns": fault_t + 60_000_000, "host": "h0", "event": Event.EV_STATE, "qp": 5,
                       "ev": bad_ev, "plane": 0, "old": "ASSUMED_BAD", "new": "GOOD",
                       "reason": "probe"})
        for k, reason in enumerate(("timeout", "sack_gap", "sack_gap", "nack_trimmed")):
            events.append({"t_ns": fault_t + k * 1_000_000, "host": "h0", "event": Event.RETRANSMIT,
                           "qp": 5, "psn": 100 + k, "old_ev": bad_ev, "new_ev": bad_ev + 1,
                           "reason": reason})
        for it in range(6):
            s = mono0 + it * 30_000_000
            events.append({"t_ns": s + 25_000_000 + ti * 1_000_000, "host": "h0",
                           "event": Event.ITERATION, "collective": "allreduce", "transport": tr,
                           "iter": it, "start_ns": s, "end_ns": s + 25_000_000 + ti * 1_000_000,
                           "bytes": 1 << 20, "nccl_size_bytes": 1 << 20, "verified": True})
        events.sort(key=lambda e: e["t_ns"])
        write_jsonl(d / "h0.jsonl", [e for e in events if e["host"] == "h0"],
                    extra_lines=['{"t_ns": 1, "host": "h0", "event": "goodp\n', "not json at all\n"])
        write_jsonl(d / "h1.jsonl", [e for e in events if e["host"] == "h1"])
        s = {"transport": tr, "world_size": 2, "iterations": 6}
        if tr == "mrc":     # the runner's CPU figures (emulation/run/cpu_meter.py)
            s["cpu"] = {"cores": 2, "window_s": 5.0, "busy_fraction": 0.97, "busy_cores": 1.94,
                        "cores_by_role": {"workers": 1.15, "switches": 0.7, "other": 0.09},
                        "saturated": True}
        (d / "summary.json").write_text(json.dumps(s))
        summary["transports"][tr] = s
    (root / "summary.json").write_text(json.dumps(summary))
    return root


# ---------------------------------------------------------------- an endpoint's lateness log

BASE_RTT_NS = 2_000_000


def write_endpoint_log(path, snapshots, base_rtt_ns=BASE_RTT_NS):
    """An endpoint log of one QP with base RTT `base_rtt_ns` and a lateness snapshot
    (t_ns, timer histogram) per entry of `snapshots`."""
    lines = [{"t_ns": 1, "host": "h0", "event": Event.QP, "qp": 16, "base_rtt_ns": base_rtt_ns}]
    for t, timer in snapshots:
        lines.append({"t_ns": t, "host": "h0", "event": Event.LATENESS, "timer": timer, "rx": []})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
