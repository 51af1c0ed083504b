"""`mrclab bench trim`: what the in-fabric trimming program (emulation/network/bpf/trim.c) costs per
packet: alone (BPF_PROG_TEST_RUN), on a veth, and on a port of the real fabric, with and without it
in alternating rounds of one run."""
from __future__ import annotations

import struct
import time

from controller.bpf_maps import prog_test_run_ns as _prog_test_run_ns
from emulation.benches.flood import flood
from emulation.network.trimming import (PortConfig, _port_maps, attach, configure, counters, detach, run,
                                scratch_veth)
from emulation.network.fabric import Fabric
from model.argtypes import positive_float, positive_int
from model import wire
from model.topology import FabricSpec
from traffic.core.codec import Codec
from traffic.core.messages import DataPacket, Opcode

def bench_frame(payload: int = 1024) -> bytes:
    """An SRv6-encapsulated MRC WRITE_MIDDLE frame (ECT(0)) built with struct, for the bench."""
    src, dst = bytes.fromhex("fd00" + "00" * 13 + "01"), bytes.fromhex("fd00" + "00" * 13 + "02")
    ip6 = wire.IPV6
    body = (struct.pack("!" + wire.BTH.struct_format, Opcode.WRITE_MIDDLE, 0, wire.BTH_PKEY_DEFAULT,
                        0x11, 7)
            + struct.pack("!" + wire.METH.struct_format, 1)
            + struct.pack("!" + wire.RETH.struct_format, 0, 1, payload) + bytes(payload)
            + bytes(wire.ICRC_LEN))
    udp = struct.pack("!" + wire.UDP.struct_format, 0x1234, wire.ROCE_UDP_PORT,
                      wire.UDP.size + len(body), 0) + body
    word = (wire.IP_VERSION_6 << ip6["version"].shift) | (wire.ECN_ECT0 << ip6["ecn"].shift)
    head = "!" + ip6.format_through("hop_limit")
    inner = struct.pack(head, word, len(udp), wire.NEXT_HEADER_UDP, wire.HOP_LIMIT) + src + dst + udp
    outer = struct.pack(head, word, len(inner), wire.NEXT_HEADER_IPV6, wire.HOP_LIMIT) + src + dst \
        + inner
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x86\xdd" + outer


def prog_test_run_ns(intf: str, frame: bytes, repeat: int = 200_000) -> float:
    """Average ns the attached program spends on `frame` (BPF_PROG_TEST_RUN, in-kernel loop)."""
    with _port_maps(intf, None) as (_cfg, _state, prog_fd):
        return _prog_test_run_ns(prog_fd, frame, repeat)


def _rx_packets(netns: str, intf: str) -> int:
    import json
    out = json.loads(run(["ip", "-n", netns, "-s", "-j", "link", "show", "dev", intf]))
    return int(out[0]["stats64"]["rx"]["packets"])


def add_bench_arguments(parser) -> None:
    """The options of `mrclab bench trim`."""
    parser.add_argument("--seconds", type=positive_float, default=1.0,
                        help="seconds per round (default 1)")
    parser.add_argument("--rounds", type=positive_int, default=3,
                        help="alternating with/without rounds; the median is reported (default 3)")
    parser.add_argument("--no-fabric", action="store_true",
                        help="skip the OVS switch-port figure (needs the fabric lock)")


def bench_main(args) -> dict:
    """`mrclab bench trim`: the figures of the program alone and, unless --no-fabric, on a port."""
    figures = {"program": measure_bench(args.seconds, args.rounds)}
    if not args.no_fabric:
        figures["fabric"] = measure_fabric_bench(args.seconds, args.rounds)
    return figures


def bench(argv: list[str] | None = None) -> int:
    """`mrclab bench trim [--seconds S] [--rounds N]` from an argument list; exit status 0."""
    import argparse
    parser = argparse.ArgumentParser(prog="mrclab bench trim")
    add_bench_arguments(parser)
    bench_main(parser.parse_args(list(argv or [])))
    return 0


def measure_fabric_bench(seconds_per_round: float = 1.0, rounds: int = 3) -> dict:
    """Where the cost matters: OVS userspace forwarding through one switch port of the real
    fabric (h0 -> T0 -> h1, links at 10 Gbit/s so HTB does not bound it), with and without the
    program on that port's egress, alternating rounds in one run (program attached/detached
    between rounds). Frames are codec-built MRC WRITEs to h1 (ECMP/plain IPv6 forwarding)."""
    import json
    import sys


    spec = FabricSpec(planes=1, groups=1, spines=1, hosts_per_group=2,
                      host_link_mbit=10000, fabric_link_mbit=10000)
    rates: dict[str, list[float]] = {"without": [], "with": []}
    with Fabric(spec, routing="ecmp") as fab:
        port = fab.topo.link("t0p0g0", fab.topo.host(1).name).a_intf \
            if fab.topo.link("t0p0g0", fab.topo.host(1).name).a == "t0p0g0" \
            else fab.topo.link("t0p0g0", fab.topo.host(1).name).b_intf
        enc = Codec(fab.topo).encoder(0, 1, 0, "ecmp")
        frame = enc.encode(DataPacket(dest_qp=0x11, psn=7, opcode=Opcode.WRITE_MIDDLE, msn=1, va=0, rkey=1,
                                      dma_len=1 << 20, payload=bytes(1024), ev=0xC123))

        def rx() -> int:
            out = json.loads(fab.cmd_in_host(1, ["ip", "-s", "-j", "link", "show", "dev",
                                                 f"{fab.topo.host(1).name}-p0"]))
            return int(out[0]["stats64"]["rx"]["packets"])

        for _ in range(rounds):
            for label in ("without", "with"):
                if label == "with":
                    attach(port)
                    configure(port, PortConfig(10000, 1 << 30, 1 << 30, 1 << 30, False))
                before = rx()
                t0 = time.monotonic()
                fab.cmd_in_host(0, [sys.executable, "-m", "emulation.benches.flood",
                                    f"{fab.topo.host(0).name}-p0", frame.hex(),
                                    str(seconds_per_round)], timeout=seconds_per_round + 30)
                time.sleep(0.2)
                rates[label].append((rx() - before) / (time.monotonic() - t0 - 0.2))
                if label == "with":
                    detach(port)
    med = {k: sorted(v)[len(v) // 2] for k, v in rates.items()}
    result = {"port": port, "frame_bytes": len(frame), "pps_without": med["without"],
              "pps_with": med["with"],
              "ratio": med["with"] / med["without"] if med["without"] else 0.0}
    print(f"trim bench (fabric): {len(frame)} B MRC frames h0 -> T0 -> h1 through OVS userspace, "
          f"program on {port} egress, {rounds} alternating rounds of {seconds_per_round:.1f} s")
    print(f"  without program: {med['without']:,.0f} pkt/s   with program: {med['with']:,.0f} pkt/s"
          f"   ratio {result['ratio']:.3f} (goal >= 0.95)")
    return result


def measure_bench(seconds_per_round: float = 1.0, rounds: int = 3) -> dict:
    """Forwarding rate of a veth port with and without the program, side by side (alternating
    rounds in one run); plus the program's own per-packet time from BPF_PROG_TEST_RUN.

    The sender is one Python AF_PACKET loop, so the veth rate is bounded by the sender; the
    in-kernel time per packet shows what the program costs against that budget."""
    frame = bench_frame()
    rates: dict[str, list[float]] = {"without": [], "with": []}
    with scratch_veth("mtrb") as (plain_a, _plain_b, plain_ns), \
            scratch_veth("mtrc") as (trim_a, trim_b, trim_ns):
        del _plain_b
        attach(trim_a)
        # A port that never congests: every packet runs parse + virtual queue + decision.
        configure(trim_a, PortConfig(100_000, 1 << 30, 1 << 30, 1 << 30, False))
        plain_b = [line for line in run(["ip", "-n", plain_ns, "-o", "link"]).splitlines()
                   if "mtrb" in line][0].split(":")[1].strip().split("@")[0]
        for _ in range(rounds):
            for label, a, ns, b in (("without", plain_a, plain_ns, plain_b),
                                    ("with", trim_a, trim_ns, trim_b)):
                before = _rx_packets(ns, b)
                t0 = time.monotonic()
                flood(a, frame, seconds_per_round)
                time.sleep(0.05)
                rates[label].append((_rx_packets(ns, b) - before) / (time.monotonic() - t0 - 0.05))
        prog_ns = prog_test_run_ns(trim_a, frame)
        stats = counters(trim_a)
        detach(trim_a)
    med = {k: sorted(v)[len(v) // 2] for k, v in rates.items()}
    result = {
        "frame_bytes": len(frame),
        "pps_without": med["without"], "pps_with": med["with"],
        "ratio": med["with"] / med["without"] if med["without"] else 0.0,
        "prog_ns_per_packet": prog_ns,
        "prog_share_of_packet_budget": prog_ns * med["without"] / 1e9,
        "offered_packets": stats["offered_packets"],
    }
    print(f"trim bench: {len(frame)} B MRC frames through a veth, {rounds} alternating rounds "
          f"of {seconds_per_round:.1f} s")
    print(f"  without program: {med['without']:,.0f} pkt/s   with program: {med['with']:,.0f} pkt/s"
          f"   ratio {result['ratio']:.3f} (goal >= 0.95)")
    print(f"  program alone (BPF_PROG_TEST_RUN): {prog_ns:.0f} ns/packet = "
          f"{100 * result['prog_share_of_packet_budget']:.2f}% of the per-packet time without it")
    return result
