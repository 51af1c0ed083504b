"""Send / count UDP 4791 probe packets inside a host namespace, to check fabric forwarding.

    python -m emulation.network.pathcheck recv --spec JSON --host 1 [--planes 0,1] --expect N --timeout-s S
    python -m emulation.network.pathcheck send --spec JSON --routing srv6|ecmp --src 0
                                       --flows '[[1, EV], [2, EV], ...]' --count N [--pps R]

The sender builds each flow's frame ONCE with Scapy (SRv6 mode: outer IPv6 to the uSID container,
nh=41, inner IPv6; ECMP mode: plain IPv6 with the EV in UDP sport + flow label) and sends the
bytes on an AF_PACKET socket bound to h{src}-p{plane} (plane = the EV's plane bits), paced.
The receiver counts frames carrying our marker per (src, ev) on each plane interface and prints
one JSON object, including the outer traffic-class ECN codepoints seen (CE = 3), so ECN marking
and gray loss can be checked too. Independent of traffic/core/codec.py on purpose: it checks the fabric,
not the endpoint stack.
"""
from __future__ import annotations

import argparse
import json
import select
import socket
import struct
import sys
import time

from model.topology import (ROCE_UDP_PORT, FabricSpec, Topology, ev_from_wire, ev_plane,
                                ev_spine)

MARKER = b"MRCLABPC"
ETH_P_ALL = 0x0003
ETH_P_IPV6 = 0x86DD
PACKET_OUTGOING = 4
# BTH-like 12 bytes: opcode 0x64 (UD SEND only), tver 0, pkey 0xffff, dest QP 1, PSN 0.
BTH = struct.pack("!BBHII", 0x64, 0, 0xFFFF, 1, 0)


def payload(src: int) -> bytes:
    """BTH-like header, marker, source host number; padded so frames are 128 bytes."""
    body = BTH + MARKER + struct.pack("!H", src)
    return body + bytes(max(0, 60 - len(body)))


def build_frame(topo: Topology, routing: str, src: int, dst: int, ev: int, ecn: int = 2) -> bytes:
    """The wire bytes of one probe (Scapy, once per flow)."""
    from scapy.layers.inet import UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw

    plane, spine = ev_plane(ev), ev_spine(ev)
    if not 0 <= ecn <= 3:
        raise ValueError(f"ecn must be 0..3, got {ecn}")
    flow_label = (ev >> 16) & 0xFFFF
    inner = (IPv6(src=topo.nic_addr(src, plane), dst=topo.nic_addr(dst, plane), nh=17,
                  fl=flow_label, tc=ecn, hlim=64)
             / UDP(sport=ev & 0xFFFF, dport=ROCE_UDP_PORT, chksum=0) / Raw(payload(src)))
    eth = Ether(src=topo.nic_mac(src, plane), dst=topo.nic_mac(dst, plane), type=ETH_P_IPV6)
    if routing == "srv6":
        outer = IPv6(src=topo.nic_addr(src, plane),
                     dst=topo.usid_container(src, dst, plane, spine), nh=41, fl=flow_label,
                     tc=ecn, hlim=64)
        frame = eth / outer / inner
    elif routing == "ecmp":
        frame = eth / inner
    else:
        raise ValueError(f"routing must be srv6 or ecmp, got {routing!r}")
    return bytes(frame)


def parse_frame(frame: bytes) -> tuple[int, int, int] | None:
    """(src host, ev, outer ECN bits) of one of our probes, or None for anything else."""
    if len(frame) < 14 + 40 + 8 + len(BTH) + len(MARKER) + 2:
        return None
    if struct.unpack_from("!H", frame, 12)[0] != ETH_P_IPV6:
        return None
    off = 14
    outer_ecn = (struct.unpack_from("!I", frame, off)[0] >> 20) & 0x3
    nh = frame[off + 6]
    if nh == 41:
        off += 40
        if len(frame) < off + 40 or frame[off] >> 4 != 6:
            return None
        nh = frame[off + 6]
    if nh != 17:
        return None
    flow_label = struct.unpack_from("!I", frame, off)[0] & 0xFFFFF
    udp = off + 40
    if len(frame) < udp + 8 + len(BTH) + len(MARKER) + 2:
        return None
    sport, dport = struct.unpack_from("!HH", frame, udp)
    body = udp + 8 + len(BTH)
    if dport != ROCE_UDP_PORT or frame[body:body + len(MARKER)] != MARKER:
        return None
    src = struct.unpack_from("!H", frame, body + len(MARKER))[0]
    return src, ev_from_wire(sport, flow_label), outer_ecn


def _spec(text: str) -> Topology:
    return Topology(FabricSpec.from_dict(json.loads(text)))


def _int_list(text: str) -> list[int]:
    return [int(x, 0) for x in text.split(",") if x.strip()]


def recv_main(args) -> int:
    topo = _spec(args.spec)
    host = topo.host(args.host)
    planes = _int_list(args.planes) if args.planes else list(range(topo.spec.planes))
    socks = {}
    for p in planes:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((f"{host.name}-p{p}", 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        socks[s.fileno()] = (s, p)
    # A bound UDP socket keeps the kernel from answering every probe with ICMPv6 port
    # unreachable (noise in the port counters); busy port = someone else absorbs them.
    absorber = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    try:
        absorber.bind(("::", ROCE_UDP_PORT))
    except OSError:
        pass
    print("ready", file=sys.stderr, flush=True)
    counts: dict[tuple[int, int, int], dict] = {}
    total = foreign = 0
    deadline = time.monotonic() + args.timeout_s
    while time.monotonic() < deadline and (args.expect <= 0 or total < args.expect):
        ready, _, _ = select.select(list(socks), [], [], min(0.1, args.timeout_s))
        for fd in ready:
            s, plane = socks[fd]
            while True:
                try:
                    frame, addr = s.recvfrom(65535, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    break
                if addr[2] == PACKET_OUTGOING:
                    continue
                parsed = parse_frame(frame)
                if parsed is None:
                    foreign += 1
                    continue
                src, ev, ecn = parsed
                rec = counts.setdefault((src, ev, plane), {"src": src, "dst": host.index,
                                                           "plane": plane, "ev": ev,
                                                           "packets": 0, "ecn": [0, 0, 0, 0]})
                rec["packets"] += 1
                rec["ecn"][ecn] += 1
                total += 1
    print(json.dumps({"host": host.index, "total": total, "foreign": foreign,
                      "flows": list(counts.values())}), flush=True)
    return 0


def send_main(args) -> int:
    topo = _spec(args.spec)
    flows = json.loads(args.flows)
    if not isinstance(flows, list) or not all(isinstance(f, list) and len(f) == 2 for f in flows):
        raise SystemExit("pathcheck send: --flows must be a JSON list of [dst, ev] pairs")
    frames = []
    socks: dict[int, socket.socket] = {}
    for dst, ev in flows:
        plane = ev_plane(ev)
        if plane not in socks:
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            s.bind((f"h{args.src}-p{plane}", 0))
            socks[plane] = s
        frames.append((socks[plane], build_frame(topo, args.routing, args.src, dst, ev, args.ecn)))
    gap = 1.0 / args.pps if args.pps > 0 else 0.0
    t_next = time.monotonic()
    sent = 0
    for _ in range(args.count):
        for s, frame in frames:
            if gap:
                now = time.monotonic()
                if now < t_next:
                    time.sleep(t_next - now)
                elif now > t_next + 0.05:  # fell far behind (descheduled): do not burst
                    t_next = now
                t_next += gap
            s.send(frame)
            sent += 1
    print(json.dumps({"src": args.src, "sent": sent}), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emulation.network.pathcheck", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recv", help="count probes on this host's plane interfaces")
    r.add_argument("--spec", required=True, help="FabricSpec as JSON")
    r.add_argument("--host", type=int, required=True)
    r.add_argument("--planes", default="", help="comma list (default: all)")
    r.add_argument("--expect", type=int, default=0, help="stop after this many probes")
    r.add_argument("--timeout-s", type=float, default=5.0)
    s = sub.add_parser("send", help="send probes from this host")
    s.add_argument("--spec", required=True, help="FabricSpec as JSON")
    s.add_argument("--routing", choices=("srv6", "ecmp"), required=True)
    s.add_argument("--src", type=int, required=True)
    s.add_argument("--flows", required=True, help="JSON list of [dst host, ev]")
    s.add_argument("--count", type=int, default=5, help="packets per flow")
    s.add_argument("--pps", type=float, default=2000.0, help="pacing (0 = as fast as possible)")
    s.add_argument("--ecn", type=int, default=2, help="traffic-class ECN bits (default ECT(0))")
    args = ap.parse_args(argv)
    return recv_main(args) if args.cmd == "recv" else send_main(args)


if __name__ == "__main__":
    sys.exit(main())
