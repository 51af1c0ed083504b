"""The deadline queue (traffic/core/deadline_queue.py) serves an owner that is still due after being
served, at the same deadline: alone, and inside the endpoint loop (traffic/nic/endpoint.py) with a
real QP whose deadline the test pins."""

import pytest

from model.topology import FabricSpec
from tests.helpers.endpoint_fakes import FakePort
from traffic.core.clock import FakeClock
from traffic.core.deadline_queue import DeadlineQueue
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import EndpointConfig

pytestmark = pytest.mark.core

MS = 1_000_000


class Owner:
    def __init__(self, deadline):
        self.deadline = deadline


def test_an_owner_re_armed_at_the_deadline_it_was_served_at_is_served_again():
    q = DeadlineQueue(lambda owner, now: owner.deadline)
    o, other = Owner(100), Owner(500)
    q.changed(o)
    q.changed(other)
    assert q.pop_due(100) == [o]
    # polled, it is still due at 100 (e.g. its pacer had no tokens): the same deadline again
    assert q.earliest(100) == 100
    assert q.pop_due(100) == [o]
    assert q.pop_due(101) == [o]            # and on every turn until its deadline moves
    o.deadline = None
    assert q.pop_due(102) == []
    assert q.earliest(102) == 500


def test_the_endpoint_serves_a_qp_again_when_its_deadline_stays_where_it_was(tmp_path):
    spec = FabricSpec()
    clock = FakeClock(1 * MS)
    cfg = EndpointConfig.from_dict({"host": 0, "fabric": spec.to_dict(), "seed": 1,
                                    "event_log": str(tmp_path / "h0.jsonl")})
    ep = Endpoint(cfg, ports={p: FakePort(p) for p in range(spec.planes)}, clock=clock)
    qp = ep.create_qp(0x100, 2, 0x200, base_rtt_ns=2 * MS)
    pinned = {"at": 5 * MS, "left": 3}      # due at 5 ms for three polls, then nothing
    polled = []
    poll = qp.poll

    def next_deadline(now):
        return pinned["at"] if pinned["left"] else None

    def counted_poll(now):
        polled.append(now)
        pinned["left"] -= 1
        return poll(now)

    qp.next_deadline, qp.poll = next_deadline, counted_poll
    ep.deadlines.changed(qp)
    for t in (2, 4, 5, 5, 6, 7, 8):
        clock.advance_to(t * MS)
        ep.run_once(0)
    assert polled == [5 * MS, 5 * MS, 6 * MS]
    ep.close()
