"""The trimming / virtual-queue ECN BPF program on a real veth egress (root; own netns `mtr-*`).

A burst far above the configured port rate goes out of a veth whose egress has the program; an
AF_PACKET socket at the far end (in its own namespace) captures what came through. Every
captured frame is matched to the frame sent (by a unique id) and must be exactly the sent frame,
the sent frame with CE, or the fabric's trim of it (vqueue.trim_frame), checked field by field.
"""
import errno
import select
import socket
import struct
import time

import pytest
from scapy.layers.inet import TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from emulation.network import trimming
from emulation.benches import trim as trim_bench
from emulation.network.vqueue import (DSCP_TRIMMED, DSCP_TRIMMED_LASTHOP, ECN_CE, PortConfig,
                              parse_frame, set_traffic_class, trim_frame)

SRC, DST, OUTER_DST = "fd00:0:0:0::1", "fd00:0:1:0::1", "fcbb:bb00:1000:2000:1001:3000::"


SO_SNDBUFFORCE = 32     # linux/asm-generic/socket.h (root may exceed net.core.wmem_max)


def mrc_data(ident, outer=True, tseth=False, imm=False, ecn=2, payload=900):
    opcode = 0xC9 if imm else 0xC7
    body = struct.pack("!BBHII", opcode, 0, 0xFFFF, 0x11, ident)
    body += struct.pack("!I", (1 << 24 if tseth else 0) | 3)
    body += struct.pack("!Q", 0x5555) if tseth else b""
    body += struct.pack("!QII", 0x10000 + ident * 1024, 0x77, 1 << 20)
    body += struct.pack("!I", 0xFEED) if imm else b""
    body += bytes([ident & 0xFF]) * payload + b"ICRC"
    inner = IPv6(src=SRC, dst=DST, tc=ecn, fl=0x1234) / UDP(sport=0x4000 | ident, dport=4791,
                                                             chksum=0) / Raw(body)
    pkt = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:01:00")
    pkt = pkt / IPv6(src=SRC, dst=OUTER_DST, tc=ecn, nh=41, fl=0x1) / inner if outer else pkt / inner
    return bytes(pkt)


def sack(ident, ecn=2):
    body = struct.pack("!BBHII", 0xDC, 0, 0xFFFF, 0x11, ident) + bytes(900)
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:01:00") / IPv6(src=SRC, dst=DST, tc=ecn) / UDP(sport=0x4000 | ident, dport=4791,
                                                                 chksum=0) / Raw(body))


def tcp(ident, ecn=2):
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:01:00") / IPv6(src=SRC, dst=DST, tc=ecn) / TCP(sport=5000, dport=5201,
                                                                 seq=ident, flags="A") / Raw(bytes(900)))


def ident_of(frame):
    """The unique id each test frame carries (BTH PSN for UDP 4791, TCP seq otherwise)."""
    pkt = Ether(frame)
    if TCP in pkt:
        return pkt[TCP].seq
    return struct.unpack_from("!I", bytes(pkt[UDP].payload), 8)[0] & 0xFFFFFF


def burst():
    """A mixed burst: MRC data in every header variant, MRC control, TCP, non-ECT packets."""
    frames = []
    for i in range(1, 241):
        kind = i % 8
        if kind == 3:
            frames.append(tcp(i))
        elif kind == 5:
            frames.append(sack(i))
        elif kind == 6:
            frames.append(mrc_data(i, ecn=0))                 # not ECN-capable
        else:
            frames.append(mrc_data(i, outer=kind != 1, tseth=kind in (2, 4), imm=kind == 4))
    return frames


@pytest.fixture
def port():
    with trimming.scratch_veth("mtr") as (a, b, netns):
        trimming.attach(a)
        rx = trimming.packet_socket_in_netns(netns, b)
        tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        tx.bind((a, 0))
        try:
            yield a, tx, rx
        finally:
            tx.close()
            rx.close()
            assert trimming.detach(a)


def send_and_capture(tx, rx, frames, settle_s=0.3, rejected=None):
    """Send frames, return what arrived; a drop at egress (TC_ACT_SHOT) makes the kernel
    answer ENOBUFS, so those sends are collected in `rejected` if given (else they raise)."""
    for frame in frames:
        try:
            tx.send(frame)
        except OSError as exc:
            if rejected is None or exc.errno != errno.ENOBUFS:
                raise
            rejected.append(frame)
    got = []
    deadline = time.monotonic() + settle_s
    while time.monotonic() < deadline:
        if select.select([rx], [], [], 0.05)[0]:
            data, addr = rx.recvfrom(65535)
            if addr[2] != socket.PACKET_OUTGOING:
                got.append(data)
    return got


def classify(sent_by_id, got, last_hop):
    """Match captures to sent frames; return (marked ids, trimmed ids); assert exactness."""
    marked, trimmed = set(), set()
    for frame in got:
        ident = ident_of(frame)
        original = sent_by_id[ident]
        info = parse_frame(frame)
        if len(frame) < len(original):
            trimmed.add(ident)
            expected = trim_frame(original, last_hop=last_hop)
            if info.ecn == ECN_CE and parse_frame(original).ecn != ECN_CE:
                marked.add(ident)
                expected = set_traffic_class(expected, ecn=ECN_CE)
            assert frame == expected
            # Independent check of the lengths with Scapy's own parser.
            pkt = Ether(frame)
            ips = [layer for layer in pkt.iterpayloads() if isinstance(layer, IPv6)]
            for ip in ips:
                assert ip.plen == len(bytes(ip.payload))
            assert pkt[UDP].len == len(bytes(pkt[UDP])) and pkt[UDP].chksum == 0
            assert ips[0].tc >> 2 == (DSCP_TRIMMED_LASTHOP if last_hop else DSCP_TRIMMED)
        elif frame != original:
            assert frame == set_traffic_class(original, ecn=ECN_CE)
            marked.add(ident)
    return marked, trimmed


CONFIG = dict(rate_mbit=10, ecn_min_bytes=4000, ecn_max_bytes=16000, trim_bytes=30000)


def test_marks_and_trims_above_thresholds_with_exact_headers(port):
    intf, tx, rx = port
    trimming.configure(intf, PortConfig(**CONFIG, last_hop=False))
    frames = burst()
    sent = {ident_of(f): f for f in frames}
    got = send_and_capture(tx, rx, frames)
    assert sorted(ident_of(f) for f in got) == sorted(sent)      # nothing lost, no extras
    marked, trimmed = classify(sent, got, last_hop=False)
    assert trimmed and marked
    for ident in trimmed:
        assert parse_frame(sent[ident]).mrc_data                 # only MRC data is trimmed
    tcp_ids = {i for i in sent if i % 8 == 3}
    assert not tcp_ids & trimmed and tcp_ids & marked            # TCP: marked, never trimmed
    assert not {i for i in sent if i % 8 == 6} & marked          # not-ECT never marked
    order = [ident_of(f) for f in got]
    assert order[0] not in marked | trimmed                      # empty queue: untouched
    assert min(order.index(i) for i in trimmed) > min(order.index(i) for i in marked)
    stats = trimming.counters(intf)
    assert stats["offered_packets"] == len(frames)
    assert stats["offered_bytes"] == sum(map(len, frames))
    assert stats["marked"] == len(marked)
    assert stats["trimmed"] == len(trimmed)
    assert stats["trimmed_bytes_cut"] == sum(len(sent[i]) - parse_frame(sent[i]).header_len
                                             for i in trimmed)
    assert stats["dropped"] == 0 and stats["errors"] == 0
    assert stats["mrc_data_packets"] == sum(parse_frame(f).mrc_data for f in frames)


def test_last_hop_never_marks_and_uses_lasthop_dscp(port):
    intf, tx, rx = port
    trimming.configure(intf, PortConfig(**CONFIG, last_hop=True))
    frames = burst()
    sent = {ident_of(f): f for f in frames}
    got = send_and_capture(tx, rx, frames)
    marked, trimmed = classify(sent, got, last_hop=True)
    assert trimmed and not marked
    stats = trimming.counters(intf)
    assert stats["marked"] == 0 and stats["trimmed"] == len(trimmed)


def test_trimming_off_drops_above_hard_threshold_and_counts_it(port):
    intf, tx, rx = port
    trimming.configure(intf, PortConfig(**CONFIG, last_hop=False, mark=False, trim=False,
                                        drop_bytes=40000))
    frames = burst()
    sent = {ident_of(f): f for f in frames}
    rejected = []
    got = send_and_capture(tx, rx, frames, rejected=rejected)
    marked, trimmed = classify(sent, got, last_hop=False)
    assert not marked and not trimmed
    stats = trimming.counters(intf)
    assert stats["dropped"] == len(frames) - len(got) == len(rejected) > 0
    assert stats["dropped_bytes"] == sum(map(len, rejected))
    assert stats["vq_peak_bytes"] <= 40000


def test_unconfigured_port_passes_everything(port):
    intf, tx, rx = port
    frames = burst()[:40]
    got = send_and_capture(tx, rx, frames, settle_s=0.2)
    assert got == frames
    assert trimming.counters(intf)["offered_packets"] == 40


def test_htb_priority_lets_trimmed_headers_overtake_full_packets():
    with trimming.scratch_veth("mtr") as (a, b, netns):
        for argv in trimming.port_qdisc_commands(a, 5):
            trimming.run(argv)
        rx = trimming.packet_socket_in_netns(netns, b)
        tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        tx.bind((a, 0))
        try:
            full = [mrc_data(i, payload=1200) for i in range(1, 41)]
            headers = [trim_frame(mrc_data(i, payload=1200), last_hop=lh)
                       for i, lh in ((101, False), (102, True), (103, False))]
            got = send_and_capture(tx, rx, full + headers, settle_s=0.6)
        finally:
            tx.close()
            rx.close()
        order = [ident_of(f) for f in got]
        assert sorted(order) == list(range(1, 41)) + [101, 102, 103]
        # Sent last, the headers must arrive well before the full packets queued ahead of them.
        assert max(order.index(i) for i in (101, 102, 103)) < order.index(30)


def test_priority_leaf_is_served_first_when_priority_traffic_is_a_quarter_of_the_link():
    """HTB serves a leaf under its assured rate before any leaf that borrows, whatever their prio.
    Priority frames (trimmed headers, three per full packet) are about a quarter of the bytes
    here, queued among 120 full packets all at once: served first, every header leaves before the
    20th full packet (the 360 headers' 48 KB take 77 ms at 5 Mbit/s; 20 full packets would take
    43 ms). A priority leaf assured only a tenth of the link spreads them through the backlog."""
    with trimming.scratch_veth("mtq") as (a, b, netns):
        for argv in trimming.port_qdisc_commands(a, 5):
            trimming.run(argv)
        rx = trimming.packet_socket_in_netns(netns, b)
        tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        # every frame queued before the first leaves: queued frames count against the sender's
        # buffer, and the default one would pace the sends by the link
        tx.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 8 << 20)
        tx.bind((a, 0))
        try:
            frames = []
            for i in range(1, 121):
                frames.append(mrc_data(i, payload=1200))
                frames += [trim_frame(mrc_data(1000 + 3 * i + j, payload=1200), last_hop=False)
                           for j in (0, 1, 2)]
            headers = {ident_of(f) for f in frames if ident_of(f) >= 1000}
            header_bytes = sum(len(f) for f in frames if ident_of(f) >= 1000)
            assert 0.2 < header_bytes / sum(len(f) for f in frames) < 0.3
            got = send_and_capture(tx, rx, frames, settle_s=1.0)
        finally:
            tx.close()
            rx.close()
        order = [ident_of(f) for f in got]
        assert len(order) == len(frames)
        assert max(order.index(h) for h in headers) < order.index(20)


def _class_sent(intf: str, classid: str) -> tuple[int, int]:
    """(bytes, packets) HTB's class `classid` of intf has sent (`tc -s class show`)."""
    out = trimming.run(["tc", "-s", "class", "show", "dev", intf])
    block = out.split(f"class htb {classid} ", 1)[1]
    sent = block.split("Sent ", 1)[1].split()
    return int(sent[0]), int(sent[2])


def test_a_header_trimmed_at_a_port_costs_its_link_only_the_header():
    """The kernel sizes a packet for the qdisc before the egress program runs: a header cut there
    must still be charged to HTB at its own length, or every trimmed packet would hold the link
    for a full packet's time. 40 MRC data packets of 1,200 bytes of payload at once into a port
    that trims above 3,000 bytes: nearly all are trimmed, and the priority leaf (which
    holds only the trimmed headers here) has sent exactly their bytes."""
    with trimming.scratch_veth("mth") as (a, b, netns):
        for argv in trimming.port_qdisc_commands(a, 5):
            trimming.run(argv)
        trimming.attach(a)
        trimming.configure(a, PortConfig(rate_mbit=5, ecn_min_bytes=100_000,
                                         ecn_max_bytes=200_000, trim_bytes=3000, last_hop=True))
        rx = trimming.packet_socket_in_netns(netns, b)
        tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        tx.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 8 << 20)
        tx.bind((a, 0))
        try:
            frames = [mrc_data(i, payload=1200) for i in range(1, 41)]
            got = send_and_capture(tx, rx, frames, settle_s=0.5)
            header_bytes, headers = _class_sent(a, "1:10")
            trimmed = trimming.counters(a)["trimmed"]
        finally:
            tx.close()
            rx.close()
            assert trimming.detach(a)
        header_len = len(trim_frame(frames[0], last_hop=True))
        # two 1,338-byte frames fit in 3,000 bytes; a slow sender lets the link drain a little
        assert len(got) == 40 and 30 <= trimmed <= 38
        assert headers == trimmed
        assert header_bytes == trimmed * header_len       # not trimmed x len(frames[0])


def test_bench_measures_both_ports_and_cleans_up():
    result = trim_bench.measure_bench(seconds_per_round=0.2, rounds=1)
    assert result["pps_without"] > 0 and result["pps_with"] > 0
    assert result["offered_packets"] > 1000 and 0 < result["prog_ns_per_packet"] < 10_000
