"""Test doubles for the endpoint's NIC ports (no sockets, no root)."""
from __future__ import annotations

import os


class FakePort:
    """Records sent frames; frames to receive are pushed with `inject`."""

    def __init__(self, plane: int, up: bool = True):
        self.plane = plane
        self.up = up
        self.sent: list[bytes] = []
        self.inbox: list[bytes] = []
        self.buf = bytearray(16384)
        self.view = memoryview(self.buf)
        self._r, self._w = os.pipe()

    def fileno(self) -> int:
        return self._r

    def inject(self, frame: bytes) -> None:
        self.inbox.append(frame)

    def recv(self) -> int:
        if not self.inbox:
            return 0
        frame = self.inbox.pop(0)
        self.buf[:len(frame)] = frame
        return len(frame)

    def send(self, frame) -> bool:
        self.sent.append(bytes(frame))
        return True

    def is_up(self) -> bool:
        return self.up

    def close(self) -> None:
        os.close(self._r)
        os.close(self._w)


class WirePort(FakePort):
    """A port whose sent frames appear at a peer port (optionally dropping some)."""

    def __init__(self, plane: int, up: bool = True):
        super().__init__(plane, up)
        self.peer: "WirePort | None" = None
        self.drop = None          # callable(frame) -> bool

    def send(self, frame) -> bool:
        frame = bytes(frame)
        self.sent_count = getattr(self, "sent_count", 0) + 1
        if not self.up or self.peer is None or not self.peer.up:
            return True
        if self.drop is not None and self.drop(frame):
            return True
        self.peer.inbox.append(frame)
        os.write(self.peer._w, b"x")
        return True

    def recv(self) -> int:
        n = super().recv()
        if n:
            try:
                os.read(self._r, 1)
            except BlockingIOError:
                pass
        return n


def wire_pair(planes: int):
    a = {p: WirePort(p) for p in range(planes)}
    b = {p: WirePort(p) for p in range(planes)}
    for p in range(planes):
        a[p].peer, b[p].peer = b[p], a[p]
        os.set_blocking(a[p]._r, False)
        os.set_blocking(b[p]._r, False)
    return a, b
