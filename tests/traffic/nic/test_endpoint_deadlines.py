"""The endpoint keeps each QP's next deadline between loop turns (traffic/core/deadline_queue.py) and
recomputes it only after something happened to the QP. Driven by a fake clock: a timer that
moves earlier or later is served at its new time, a QP nothing happens to is still served at its
deadline, costs no recomputation per turn, and over a lossy run no kept deadline is ever later
than what the QP itself would answer."""
import heapq
import os
import random

import pytest

from model.topology import FabricSpec, Topology, make_ev
from tests.helpers.endpoint_fakes import FakePort, WirePort, arrive, data_frame
from traffic.core.clock import FakeClock
from traffic.core.codec import Codec
from traffic.core.deadline_queue import DeadlineQueue
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import EndpointConfig, LatenessHistogram
from traffic.core.messages import DataPacket, Opcode, Sack

pytestmark = pytest.mark.core

SPEC = FabricSpec()
MS = 1_000_000
RTO_NS = 40 * MS            # fixed base RTO: the first timeout of a packet is send time + 40 ms
ACK_DELAY_NS = 3 * MS       # a coalesced SACK leaves 3 ms after the first unacked packet
FIXED_TIMERS = {"rto_ns": RTO_NS, "ack_delay_ns": ACK_DELAY_NS}


# ---------------------------------------------------------------- the queue alone

class Owner:
    """A timer owner whose deadline the test sets; counts how often it was asked."""

    def __init__(self, deadline=None):
        self.deadline = deadline
        self.asked = 0


def queue():
    def deadline_of(owner, now):
        owner.asked += 1
        return owner.deadline
    return DeadlineQueue(deadline_of)


def test_queue_serves_a_deadline_moved_earlier_at_its_new_time():
    q, o = queue(), Owner(100)
    q.changed(o)
    assert q.pop_due(50) == []
    o.deadline = 60
    q.changed(o)
    assert q.pop_due(59) == []
    assert q.pop_due(60) == [o]
    o.deadline = None                       # served: nothing more to do
    assert q.pop_due(100) == []             # the superseded entry at 100 is not served


def test_queue_does_not_serve_a_deadline_moved_later_at_its_old_time():
    q, o = queue(), Owner(100)
    q.changed(o)
    o.deadline = 300
    q.changed(o)
    assert q.earliest(0) == 300
    assert q.pop_due(299) == []
    assert q.pop_due(300) == [o]


def test_queue_asks_an_owner_again_only_after_a_change_or_its_deadline():
    q = queue()
    idle, busy = Owner(10_000), Owner(5)
    q.changed(idle)
    q.changed(busy)
    for now in range(0, 5_000, 10):
        for owner in q.pop_due(now):
            owner.deadline = now + 10       # polled: re-arms
        assert q.earliest(now) == min(busy.deadline, 10_000)
    assert idle.asked == 1
    assert busy.asked > 400
    assert q.pop_due(10_000) == [busy, idle]      # earliest first: busy's is at 5000


def test_queue_serves_a_deadline_set_back_to_an_old_value_once():
    q, o = queue(), Owner(100)
    q.changed(o)
    o.deadline = 200
    q.changed(o)
    q.earliest(0)
    o.deadline = 100
    q.changed(o)
    assert q.pop_due(150) == [o]
    o.deadline = None
    assert q.pop_due(150) == []          # the first entry at 100 is not served a second time
    assert q.earliest(150) is None and len(q) == 0


def test_queue_heap_stays_bounded_while_an_owner_re_arms_every_turn():
    q, o = queue(), Owner()
    for now in range(10_000):
        o.deadline = now + 1_000_000        # far off: never popped, only superseded
        q.changed(o)
        q.refresh(now)
    assert len(q._heap) <= DeadlineQueue._STALE_FACTOR * 1 + 64
    assert q.earliest(10_000) == 9_999 + 1_000_000


# ---------------------------------------------------------------- one endpoint, fake clock

def lone_endpoint(tmp_path, clock):
    """Host 0 with ports that only record what is sent; QPs to host 2."""
    cfg = EndpointConfig.from_dict({"host": 0, "fabric": SPEC.to_dict(), "seed": 1,
                                    "event_log": str(tmp_path / "h0.jsonl")})
    ports = {p: FakePort(p) for p in range(SPEC.planes)}
    return Endpoint(cfg, ports=ports, clock=clock), ports


def sent_messages(ports, codec, since):
    """(plane, message) of every frame sent after the counts in `since` (plane -> count)."""
    out = []
    for plane, port in ports.items():
        for frame in port.sent[since.get(plane, 0):]:
            msg, _ = codec.decode(frame)
            out.append((plane, msg))
    return out


def turn(ep, clock, t_ns):
    clock.advance_to(t_ns)
    ep.run_once(0)


def test_an_untouched_qps_ack_timeout_is_served_on_time_while_others_keep_the_loop_busy(tmp_path):
    clock = FakeClock(1 * MS)
    ep, ports = lone_endpoint(tmp_path, clock)
    codec = Codec(Topology(SPEC))
    ep.create_qp(0x100, 2, 0x200, base_rtt_ns=2 * MS, qp_overrides=FIXED_TIMERS)
    for k in range(8):
        ep.create_qp(0x110 + k, 2, 0x210 + k, base_rtt_ns=2 * MS, qp_overrides=FIXED_TIMERS)
    ep.post_write(0x100, b"x" * 100, 0, 0x42)
    turn(ep, clock, 2 * MS)                 # the packet leaves at 2 ms: timeout at 42 ms
    first = [m for _, m in sent_messages(ports, codec, {}) if isinstance(m, DataPacket)]
    assert [(m.dest_qp, m.retransmit) for m in first] == [(0x200, False)]
    mark = {p: len(port.sent) for p, port in ports.items()}
    retransmitted_at = None
    for t in range(3 * MS, 60 * MS, 500_000):
        ep.post_write(0x110 + t % 8, b"y" * 10, 0, 0x42)   # other QPs: a post every turn
        turn(ep, clock, t)
        mine = [m for _, m in sent_messages(ports, codec, mark)
                if isinstance(m, DataPacket) and m.dest_qp == 0x200]
        if mine and retransmitted_at is None:
            assert [m.retransmit for m in mine] == [True]
            retransmitted_at = t
    assert retransmitted_at == 2 * MS + RTO_NS
    ep.close()


def test_a_timer_moved_earlier_by_arriving_data_is_served_at_its_new_time(tmp_path):
    """QP 0x100's earliest timer is its ACK timeout at 42 ms; data arriving at 5 ms arms a
    delayed SACK for 5 + 3 = 8 ms, which must leave then, not with the timeout."""
    clock = FakeClock(1 * MS)
    ep, ports = lone_endpoint(tmp_path, clock)
    codec = Codec(Topology(SPEC))
    ep.register_mr(bytearray(640), rkey=0x42, va=0)
    ep.create_qp(0x100, 2, 0x200, base_rtt_ns=2 * MS, qp_overrides=FIXED_TIMERS)
    ep.post_write(0x100, b"x" * 100, 0, 0x42)
    turn(ep, clock, 2 * MS)
    turn(ep, clock, 4 * MS)
    assert ep.deadlines.earliest(clock()) == 2 * MS + RTO_NS
    arrive(ports[0], data_frame(codec, 0, Opcode.WRITE_FIRST, make_ev(0, 0, 7)))
    mark = {p: len(port.sent) for p, port in ports.items()}
    turn(ep, clock, 5 * MS)                 # placed, SACK coalesced (ack_every 4, no AckReq)
    sacks_at = {}
    for t in range(5 * MS + 250_000, 12 * MS, 250_000):
        turn(ep, clock, t)
        sacks = [m for _, m in sent_messages(ports, codec, mark) if isinstance(m, Sack)]
        if sacks and not sacks_at:
            sacks_at[t] = sacks
    assert list(sacks_at) == [5 * MS + ACK_DELAY_NS]
    assert [(s.dest_qp, s.cum_psn) for s in sacks_at[5 * MS + ACK_DELAY_NS]] == [(0x200, 1)]
    # no data after it for a frame RTT (12 ms is more): its tail copy left over the other plane
    # (traffic/core/receiver.py), once, without the echoed timestamp
    sent = [(p, m) for p, m in sent_messages(ports, codec, mark) if isinstance(m, Sack)]
    assert [(p, m.cum_psn, m.echo_timestamp) for p, m in sent][1:] == [(1, 1, 0)], sent
    ep.close()


def test_a_timer_moved_later_by_a_sack_is_no_longer_kept(tmp_path):
    """The SACK of the only packet out leaves nothing to time out: the kept deadline at
    42 ms (send time + RTO) goes."""
    clock = FakeClock(1 * MS)
    ep, ports = lone_endpoint(tmp_path, clock)
    codec = Codec(Topology(SPEC))
    ep.create_qp(0x100, 2, 0x200, base_rtt_ns=2 * MS, qp_overrides=FIXED_TIMERS)
    ep.post_write(0x100, b"x" * 100, 0, 0x42)
    turn(ep, clock, 2 * MS)
    (data,) = [m for _, m in sent_messages(ports, codec, {}) if isinstance(m, DataPacket)]
    assert ep.deadlines.earliest(clock()) == 2 * MS + RTO_NS
    sack = Sack(dest_qp=0x100, cum_psn=1, ev=data.ev, echo_timestamp=data.timestamp,
                port_status=0b11, path_ev=data.ev)
    arrive(ports[0], codec.encoder(2, 0, 0, "srv6").encode(sack, ev=make_ev(0, 0, 9)))
    turn(ep, clock, 4 * MS)
    assert ep.qps[0x100].send_completions
    earliest = ep.deadlines.earliest(clock())
    assert earliest is None or earliest > 2 * MS + RTO_NS
    ep.close()


def test_idle_qps_are_not_asked_for_their_deadline_on_every_turn(tmp_path):
    clock = FakeClock(1 * MS)
    ep, ports = lone_endpoint(tmp_path, clock)
    asked = {}
    for k in range(20):
        qp = ep.create_qp(0x100 + k, 2, 0x200 + k, base_rtt_ns=2 * MS)
        compute = qp.next_deadline

        def counted(now, qpn=qp.qpn, compute=compute):
            asked[qpn] = asked.get(qpn, 0) + 1
            return compute(now)
        qp.next_deadline = counted
    busy = 0x100
    for i in range(200):
        ep.post_write(busy, b"z" * 10, 0, 0x42)
        turn(ep, clock, 2 * MS + i * 100_000)
    idle_asks = [asked.get(0x100 + k, 0) for k in range(1, 20)]
    assert idle_asks == [1] * 19            # once, after its creation
    assert asked[busy] >= 200
    ep.close()


# ---------------------------------------------------------------- two endpoints, lossy wires

class LossyNet:
    """Frames cross after 300-700 us (per frame, so paths reorder), 5% are lost."""

    def __init__(self, clock, seed):
        self.clock = clock
        self.rng = random.Random(seed)
        self.in_flight = []
        self.count = 0

    def send(self, port, frame):
        if self.rng.random() < 0.05:
            return
        self.count += 1
        at = self.clock() + self.rng.randrange(300_000, 700_000)
        heapq.heappush(self.in_flight, (at, self.count, port, bytes(frame)))

    def deliver(self):
        while self.in_flight and self.in_flight[0][0] <= self.clock():
            _, _, port, frame = heapq.heappop(self.in_flight)
            port.inbox.append(frame)
            os.write(port._w, b"x")


class LossyPort(WirePort):
    def __init__(self, plane, net):
        super().__init__(plane)
        self.net = net
        os.set_blocking(self._r, False)

    def send(self, frame) -> bool:
        self.net.send(self.peer, frame)
        return True


def assert_kept_deadlines_not_late(ep, now):
    """Every QP whose deadline the endpoint kept (none changed since): the kept one is never
    later than the QP's own answer now, and a QP kept without one still has none."""
    q = ep.deadlines
    for qp in ep.qps.values():
        if q.changed_since_kept(qp):
            continue
        fresh, kept = qp.next_deadline(now), q.kept(qp)
        if fresh is None:
            continue
        assert kept is not None and kept <= fresh, (hex(qp.qpn), now, kept, fresh)


def test_over_a_lossy_run_no_kept_deadline_is_later_than_the_qps_own(tmp_path):
    clock = FakeClock(1 * MS)
    net = LossyNet(clock, seed=3)
    a_ports = {p: LossyPort(p, net) for p in range(SPEC.planes)}
    b_ports = {p: LossyPort(p, net) for p in range(SPEC.planes)}
    for p in range(SPEC.planes):
        a_ports[p].peer, b_ports[p].peer = b_ports[p], a_ports[p]
    eps = []
    for host, ports in ((0, a_ports), (2, b_ports)):
        cfg = EndpointConfig.from_dict({"host": host, "fabric": SPEC.to_dict(), "seed": host + 1,
                                        "port_rate_mbit": 400.0,
                                        "event_log": str(tmp_path / f"h{host}.jsonl")})
        eps.append(Endpoint(cfg, ports=ports, clock=clock))
    a, b = eps
    a_dst, b_dst = bytearray(120_000), bytearray(120_000)
    a.register_mr(a_dst, rkey=0x41, va=0)
    b.register_mr(b_dst, rkey=0x42, va=0)
    for k in range(6):                      # QPs 0x100..0x105 at a, 0x200.. at b; 4 stay idle
        a.create_qp(0x100 + k, 2, 0x200 + k, base_rtt_ns=2 * MS)
        b.create_qp(0x200 + k, 0, 0x100 + k, base_rtt_ns=2 * MS)
    rng = random.Random(4)
    data = {k: rng.randbytes(60_000) for k in range(3)}
    a.post_write(0x100, data[0], 0, 0x42, imm=1)
    a.post_write(0x101, data[1], 60_000, 0x42, imm=2)
    b.post_write(0x200, data[2], 0, 0x41, imm=3)

    def done():
        return (b.qps[0x200].recv_completions and b.qps[0x201].recv_completions
                and a.qps[0x100].recv_completions)
    t = clock()
    checks = 0
    while not done():
        assert t < 5_000 * MS, "the transfers did not finish in 5 s of fake time"
        t += 100_000
        clock.advance_to(t)
        net.deliver()
        for ep in (a, b):
            ep.run_once(0)
            assert_kept_deadlines_not_late(ep, t)
            checks += 1
    assert bytes(b_dst[:60_000]) == data[0] and bytes(b_dst[60_000:]) == data[1]
    assert bytes(a_dst[:60_000]) == data[2]
    retransmitted = sum(qp.sender.counters["retransmitted_packets"]
                        for ep in (a, b) for qp in ep.qps.values())
    assert retransmitted > 0                # the loss did make timers move
    a.close()
    b.close()


def test_deadline_queue_records_how_late_each_owner_is_served():
    hist = LatenessHistogram()
    q = DeadlineQueue(lambda owner, now: {"a": 100, "b": 300}[owner])
    q.lateness = hist
    q.changed("a")
    q.changed("b")
    assert q.earliest(50) == 100            # both deadlines known at 50, ahead of them
    assert q.pop_due(1100) == ["a", "b"]
    # a is 1000 ns late (bucket 35), b 800 ns (bit length 10, next bits 10 -> bucket 34)
    assert hist.sparse() == [[34, 1], [35, 1]] and hist.samples == 2


def test_a_deadline_found_already_past_is_late_only_from_when_it_was_found():
    """An owner with nothing to do (None) that comes back with a deadline long past, as a QP
    whose port was down comes back with the probe it had scheduled before: the loop learns of
    it only at the change, so its lateness counts from there, not from the old deadline."""
    hist = LatenessHistogram()
    deadlines = {"qp": None, "other": 5_000}
    q = DeadlineQueue(lambda owner, now: deadlines[owner])
    q.lateness = hist
    q.changed("qp")
    q.changed("other")
    assert q.earliest(100) == 5_000         # the qp has nothing to do
    deadlines["qp"] = 200                   # its port is back: its probe was due at 200
    q.changed("qp")
    assert q.earliest(800_000) == 200       # found at 800,000: already past
    assert q.pop_due(800_300) == ["qp", "other"]
    # qp: 800,300 - 800,000 = 300 ns late (bit length 9, next bits 00 -> bucket 28), not the
    # 800,100 ns since its deadline; other: 800,300 - 5,000 = 795,300 ns late (bit length 20,
    # next bits 10 -> bucket 74)
    assert hist.sparse() == [[28, 1], [74, 1]]
