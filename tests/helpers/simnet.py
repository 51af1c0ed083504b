"""Simulated multi-plane network for unit tests of the pure transport (no sockets, fake clock).

P planes x S spines; a packet's path is the (plane, spine) of the EV it travels on (DataPacket.ev,
or path_ev of SACK/NACK/probe). Per-path faults: random loss, black hole, ECN CE marking, trimming
(optionally at the last hop); whole-plane silent failure; global random loss, duplication and
per-packet delay jitter (which reorders packets across and within paths). Two endpoints, "A"
(sender side) and "B" (receiver side); `run()` drives both with a FakeClock, jumping from event to
event, so seconds of simulated time cost only as much as the packets in them.
"""
from __future__ import annotations

import dataclasses
import heapq
import random
from collections import Counter
from dataclasses import dataclass

from model.topology import ev_plane, ev_spine
from traffic.core.clock import FakeClock
from traffic.core.messages import DataPacket, Nack, Probe, Sack
from traffic.core.reliability import answer_probe


@dataclass
class PathFault:
    loss: float = 0.0            # probability a packet on this path is dropped (both directions)
    blackhole: bool = False      # every packet dropped, silently
    blackhole_to: str | None = None  # drop only what travels towards this end ("A" or "B")
    ecn: float = 0.0             # probability a data packet gets CE
    trim: float = 0.0            # probability a data packet is trimmed (payload cut)
    trim_lasthop: bool = False   # trims happen at the last hop
    # The emulated fabric's CPU-starved userspace switches hold some packets far longer than the
    # queue bound (before the egress trimmer): a trimmed header reaches the receiver this much
    # later than its path's normal delay; with probability `late`, a data packet arrives
    # `late_ns` late (neither holds back the packets behind it).
    trim_extra_delay_ns: int = 0
    late: float = 0.0
    late_ns: int = 0


def count_data(net: "SimNet", key) -> Counter:
    """From now on, count the data packets `net` is given to carry, by key(packet)."""
    counts: Counter = Counter()
    send = net.send

    def counting_send(now_ns, msg, plane, dst):
        if isinstance(msg, DataPacket):
            counts[key(msg)] += 1
        send(now_ns, msg, plane, dst)

    net.send = counting_send
    return counts


def blackhole_step(net: "SimNet", path: tuple[int, int], at_ns: int,
                   repair_after_ns: int | None = None):
    """An on_step hook for Harness.run: black-holes `path` (plane, spine) from at_ns on, and
    repairs it repair_after_ns later (never, for None)."""
    def on_step(now_ns: int) -> None:
        broken = now_ns >= at_ns and (repair_after_ns is None or now_ns < at_ns + repair_after_ns)
        net.path(*path).blackhole = broken
    return on_step


class SimNet:
    def __init__(self, planes: int = 2, spines: int = 4, seed: int = 1,
                 one_way_ns: int = 500_000, jitter_ns: int = 20_000, loss: float = 0.0,
                 dup: float = 0.0, fifo_paths: bool = True):
        self.planes = planes
        self.spines = spines
        self.rng = random.Random(seed)
        self.one_way_ns = one_way_ns
        self.jitter_ns = jitter_ns
        self.loss = loss
        self.dup = dup
        self.fifo_paths = fifo_paths    # a real path is FIFO: jitter only reorders across paths
        self._last_arrival: dict[tuple, int] = {}
        self.faults: dict[tuple[int, int], PathFault] = {}
        self.failed_planes: set[int] = set()
        self._queue: list = []
        self._seq = 0
        self.stats = {"sent": 0, "dropped": 0, "delivered": 0, "duplicated": 0,
                      "ecn_marked": 0, "trimmed": 0}
        self.path_counts: dict[tuple[int, int], int] = {}

    def path(self, plane: int, spine: int) -> PathFault:
        return self.faults.setdefault((plane, spine), PathFault())

    @staticmethod
    def path_ev_of(msg) -> int:
        return msg.ev if isinstance(msg, DataPacket) else msg.path_ev

    def send(self, now_ns: int, msg, plane: int, dst: str) -> None:
        ev = self.path_ev_of(msg)
        if ev_plane(ev) != plane:
            raise AssertionError(f"{type(msg).__name__} on plane {plane} but its EV {ev:#x} "
                                 f"says plane {ev_plane(ev)}")
        spine = ev_spine(ev)
        if spine >= self.spines or plane >= self.planes:
            raise AssertionError(f"EV {ev:#x} names a path outside the fabric")
        self.stats["sent"] += 1
        key = (plane, spine)
        self.path_counts[key] = self.path_counts.get(key, 0) + 1
        fault = self.faults.get(key)
        if plane in self.failed_planes or (fault is not None and (
                fault.blackhole or fault.blackhole_to == dst)):
            self.stats["dropped"] += 1
            return
        if self.rng.random() < self.loss or (fault is not None and self.rng.random() < fault.loss):
            self.stats["dropped"] += 1
            return
        if isinstance(msg, DataPacket) and fault is not None:
            if fault.ecn and self.rng.random() < fault.ecn:
                msg = dataclasses.replace(msg, ecn_ce=True)
                self.stats["ecn_marked"] += 1
            if fault.trim and self.rng.random() < fault.trim:
                msg = dataclasses.replace(msg, payload=b"", trimmed=True,
                                          trim_lasthop=fault.trim_lasthop)
                self.stats["trimmed"] += 1
        extra = 0
        if isinstance(msg, DataPacket) and fault is not None:
            if msg.trimmed:
                extra = fault.trim_extra_delay_ns
            elif fault.late and self.rng.random() < fault.late:
                extra = fault.late_ns
                self.stats["late"] = self.stats.get("late", 0) + 1
        copies = 2 if self.dup and self.rng.random() < self.dup else 1
        if copies == 2:
            self.stats["duplicated"] += 1
        for _ in range(copies):
            t = now_ns + self.one_way_ns + int(self.rng.random() * self.jitter_ns)
            if self.fifo_paths:
                t = max(t, self._last_arrival.get((key, dst), 0))
                self._last_arrival[(key, dst)] = t
            t += extra
            self._seq += 1
            heapq.heappush(self._queue, (t, self._seq, dst, msg, plane))

    def next_time(self) -> int | None:
        return self._queue[0][0] if self._queue else None

    def pop_due(self, now_ns: int):
        while self._queue and self._queue[0][0] <= now_ns:
            t, _, dst, msg, plane = heapq.heappop(self._queue)
            self.stats["delivered"] += 1
            yield dst, msg, plane


def run(net: SimNet, clock: FakeClock, sender, receiver, until_ns: int, done=None,
        on_step=None) -> None:
    """Drive sender (at A) and receiver (at B) over `net` until done() or until_ns."""
    same_time = 0
    last = -1
    while clock.now_ns <= until_ns:
        now = clock.now_ns
        if on_step is not None:
            on_step(now)
        for msg, plane in sender.poll(now):
            net.send(now, msg, plane, "B")
        for msg, plane in receiver.poll(now):
            net.send(now, msg, plane, "A")
        for dst, msg, plane in net.pop_due(now):
            if dst == "B":
                if isinstance(msg, DataPacket):
                    for resp, rplane in receiver.on_data(msg, now, plane):
                        net.send(now, resp, rplane, "A")
                elif isinstance(msg, Probe) and not msg.response:
                    resp, rplane = answer_probe(msg, receiver.port_status)
                    net.send(now, resp, rplane, "A")
                elif isinstance(msg, Probe):
                    receiver.on_probe_response(msg, now)
            else:
                if isinstance(msg, Sack):
                    sender.on_sack(msg, now)
                elif isinstance(msg, Nack):
                    sender.on_nack(msg, now)
                elif isinstance(msg, Probe) and not msg.response:
                    resp, rplane = answer_probe(msg, sender.local_port_status)
                    net.send(now, resp, rplane, "B")
                elif isinstance(msg, Probe):
                    sender.on_probe_response(msg, now)
        if done is not None and done():
            return
        cands = [c for c in (net.next_time(), sender.next_deadline(now),
                             receiver.next_deadline(now)) if c is not None]
        if not cands:
            return
        nxt = max(min(cands), now)
        if nxt == last:
            same_time += 1
            if same_time > 10_000:
                raise AssertionError(f"simulation stuck at t={nxt} ns")
        else:
            same_time = 0
        last = nxt
        clock.advance_to(nxt)


class Harness:
    """One sender QP at A and one receiver QP at B over a SimNet, with a shared event list."""

    def __init__(self, net: SimNet, cfg=None, seed: int = 7, start_ns: int = 1_000_000_000,
                 sender_cls=None, receiver_cls=None):
        from traffic.core.evs import PathInfo
        from traffic.core.reliability import MemoryRegistry, MRCConfig, ReceiverQP, SenderQP
        self.net = net
        self.cfg = cfg or MRCConfig()
        self.clock = FakeClock(start_ns)
        self.events: list[dict] = []
        self.paths = PathInfo(tuple(range(net.planes)), net.spines)
        self.registry = MemoryRegistry()
        sender_cls = sender_cls or SenderQP
        receiver_cls = receiver_cls or ReceiverQP
        self.sender = sender_cls(0x11, 0x22, self.cfg, self.paths, random.Random(seed),
                                 self.events.append)
        self.receiver = receiver_cls(0x22, 0x11, self.cfg, self.paths, random.Random(seed + 1),
                                     self.registry, self.events.append)
        self.data_rng = random.Random(seed + 2)

    def post(self, sizes, imm: bool = True):
        """Post one WRITE per size into one fresh receiver region; returns (expected, region)."""
        total = sum(sizes)
        region = self.registry.register(bytearray(total))
        expected = bytearray(self.data_rng.randbytes(total))
        off = 0
        for i, n in enumerate(sizes):
            self.sender.post_write(memoryview(expected)[off:off + n], region.va + off,
                                   region.rkey, imm=(0x1000 + i) if imm else None)
            off += n
        return bytes(expected), region

    def transfer(self, sizes, until_ns: int = 20_000_000_000, on_step=None,
                 imm: bool = True) -> bytes:
        """post(sizes), run until the sender is idle, and check every byte arrived with no QP
        error; returns what was sent."""
        expected, region = self.post(sizes, imm=imm)
        self.run_until_idle(until_ns, on_step=on_step)
        assert self.sender.error is None, self.sender.error
        assert self.sender.idle
        assert bytes(region.buf) == expected                      # every byte in place
        return expected

    def run(self, until_ns: int, done=None, on_step=None) -> None:
        run(self.net, self.clock, self.sender, self.receiver, self.clock.now_ns + until_ns,
            done=done, on_step=on_step)

    def run_until_idle(self, until_ns: int = 20_000_000_000, on_step=None) -> None:
        self.run(until_ns, done=lambda: self.sender.idle or self.sender.error is not None,
                 on_step=on_step)

    def events_of(self, name: str, **match) -> list[dict]:
        return [e for e in self.events if e["event"] == name
                and all(e.get(k) == v for k, v in match.items())]
