"""TLS sockets for the OpenFlow channel that one thread at a time may use.

os-ken's native hub (its default) gives every switch connection two threads on one socket: a
receive loop and a send loop. Over TLS both then drive one OpenSSL connection at once, which
OpenSSL does not allow (an SSL object is not safe for concurrent use); the receive loop then
now and then sees a spurious end of stream, closes the connection, and the switch reconnects
1-2 s later, so a request in flight gets no reply. This socket class waits for data outside a
per-connection lock and reads and writes inside it, so the two loops never overlap in OpenSSL.
A record that has begun to arrive completes within microseconds on the loopback, so a read holds
the lock only briefly.

The listener's side of the handshake is bounded too (os-ken's StreamServer handshakes in a thread
per accepted connection, with no timeout): at most MAX_PENDING_HANDSHAKES run at once (one more
is closed at once) and each has HANDSHAKE_TIMEOUT_S to finish, so idle connections that never
say a word cannot pile up threads until real switches' handshakes starve. Only the fabric's
switches connect (over the loopback, a handful at a time), so these bounds never bind for them.
A peer is then taken only if its certificate names the switch role (SWITCH_CN): the controller's
own certificate is signed by the same CA and must not pass as a switch.
"""
from __future__ import annotations

import select
import socket
import ssl
import threading
import time

SWITCH_CN = "mrclab switch"            # the subject CN of the switches' certificate
CONTROLLER_CN = "mrclab controller"    # ... and of the controller's
HANDSHAKE_TIMEOUT_S = 5.0
MAX_PENDING_HANDSHAKES = 64
_pending = threading.BoundedSemaphore(MAX_PENDING_HANDSHAKES)


def peer_common_name(cert: dict | None) -> str | None:
    """The subject CN of a certificate as ssl.SSLSocket.getpeercert() gives it, or None."""
    for rdn in (cert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return value
    return None


class SerializedSSLSocket(ssl.SSLSocket):
    """ssl.SSLSocket whose reads and writes never run concurrently, and whose server-side
    handshake is bounded in time and number and, when `peer_cn` is set, takes only a peer whose
    certificate has that CN (module docstring)."""

    peer_cn: str | None = None

    def do_handshake(self, block=False):
        if not self.server_side:
            return super().do_handshake(block)
        if not _pending.acquire(blocking=False):
            raise ssl.SSLError(f"more than {MAX_PENDING_HANDSHAKES} TLS handshakes in progress; "
                               f"connection refused")
        # CPython's do_handshake takes the socket timeout as a deadline for the whole handshake
        # (not per read), so a peer trickling a byte now and then does not stretch it
        timeout = self.gettimeout()
        try:
            self.settimeout(HANDSHAKE_TIMEOUT_S if timeout is None
                            else min(timeout, HANDSHAKE_TIMEOUT_S))
            super().do_handshake(block)
        finally:
            self.settimeout(timeout)
            _pending.release()
        if self.peer_cn is not None:
            cn = peer_common_name(self.getpeercert())
            if cn != self.peer_cn:
                raise ssl.SSLError(f"peer certificate CN {str(cn)[:80]!r} is not "
                                   f"{self.peer_cn!r}; connection refused")

    @property
    def _io_lock(self) -> threading.RLock:
        # re-entrant: SSLSocket.sendall writes through self.send
        lock = self.__dict__.get("_serialized_io_lock")
        if lock is None:
            lock = self.__dict__.setdefault("_serialized_io_lock", threading.RLock())
        return lock

    def _wait_readable(self, timeout: float | None) -> None:
        """Block until the TCP socket has bytes, outside the lock; socket.timeout as recv would."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._io_lock:
                if self._sslobj is None or self.pending():
                    return
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([self], [], [], left)
            if readable:
                return
            if deadline is not None and time.monotonic() >= deadline:
                raise socket.timeout("timed out")

    def recv(self, buflen=1024, flags=0):
        self._wait_readable(self.gettimeout())
        with self._io_lock:
            return super().recv(buflen, flags)

    def send(self, data, flags=0):
        with self._io_lock:
            return super().send(data, flags)

    def sendall(self, data, flags=0):
        with self._io_lock:
            return super().sendall(data, flags)


class SwitchOnlySSLSocket(SerializedSSLSocket):
    """The OpenFlow listener's socket: a peer is taken only with the switches' certificate."""
    peer_cn = SWITCH_CN


def serialize_tls_sockets() -> None:
    """Make every TLS socket this process accepts a SwitchOnlySSLSocket. os-ken builds its own
    SSLContext for the OpenFlow listener, so the class is set where every context reads it; the
    controller process has no other TLS socket."""
    ssl.SSLContext.sslsocket_class = SwitchOnlySSLSocket
