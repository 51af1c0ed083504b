"""Test doubles for the endpoint's NIC ports (no sockets, no root): ports that record, ports
joined by in-memory wires, a fake switch that delivers frames by their destination address, and
real endpoints built on them."""
from __future__ import annotations

import os
from collections import deque

from model.topology import FabricSpec, Topology, ev_plane, ev_spine
from traffic.core.codec import Codec, DecodeError
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import EndpointConfig
from traffic.core.messages import DataPacket


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


def endpoints(tmp_path, port_rate_mbit=400.0, spec=None):
    """Two endpoints, hosts 0 and 2 of `spec` (default: the default fabric), joined by
    in-memory wires: (endpoint 0, endpoint 2, host 0's ports, host 2's ports)."""
    spec = spec or FabricSpec()
    a_ports, b_ports = wire_pair(spec.planes)
    eps = []
    for host, ports in ((0, a_ports), (2, b_ports)):
        cfg = EndpointConfig.from_dict({
            "host": host, "fabric": spec.to_dict(), "event_log": str(tmp_path / f"h{host}.jsonl"),
            "port_rate_mbit": port_rate_mbit, "seed": host + 1})
        eps.append(Endpoint(cfg, ports=ports))
    return eps[0], eps[1], a_ports, b_ports


def data_frame(codec, psn, opcode, ev, payload=b"d" * 64):
    """A data frame from host 2's QP 0x200 to host 0's QP 0x100 on plane 0."""
    pkt = DataPacket(dest_qp=0x100, psn=psn, opcode=opcode, msn=0, va=psn * len(payload),
                     rkey=0x42, dma_len=10 * len(payload), payload=payload, timestamp=1,
                     ev=ev)
    return codec.encoder(2, 0, 0, "srv6").encode(pkt, ev=ev)


def arrive(port, frame):
    port.inject(frame)
    os.write(port._w, b"x")


class FakeSwitch:
    """Delivers each frame to the port of its destination host on the same plane."""

    def __init__(self, spec):
        self.topo = Topology(spec)
        self.codec = Codec(self.topo)
        self.ports = {}
        self.blackhole = None         # (plane, spine): cross-group frames on it vanish
        self.dropped = 0

    def port(self, host, plane):
        p = SwitchPort(self, host, plane)
        self.ports[(host, plane)] = p
        return p

    def forward(self, plane, frame):
        try:
            _, meta = self.codec.decode(frame)
        except DecodeError:
            return
        if self.blackhole is not None:
            src_g = self.topo.host(meta.src_host).group
            dst_g = self.topo.host(meta.dst_host).group
            if src_g != dst_g and (ev_plane(meta.ev), ev_spine(meta.ev)) == self.blackhole:
                self.dropped += 1
                return
        dst = self.ports.get((meta.dst_host, plane))
        if dst is not None:
            dst.deliver(frame)


class SwitchPort(FakePort):
    def __init__(self, switch, host, plane):
        super().__init__(plane)
        self.switch = switch
        self.inbox = deque()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)

    def deliver(self, frame):
        self.inbox.append(frame)
        try:
            os.write(self._w, b"x")
        except OSError:           # full, or the rank already closed its endpoint
            pass

    def send(self, frame):
        self.switch.forward(self.plane, bytes(frame))
        return True

    def recv(self):
        try:
            frame = self.inbox.popleft()
        except IndexError:
            return 0
        try:
            os.read(self._r, 1)
        except BlockingIOError:
            pass
        self.buf[:len(frame)] = frame
        return len(frame)
