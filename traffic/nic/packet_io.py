"""AF_PACKET NIC-port I/O for the endpoint: kernel BPF filter, preallocated receive buffers,
link state by ioctl. The only module of the endpoint that touches sockets for the data path.

Why a kernel filter: the endpoint's ports also see ND/ICMP/kernel TCP traffic of the host; copying
all of that into Python would cost CPU the 2-core machine does not have. The filter keeps only
UDP destination port 4791 (RoCEv2) in IPv6, or in IPv6-in-IPv6 (SRv6 mode).
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import socket
import struct
import time

from model.wire import ROCE_UDP_PORT

ETH_P_ALL = 0x0003
ETH_P_IPV6 = 0x86DD
SOL_SOCKET = 1
SO_ATTACH_FILTER = 26
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
PACKET_STATISTICS = 6
SIOCGIFFLAGS = 0x8913
SIOCGIFMTU = 0x8921
IFF_UP = 0x1
IFF_RUNNING = 0x40

# Classic BPF accepting UDP dport 4791 in IPv6 (nh=17 directly after the fixed header) or in
# IPv6-in-IPv6 (outer nh=41, inner nh=17). Generated at dev time with
#   tcpdump -dd -y EN10MB 'ip6 and ((ip6[6]=17 and ip6[42:2]=4791) or
#                                   (ip6[6]=41 and ip6[46]=17 and ip6[82:2]=4791))'
# (code, jt, jf, k); offsets are from the Ethernet header: 12 ethertype, 20 nh, 56 UDP dport,
# 60 inner nh, 96 inner UDP dport. The MRC wire format never uses IPv6 extension headers.
ROCE_BPF_PROGRAM: tuple[tuple[int, int, int, int], ...] = (
    (0x28, 0, 0, 0x0000000C),   # ldh [12]
    (0x15, 0, 10, 0x000086DD),  # jeq #0x86dd          jt 2  jf 12
    (0x30, 0, 0, 0x00000014),   # ldb [20]
    (0x15, 0, 2, 0x00000011),   # jeq #17              jt 4  jf 6
    (0x28, 0, 0, 0x00000038),   # ldh [56]
    (0x15, 5, 6, ROCE_UDP_PORT),   # jeq #4791         jt 11 jf 12
    (0x15, 0, 5, 0x00000029),   # jeq #41              jt 7  jf 12
    (0x30, 0, 0, 0x0000003C),   # ldb [60]
    (0x15, 0, 3, 0x00000011),   # jeq #17              jt 9  jf 12
    (0x28, 0, 0, 0x00000060),   # ldh [96]
    (0x15, 0, 1, ROCE_UDP_PORT),   # jeq #4791         jt 11 jf 12
    (0x06, 0, 0, 0x00040000),   # ret #262144 (accept whole frame)
    (0x06, 0, 0, 0x00000000),   # ret #0 (drop)
)


def run_classic_bpf(program, frame: bytes) -> int:
    """Tiny interpreter for the opcodes used above: lets unit tests check the filter without root.

    Returns the number of bytes the kernel would accept (0 = drop). An out-of-bounds load drops,
    as in the kernel.
    """
    acc = 0
    pc = 0
    n = len(frame)
    while pc < len(program):
        code, jt, jf, k = program[pc]
        if code == 0x28:                    # ldh [k]
            if k + 2 > n:
                return 0
            acc = (frame[k] << 8) | frame[k + 1]
        elif code == 0x30:                  # ldb [k]
            if k + 1 > n:
                return 0
            acc = frame[k]
        elif code == 0x15:                  # jeq #k
            pc += jt if acc == k else jf
        elif code == 0x06:                  # ret #k
            return min(k, n)
        else:
            raise ValueError(f"opcode {code:#x} not supported by this interpreter")
        pc += 1
    return 0


def _sock_fprog(program) -> tuple[bytes, ctypes.Array]:
    raw = b"".join(struct.pack("HBBI", c, jt, jf, k) for c, jt, jf, k in program)
    buf = ctypes.create_string_buffer(raw, len(raw))
    fprog = struct.pack("HL", len(program), ctypes.addressof(buf))
    return fprog, buf


def attach_filter(sock: socket.socket, program=ROCE_BPF_PROGRAM) -> None:
    fprog, keepalive = _sock_fprog(program)
    sock.setsockopt(SOL_SOCKET, SO_ATTACH_FILTER, fprog)
    del keepalive  # the kernel copied the program during setsockopt


def interface_flags(intf: str, sock: socket.socket | None = None) -> int:
    """SIOCGIFFLAGS of an interface in the caller's network namespace.

    /sys/class/net shows the namespace that mounted sysfs (the root one, in Mininet hosts), so
    the ioctl is the reliable per-namespace source.
    """
    own = sock is None
    s = sock or socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    try:
        res = fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, struct.pack("16sH14x", intf.encode(), 0))
        return struct.unpack("16sH14x", res)[1] | 0
    finally:
        if own:
            s.close()


def interface_up(intf: str, sock: socket.socket | None = None) -> bool:
    flags = interface_flags(intf, sock)
    return bool(flags & IFF_UP) and bool(flags & IFF_RUNNING)


def interface_mtu(intf: str) -> int:
    with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:
        res = fcntl.ioctl(s.fileno(), SIOCGIFMTU, struct.pack("16si12x", intf.encode(), 0))
        return struct.unpack("16si12x", res)[1]


class PacketPort:
    """One NIC port: AF_PACKET socket bound to the interface, filtered in the kernel.

    Bound to ETH_P_IPV6 (not ETH_P_ALL) so the socket never sees the endpoint's own transmitted
    frames. The filter is attached before bind so no unfiltered frame is ever queued.
    """

    def __init__(self, intf: str, plane: int, rcvbuf: int = 4 << 20, sndbuf: int = 4 << 20,
                 frame_size: int = 16384):
        self.intf = intf
        self.plane = plane
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        try:
            attach_filter(self.sock)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
            self.sock.bind((intf, ETH_P_IPV6))
            self.sock.setblocking(False)
        except OSError as e:
            self.sock.close()
            raise OSError(f"cannot open AF_PACKET socket on {intf!r}: {e}") from e
        self._ctl = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        self.buf = bytearray(frame_size)
        self.view = memoryview(self.buf)
        self.send_errors = 0

    def fileno(self) -> int:
        return self.sock.fileno()

    def recv(self) -> int:
        """Read one frame into self.buf; returns its length, 0 when nothing is pending."""
        try:
            return self.sock.recv_into(self.buf)
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError as e:
            # The kernel reports a NIC link going down as a one-shot socket error (ENETDOWN,
            # POLLERR) that this read consumes; the link state itself is seen by is_up().
            if e.errno in (errno.ENETDOWN, errno.ENXIO):
                return 0
            raise

    def send(self, frame) -> bool:
        try:
            self.sock.send(frame)
            return True
        except (BlockingIOError, InterruptedError):
            self.send_errors += 1
            return False
        except OSError:
            # ENETDOWN/ENXIO while the link is down: the frame is lost like on a wire.
            self.send_errors += 1
            return False

    def mtu(self) -> int:
        return interface_mtu(self.intf)

    def kernel_stats(self) -> tuple[int, int]:
        """(frames received, frames dropped) by the kernel for this socket since the last call
        (PACKET_STATISTICS resets on read): drops mean the endpoint read too slowly."""
        raw = self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)
        return struct.unpack("II", raw)

    def is_up(self) -> bool:
        try:
            return interface_up(self.intf, self._ctl)
        except OSError:
            return False

    def close(self) -> None:
        self.sock.close()
        self._ctl.close()


# ---------------------------------------------------------------- PACKET_MMAP receive ring
#
# Constants from linux/if_packet.h. TPACKET_V2 rather than V3: a V3 ring wakes the reader only
# when a whole block is retired (full, or after its timeout of >= 1 ms), which would add up to
# a millisecond to every SACK on an emulated RTT of ~1 ms; V2 wakes per frame, and a reader
# that finds a frame ready keeps reading the following ones without any system call.
PACKET_VERSION = 10
PACKET_RX_RING = 5
TPACKET_V2 = 1
TP_STATUS_KERNEL = 0
TP_STATUS_USER = 0x1
TP_STATUS_COPY = 0x2            # frame longer than the ring slot: only a prefix is in the ring
TPACKET2_HDR = struct.Struct("=IIIHHIIHH4x")   # status len snaplen mac net sec nsec vlan tpid
TPACKET_REQ = struct.Struct("=IIII")           # block_size block_nr frame_size frame_nr
# Bytes of a ring slot in front of the frame: tpacket2_hdr (32) + sockaddr_ll (20), aligned to
# 16 (TPACKET_ALIGN), plus the mac offset the kernel adds to align the network header.
RING_SLOT_OVERHEAD = 128
PAGE_SIZE = 4096


def ring_geometry(mtu: int, ring_bytes: int = 4 << 20) -> tuple[int, int, int, int]:
    """(block_size, block_nr, frame_size, frame_nr) of an RX ring whose slots hold a whole
    frame of an interface with this MTU: slot = next power of two >= Ethernet + MTU + slot
    overhead (2 KiB at 1500, 8 KiB at 4200, 16 KiB at 9000); one block = one slot, at least a
    page (frames never straddle blocks); about ring_bytes in total."""
    if not 68 <= mtu <= 65535:
        raise ValueError(f"mtu {mtu} out of range")
    frame = 1 << (14 + mtu + RING_SLOT_OVERHEAD - 1).bit_length()
    block = max(frame, PAGE_SIZE)
    block_nr = max(2, ring_bytes // block)
    return block, block_nr, frame, block_nr * (block // frame)


def drain_ring(ring, frame_size: int, frame_nr: int, index: int, handle,
               limit: int) -> tuple[int, int, int]:
    """Hand the ready slots of a TPACKET_V2 ring to handle(frame), in ring order from slot
    `index`, up to `limit` of them; each slot goes back to the kernel (status 0) right after
    its handler returns, so `frame` (a view into the ring) is valid only during the call.
    Returns (next slot index, slots consumed, slots skipped as truncated). Pure: works on any
    writable buffer laid out like the kernel's ring, which is how it is unit-tested."""
    done = truncated = 0
    unpack = TPACKET2_HDR.unpack_from
    while done < limit:
        off = index * frame_size
        status, _len, snaplen, mac, _net, _s, _ns, _v, _t = unpack(ring, off)
        if not status & TP_STATUS_USER:
            break
        try:
            if status & TP_STATUS_COPY:
                truncated += 1              # slots are sized from the MTU: should not happen
            else:
                handle(ring[off + mac:off + mac + snaplen])
        finally:
            ring[off:off + 4] = b"\0\0\0\0"   # TP_STATUS_KERNEL: the slot is the kernel's again
        index = index + 1 if index + 1 < frame_nr else 0
        done += 1
    return index, done, truncated


class RingPort(PacketPort):
    """A NIC port that receives through a PACKET_MMAP (TPACKET_V2) ring: the kernel writes
    frames into shared memory and flips each slot's status; the endpoint reads every ready
    slot per wakeup with no system call per frame. Sending is PacketPort's."""

    def __init__(self, intf: str, plane: int, mtu: int | None = None, ring_bytes: int = 4 << 20,
                 sndbuf: int = 4 << 20):
        import mmap
        self.intf = intf
        self.plane = plane
        self.send_errors = 0
        mtu = interface_mtu(intf) if mtu is None else mtu
        block, block_nr, self.frame_size, self.frame_nr = ring_geometry(mtu, ring_bytes)
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        try:
            attach_filter(self.sock)
            self.sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
            self.sock.setsockopt(SOL_PACKET, PACKET_RX_RING,
                                 TPACKET_REQ.pack(block, block_nr, self.frame_size, self.frame_nr))
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
            self._mmap = mmap.mmap(self.sock.fileno(), block * block_nr, mmap.MAP_SHARED,
                                   mmap.PROT_READ | mmap.PROT_WRITE)
            self.sock.bind((intf, ETH_P_IPV6))
            self.sock.setblocking(False)
        except OSError as e:
            self.sock.close()
            raise OSError(f"cannot open the PACKET_MMAP ring on {intf!r}: {e}") from e
        self._ring = memoryview(self._mmap)
        self._next = 0
        self._ctl = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        self.truncated = 0
        # Optional recorder (record(ns)) of the receive lateness: how long the oldest frame of
        # each drain waited in the ring (the kernel stamps it on arrival with CLOCK_REALTIME).
        self.rx_lateness = None

    def drain(self, handle, limit: int) -> int:
        """handle(frame) for up to `limit` ready frames (drain_ring); returns how many."""
        if self.rx_lateness is not None:
            status, _l, _s, _m, _n, sec, nsec, _v, _t = TPACKET2_HDR.unpack_from(
                self._ring, self._next * self.frame_size)
            if status & TP_STATUS_USER:
                self.rx_lateness.record(time.time_ns() - (sec * 1_000_000_000 + nsec))
        self._next, done, truncated = drain_ring(self._ring, self.frame_size, self.frame_nr,
                                                 self._next, handle, limit)
        self.truncated += truncated
        return done

    def recv(self) -> int:
        raise NotImplementedError("RingPort delivers frames through drain()")

    def close(self) -> None:
        try:
            self._ring.release()
            self._mmap.close()
        except BufferError:
            pass                            # a frame view still alive: the GC unmaps later
        super().close()
