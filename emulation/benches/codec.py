"""`mrclab bench codec`: the struct wire codec against Scapy's layers, per packet, side by side."""
from __future__ import annotations

import time

from model.argtypes import nonneg_int, positive_float
from model.topology import FabricSpec, Topology, make_ev
from model.wire import ROCE_UDP_PORT
from traffic.core.codec import Codec
from traffic.layers import BTH, METH, RETH, TSETH
from traffic.core.messages import DataPacket, Opcode

CODEC_GOAL_RATIO = 50.0


def _rate(fn, min_seconds: float, min_iterations: int) -> tuple[float, int]:
    """Calls per second of fn(), run for at least min_seconds and min_iterations."""
    n = 0
    start = time.monotonic_ns()
    deadline = start + int(min_seconds * 1e9)
    while True:
        for _ in range(min_iterations):
            fn()
        n += min_iterations
        now = time.monotonic_ns()
        if now >= deadline:
            return n / ((now - start) / 1e9), n


def add_codec_arguments(parser) -> None:
    """The options of `mrclab bench codec`."""
    parser.add_argument("--seconds", type=positive_float, default=1.0,
                        help="measuring time of each codec in seconds (default 1)")
    parser.add_argument("--payload-bytes", type=nonneg_int, default=1024,
                        help="WRITE payload per packet in bytes (default 1024)")
    parser.add_argument("--mode", choices=("srv6", "ecmp"), default="srv6",
                        help="frame layout: srv6 (outer IPv6 with a uSID container) or ecmp "
                             "(default srv6)")


def codec_main(args) -> dict:
    return codec_bench(seconds=args.seconds, payload_bytes=args.payload_bytes, mode=args.mode)


def codec_bench(argv: list[str] | None = None, *, seconds: float = 1.0, payload_bytes: int = 1024,
                mode: str = "srv6"):
    """Encode+decode rate of one WRITE data packet (1 KiB payload by default): fast codec vs
    building and dissecting the same frame with the Scapy layers per packet, side by side.

    codec_bench() returns the figures as a dict; codec_bench(argv) parses `mrclab bench codec`
    options and returns an exit code (0)."""
    if argv is not None:
        import argparse
        parser = argparse.ArgumentParser(prog="mrclab bench codec", description=codec_bench.__doc__)
        add_codec_arguments(parser)
        codec_main(parser.parse_args(list(argv)))
        return 0
    if not seconds > 0 or payload_bytes < 0:
        raise ValueError(f"need seconds > 0 and payload_bytes >= 0, got {seconds}, {payload_bytes}")
    from scapy.layers.inet import UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw


    topo = Topology(FabricSpec())
    codec = Codec(topo)
    src, dst, plane = 0, 3, 0
    ev = make_ev(plane, 1, 0xBEEF)
    enc = codec.encoder(src, dst, plane, mode)
    msg = DataPacket(dest_qp=0x42, psn=1000, opcode=Opcode.WRITE_MIDDLE, msn=7, va=0x10000,
                     rkey=0x1234, dma_len=1 << 20, payload=bytes(range(256)) * (payload_bytes // 256)
                     + bytes(payload_bytes % 256), timestamp=time.monotonic_ns(), ev=ev)

    def fast():
        msg.psn = (msg.psn + 1) & 0xFFFFFF
        got, _meta = codec.decode(enc.encode(msg))
        return got

    src_addr, dst_addr = topo.nic_addr(src, plane), topo.nic_addr(dst, plane)
    container = topo.usid_container(src, dst, plane, 1)
    macs = dict(src=topo.nic_mac(src, plane), dst=topo.nic_mac(dst, plane))

    def scapy_build() -> bytes:
        pkt = Ether(**macs)
        if mode == "srv6":
            pkt /= IPv6(tc=2, fl=ev >> 16, src=src_addr, dst=container)
        pkt /= (IPv6(tc=2, fl=ev >> 16, src=src_addr, dst=dst_addr)
                / UDP(sport=ev & 0xFFFF, dport=ROCE_UDP_PORT, chksum=0)
                / BTH(opcode=msg.opcode, dqpn=msg.dest_qp, psn=msg.psn)
                / METH(flags=1, msn=msg.msn) / TSETH(timestamp=msg.timestamp)
                / RETH(va=msg.va, rkey=msg.rkey, dmalen=msg.dma_len) / Raw(msg.payload))
        return bytes(pkt)

    def scapy():
        msg.psn = (msg.psn + 1) & 0xFFFFFF
        got = Ether(scapy_build())
        return got[BTH].psn, got[Raw].load

    # Same bytes from both paths, so the comparison is like for like.
    if enc.encode(msg) != scapy_build():
        raise AssertionError("fast codec and Scapy disagree on the benchmark frame")

    fast()
    scapy()
    fast_rate, fast_n = _rate(fast, seconds, 2000)
    scapy_rate, scapy_n = _rate(scapy, seconds, 20)
    ratio = fast_rate / scapy_rate
    figures = {
        "mode": mode,
        "payload_bytes": payload_bytes,
        "frame_bytes": len(enc.encode(msg)),
        "fast_pkts_per_s": round(fast_rate),
        "fast_us_per_pkt": round(1e6 / fast_rate, 2),
        "scapy_pkts_per_s": round(scapy_rate),
        "scapy_us_per_pkt": round(1e6 / scapy_rate, 1),
        "ratio": round(ratio, 1),
        "goal_ratio": CODEC_GOAL_RATIO,
        "goal_met": ratio >= CODEC_GOAL_RATIO,
        "iterations": {"fast": fast_n, "scapy": scapy_n},
    }
    print(f"codec bench ({mode}, {payload_bytes} B payload, {figures['frame_bytes']} B frame, "
          f"encode+decode per packet):")
    print(f"  fast codec : {fast_rate:12,.0f} pkt/s  ({1e6 / fast_rate:8.2f} us/pkt)")
    print(f"  Scapy      : {scapy_rate:12,.0f} pkt/s  ({1e6 / scapy_rate:8.2f} us/pkt)")
    print(f"  ratio      : {ratio:12.1f}x  (goal >= {CODEC_GOAL_RATIO:.0f}x: "
          f"{'met' if figures['goal_met'] else 'NOT met'})")
    return figures

