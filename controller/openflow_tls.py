"""TLS sockets for the OpenFlow channel that one thread at a time may use.

os-ken's native hub (its default) gives every switch connection two threads on one socket: a
receive loop and a send loop. Over TLS both then drive one OpenSSL connection at once, which
OpenSSL does not allow (an SSL object is not safe for concurrent use); the receive loop then
now and then sees a spurious end of stream, closes the connection, and the switch reconnects
1-2 s later, so a request in flight gets no reply. This socket class waits for data outside a
per-connection lock and reads and writes inside it, so the two loops never overlap in OpenSSL.
A record that has begun to arrive completes within microseconds on the loopback, so a read holds
the lock only briefly.
"""
from __future__ import annotations

import select
import socket
import ssl
import threading
import time


class SerializedSSLSocket(ssl.SSLSocket):
    """ssl.SSLSocket whose reads and writes never run concurrently (module docstring)."""

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


def serialize_tls_sockets() -> None:
    """Make every TLS socket this process accepts a SerializedSSLSocket. os-ken builds its own
    SSLContext for the OpenFlow listener, so the class is set where every context reads it; the
    controller process has no other TLS socket."""
    ssl.SSLContext.sslsocket_class = SerializedSSLSocket
