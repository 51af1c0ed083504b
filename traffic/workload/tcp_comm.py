"""TCP baseline transport: kernel TCP sockets between the hosts' NIC addresses.

What a conventional fabric gives a collective without MRC: one TCP connection per (peer, QP),
each pinned to one plane (QP k uses plane k % planes) and, by the ECMP hash of its random
source port, to one path; after a failure it waits for the fabric to reconverge and for TCP's
retransmission timer. Messages are framed (tag u32, length u64); sockets are non-blocking and
wait() drives them with a selector, so many messages to many peers progress concurrently.

Connection setup: every rank listens on each of its endpoints; the higher rank of each pair
connects (so each pair has exactly qps_per_peer connections) and says hello (rank, qp).
"""
from __future__ import annotations

import errno
import selectors
import socket
import struct
import time
from collections import defaultdict, deque

from traffic.workload.comm import Communicator, CommError, CommTimeout, Handle, as_bytes, pending_summary
from traffic.workload.worker_config import WorkerConfig

FRAME = struct.Struct("!IQ")          # tag, payload length
HELLO = struct.Struct("!4sII")        # magic, rank, qp
HELLO_MAGIC = b"MRCT"
TCP_INFO_TOTAL_RETRANS = 100          # offset of tcpi_total_retrans in struct tcp_info (Linux)
RETRYABLE_CONNECT = (errno.ECONNREFUSED, errno.EADDRNOTAVAIL, errno.ENETUNREACH,
                     errno.EHOSTUNREACH, errno.ETIMEDOUT)


class _Conn:
    __slots__ = ("sock", "peer", "qp", "sendq", "header", "header_got", "target", "target_got",
                 "cur_tag", "cur_handle", "writing", "closed")

    def __init__(self, sock: socket.socket, peer: int, qp: int):
        self.sock = sock
        self.peer = peer
        self.qp = qp
        self.sendq: deque = deque()       # [memoryview, offset, handle or None]
        self.header = bytearray(FRAME.size)
        self.header_got = 0
        self.target = None                # memoryview being filled by the current message
        self.target_got = 0
        self.cur_tag = 0
        self.cur_handle = None            # Handle being filled, or None for an unexpected msg
        self.writing = False
        self.closed = False               # the peer closed cleanly at a message boundary


class TCPComm(Communicator):
    """endpoints[rank][plane] = (address, port) of every rank's listening sockets."""

    def __init__(self, rank: int, world_size: int, endpoints: list, qps_per_peer: int = 1,
                 connect_timeout_s: float = 30.0):
        super().__init__(rank, world_size, qps_per_peer)
        if len(endpoints) != world_size or any(not eps for eps in endpoints):
            raise ValueError(f"endpoints must list at least one (addr, port) for each of "
                             f"{world_size} ranks, got {endpoints!r}")
        self.endpoints = [[(str(a), int(p)) for a, p in eps] for eps in endpoints]
        self.sel = selectors.DefaultSelector()
        self.conns: dict[tuple[int, int], _Conn] = {}
        self.posted: dict[tuple[int, int], deque] = defaultdict(deque)
        self.unexpected: dict[tuple[int, int], deque] = defaultdict(deque)
        self._stats = {"rx_bytes": 0, "tx_bytes": 0, "rx_packets": 0, "tx_packets": 0}
        self._listeners: list[socket.socket] = []
        self._closed = False
        try:
            self._connect_all(connect_timeout_s)
        except BaseException:
            self.close()
            raise

    # -- setup

    def _plane_endpoint(self, rank: int, qp: int) -> tuple[str, int]:
        eps = self.endpoints[rank]
        return eps[qp % len(eps)]

    def _connect_all(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        for addr, port in dict.fromkeys(self.endpoints[self.rank]):
            self._listeners.append(self._listen(addr, port, deadline))
        for peer in range(self.rank):
            for qp in range(self.qps_per_peer):
                sock = self._connect(peer, qp, deadline)
                sock.sendall(HELLO.pack(HELLO_MAGIC, self.rank, qp))
                self._add_conn(sock, peer, qp)
        expected = (self.world_size - 1 - self.rank) * self.qps_per_peer
        accepted = 0
        for lst in self._listeners:
            lst.settimeout(0.2)
        while accepted < expected:
            for lst in self._listeners:
                if time.monotonic() > deadline:
                    raise CommTimeout(f"rank {self.rank}: only {accepted} of {expected} incoming "
                                      f"connections after {timeout_s} s")
                try:
                    sock, _ = lst.accept()
                except (TimeoutError, socket.timeout):
                    continue
                sock.settimeout(max(0.1, deadline - time.monotonic()))
                hello = _recv_exact(sock, HELLO.size)
                magic, peer, qp = HELLO.unpack(hello)
                if magic != HELLO_MAGIC or not self.rank < peer < self.world_size \
                        or not 0 <= qp < self.qps_per_peer or (peer, qp) in self.conns:
                    sock.close()
                    raise CommError(f"rank {self.rank}: bad hello {hello!r} from a peer")
                self._add_conn(sock, peer, qp)
                accepted += 1
        for lst in self._listeners:
            lst.close()
        self._listeners = []

    def _listen(self, addr: str, port: int, deadline: float) -> socket.socket:
        family = socket.AF_INET6 if ":" in addr else socket.AF_INET
        while True:
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((addr, port))
                sock.listen(self.world_size * self.qps_per_peer + 8)
                return sock
            except OSError as exc:
                sock.close()
                # a fresh IPv6 address may still be tentative (DAD) for a moment
                if exc.errno != errno.EADDRNOTAVAIL or time.monotonic() > deadline:
                    raise CommError(f"rank {self.rank}: cannot listen on [{addr}]:{port}: {exc}") from exc
                time.sleep(0.1)

    def _connect(self, peer: int, qp: int, deadline: float) -> socket.socket:
        dst = self._plane_endpoint(peer, qp)
        src_addr = self._plane_endpoint(self.rank, qp)[0]
        family = socket.AF_INET6 if ":" in dst[0] else socket.AF_INET
        delay = 0.05
        while True:
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.bind((src_addr, 0))     # leave on this QP's plane
                sock.settimeout(max(0.1, min(5.0, deadline - time.monotonic())))
                sock.connect(dst)
                return sock
            except OSError as exc:
                sock.close()
                retry = exc.errno in RETRYABLE_CONNECT or isinstance(exc, TimeoutError)
                if not retry or time.monotonic() + delay > deadline:
                    raise CommError(f"rank {self.rank}: cannot connect QP {qp} to rank {peer} at "
                                    f"[{dst[0]}]:{dst[1]} from {src_addr}: {exc}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def _add_conn(self, sock: socket.socket, peer: int, qp: int) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        conn = _Conn(sock, peer, qp)
        self.conns[(peer, qp)] = conn
        self.sel.register(sock, selectors.EVENT_READ, conn)

    # -- the interface

    def isend(self, peer, data, tag=0, *, qp=None):
        qp = self._check_args(peer, tag, qp)
        view = as_bytes(data)
        handle = Handle("send", peer, tag, len(view), qp)
        conn = self.conns[(peer, qp)]
        if conn.closed:
            raise CommError(f"rank {self.rank}: cannot send to rank {peer} on QP {qp}: it closed")
        conn.sendq.append([memoryview(FRAME.pack(tag, len(view))), 0, None])
        conn.sendq.append([view, 0, handle])
        self._stats["tx_packets"] += 1
        self._flush(conn)
        return handle

    def irecv(self, peer, nbytes, tag=0, *, qp=None):
        qp = self._check_recv_args(peer, nbytes, tag, qp)
        handle = Handle("recv", peer, tag, nbytes, qp)
        box = self.unexpected.get((peer, tag))
        if box:
            self._complete_recv(handle, box.popleft())
        else:
            self.posted[(peer, tag)].append(handle)
        return handle

    def test(self, handle):
        if not handle.done:
            self._progress(0)
        return handle.done

    def wait(self, handles, timeout_s=None):
        handles = list(handles)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not all(h.done for h in handles):
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise CommTimeout(f"rank {self.rank}: wait timed out after {timeout_s} s; "
                                  f"pending: {pending_summary(handles)}")
            self._progress(0.1 if remaining is None else min(0.1, remaining))
            self._check_dead_peers(handles)

    def stats(self):
        out = dict(self._stats)
        retrans = 0
        for conn in self.conns.values():
            try:
                info = conn.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
                retrans += struct.unpack_from("<I", info, TCP_INFO_TOTAL_RETRANS)[0]
            except OSError:
                pass
        out["retransmits"] = retrans
        return out

    def close(self):
        if self._closed:
            return
        self._closed = True
        for conn in self.conns.values():
            if not conn.closed:
                try:
                    self.sel.unregister(conn.sock)
                except (KeyError, ValueError):
                    pass
            conn.sock.close()
        for lst in self._listeners:
            lst.close()
        self.sel.close()

    # -- progress engine

    def _progress(self, timeout: float) -> None:
        for key, events in self.sel.select(timeout):
            conn = key.data
            if events & selectors.EVENT_READ:
                self._read(conn)
            if events & selectors.EVENT_WRITE:
                self._flush(conn)

    def _fail(self, conn: _Conn, what: str) -> None:
        raise CommError(f"rank {self.rank}: connection QP {conn.qp} to rank {conn.peer} {what}")

    def _flush(self, conn: _Conn) -> None:
        q = conn.sendq
        while q:
            item = q[0]
            view, off, handle = item
            try:
                sent = conn.sock.send(view[off:]) if off < len(view) else 0
            except BlockingIOError:
                break
            except OSError as exc:
                self._fail(conn, f"failed while sending: {exc}")
            off += sent
            if handle is not None:
                self._stats["tx_bytes"] += sent
            if off < len(view):
                item[1] = off
                break
            q.popleft()
            if handle is not None:
                handle.done = True
        want = bool(q)
        if want != conn.writing and not conn.closed:
            conn.writing = want
            mask = selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0)
            self.sel.modify(conn.sock, mask, conn)

    def _read(self, conn: _Conn) -> None:
        while True:
            try:
                if conn.target is None:
                    n = conn.sock.recv_into(memoryview(conn.header)[conn.header_got:])
                else:
                    n = conn.sock.recv_into(conn.target[conn.target_got:]) \
                        if conn.target_got < len(conn.target) else 0
            except BlockingIOError:
                return
            except OSError as exc:
                self._fail(conn, f"failed while receiving: {exc}")
            if conn.target is None:
                if n == 0:
                    if conn.header_got:
                        self._fail(conn, "was closed by the peer in the middle of a header")
                    self._peer_closed(conn)
                    return
                conn.header_got += n
                if conn.header_got < FRAME.size:
                    continue
                conn.header_got = 0
                tag, length = FRAME.unpack(conn.header)
                self._start_message(conn, tag, length)
                if length:
                    continue
            else:
                if n == 0 and conn.target_got < len(conn.target):
                    self._fail(conn, "was closed by the peer")
                conn.target_got += n
                self._stats["rx_bytes"] += n
            if conn.target is not None and conn.target_got == len(conn.target):
                self._finish_message(conn)

    def _peer_closed(self, conn: _Conn) -> None:
        """A peer that finished its work closes cleanly; that is only an error for a receive
        that still expects data from it (checked in wait())."""
        conn.closed = True
        self.sel.unregister(conn.sock)

    def _check_dead_peers(self, handles) -> None:
        for h in handles:
            if h.done:
                continue
            conns = [self.conns[(h.peer, q)] for q in range(self.qps_per_peer)]
            if h.kind == "send" and self.conns[(h.peer, h.qp)].closed:
                raise CommError(f"rank {self.rank}: cannot send {h!r}: rank {h.peer} closed")
            if h.kind == "recv" and all(c.closed for c in conns):
                raise CommError(f"rank {self.rank}: rank {h.peer} closed all connections "
                                f"before sending {h!r}")

    def _start_message(self, conn: _Conn, tag: int, length: int) -> None:
        waiting = self.posted.get((conn.peer, tag))
        handle = waiting.popleft() if waiting else None
        if handle is not None and handle.nbytes != length:
            handle.error = (f"rank {self.rank}: message from {conn.peer} tag {tag} has {length} "
                            f"bytes, receiver expected {handle.nbytes}")
            raise CommError(handle.error)
        conn.cur_tag = tag
        conn.cur_handle = handle
        conn.target = memoryview(bytearray(length))
        conn.target_got = 0

    def _finish_message(self, conn: _Conn) -> None:
        data = conn.target.obj
        handle = conn.cur_handle
        conn.target, conn.cur_handle = None, None
        self._stats["rx_packets"] += 1
        if handle is None:
            waiting = self.posted.get((conn.peer, conn.cur_tag))
            if waiting:
                handle = waiting.popleft()
            else:
                self.unexpected[(conn.peer, conn.cur_tag)].append(data)
                return
        self._complete_recv(handle, data)

    def _complete_recv(self, handle: Handle, data: bytearray) -> None:
        if not handle.complete(self.rank, data):
            raise CommError(handle.error)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise CommError("peer closed the connection during the hello")
        buf += chunk
    return bytes(buf)


def create(transport: str, rank: int, config: WorkerConfig) -> TCPComm:
    """Factory used by traffic.workload.comm.create_communicator: world_size, qps_per_peer and the tcp
    settings (endpoints [rank][plane] -> [addr, port], connect_timeout_s) of the config."""
    if config.tcp is None:
        raise ValueError("worker config for the tcp transport needs tcp.endpoints")
    return TCPComm(rank, config.world_size, config.tcp.endpoints,
                   qps_per_peer=config.qps_per_peer,
                   connect_timeout_s=config.tcp.connect_timeout_s)
