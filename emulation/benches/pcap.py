"""Benchmark: pcap loading rate of analysis.pcap vs Scapy's rdpcap on the same capture.

`mrclab bench pcap` calls pcap_main(); both loaders read the same file in one run, the figures
and their ratio are printed (goal: analysis.pcap >= 20x rdpcap).
"""
from __future__ import annotations

import struct
import tempfile
import time
from pathlib import Path

from analysis.pcap import PcapError, load_pcap
from model.argtypes import UsageError, existing_file, positive_int
from model.topology import FabricSpec, Topology, make_ev
from traffic.core.codec import Codec
from traffic.core.messages import DataPacket, Opcode, Sack

GOAL_RATIO = 20.0


def write_bench_capture(path, packets: int = 20000, payload: int = 1024) -> Path:
    """A capture like a run's: SRv6 WRITEs h0->h1 on plane 0 with SACKs back (1 per 4 writes),
    frames from the project codec, written in tcpdump's pcap format (nanosecond variant)."""
    topo = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=1))
    codec = Codec(topo)
    fwd, back = codec.encoder(0, 1, 0, "srv6"), codec.encoder(1, 0, 0, "srv6")
    body = bytes(payload)
    path = Path(path)
    t = 1_700_000_000_000_000_000
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1))
        for i in range(packets):
            ev = make_ev(0, i % 2, 1 + i % 128)
            if i % 5 == 4:
                frame = back.encode(Sack(dest_qp=7, cum_psn=i & 0xFFFFFF, ev=ev, rx_bytes=i * payload))
            else:
                frame = fwd.encode(DataPacket(dest_qp=7, psn=i & 0xFFFFFF, opcode=Opcode.WRITE_ONLY, msn=i & 0xFFFFFF,
                                              va=i * payload, rkey=1, dma_len=payload, payload=body,
                                              ev=ev, retransmit=i % 97 == 0))
            t += 10_000
            fh.write(struct.pack("<IIII", t // 1_000_000_000, t % 1_000_000_000, len(frame), len(frame)))
            fh.write(frame)
    return path


def add_pcap_arguments(parser) -> None:
    """The options of `mrclab bench pcap`."""
    parser.add_argument("--packets", type=positive_int, default=20000,
                        help="packets in the made-up capture (default 20000)")
    parser.add_argument("--path", type=existing_file, default=None,
                        help="load this capture (a run's pcaps/h<n>-p<plane>.pcap) instead")


def pcap_main(args) -> dict:
    """`mrclab bench pcap`: the figures; a --path that is not a capture of MRC packets is a
    UsageError naming the file."""
    if args.path is not None:
        try:
            mrc_packets = len(load_pcap(args.path))
        except (PcapError, OSError) as err:
            raise UsageError(f"--path {args.path}: cannot read it as a capture: {err}") from None
        if mrc_packets == 0:
            raise UsageError(f"--path {args.path}: no MRC packets in this capture")
    try:
        return run_pcap_bench(packets=args.packets, path=args.path)
    except AssertionError as err:       # the two loaders disagree: a mixed capture
        raise UsageError(f"--path {args.path}: {err} (the bench needs a capture of MRC "
                         f"packets only)") from None


def run_pcap_bench(packets: int = 20000, path=None, print_fn=print) -> dict:
    """Load one capture with both loaders; returns the rates (packets/s) and their ratio."""
    from scapy.utils import rdpcap

    with tempfile.TemporaryDirectory(prefix="mrclab-bench-") as tmp:
        if path is None:
            path = write_bench_capture(Path(tmp) / "h0-p0.pcap", packets)
        path = Path(path)
        size_mb = path.stat().st_size / 1e6
        t0 = time.perf_counter()
        df = load_pcap(path)
        ours_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        pkts = rdpcap(str(path))
        scapy_s = time.perf_counter() - t0
    n = len(pkts)
    if len(df) != n:
        raise AssertionError(f"analysis.pcap decoded {len(df)} MRC packets, rdpcap read {n}")
    res = {"packets": n, "file_mb": size_mb,
           "analysis_pcap_pps": n / ours_s, "scapy_rdpcap_pps": n / scapy_s,
           "analysis_pcap_s": ours_s, "scapy_rdpcap_s": scapy_s}
    res["ratio"] = res["analysis_pcap_pps"] / res["scapy_rdpcap_pps"]
    res["goal_met"] = res["ratio"] >= GOAL_RATIO
    print_fn(f"pcap loading, {n} packets ({size_mb:.1f} MB), same file:")
    print_fn(f"  analysis.pcap.load_pcap : {res['analysis_pcap_pps']:>12,.0f} packets/s ({ours_s:.3f} s, "
             f"full field decode into a DataFrame)")
    print_fn(f"  scapy rdpcap            : {res['scapy_rdpcap_pps']:>12,.0f} packets/s ({scapy_s:.3f} s, "
             f"objects only, no field extraction)")
    print_fn(f"  ratio {res['ratio']:.1f}x (goal >= {GOAL_RATIO:.0f}x: "
             f"{'met' if res['goal_met'] else 'NOT met'})")
    return res


if __name__ == "__main__":
    run_pcap_bench()
