"""EvEventQueue (traffic/core/ev_events.py): OCP mrc_ctl.h's EV event queue, bounded and rate-limited,
with drop counts; values by hand."""
import pytest

from model.events import Event
from traffic.core.ev_events import EvEventQueue

MS = 1_000_000
# mrc_ctl.h enum mrc_ctl_ev_state: GOOD = 1 << 0, ASSUMED_BAD = 1 << 1, DENIED = 1 << 2
GOOD, ASSUMED_BAD, DENIED = 1, 2, 4
BOTH = GOOD | ASSUMED_BAD


def event(i):
    return {"t_ns": i, "event": Event.EV_STATE, "qp": 7, "ev": 100 + i, "plane": 0, "old": "GOOD",
            "new": "ASSUMED_BAD", "reason": "timeout", "host": "h0"}


def test_events_are_delivered_in_order_with_their_fields():
    q = EvEventQueue(event_mask=BOTH)
    assert q.push(event(1), 0) and q.push(event(2), 0)
    assert q.poll() == [
        {"t_ns": 1, "qp": 7, "ev": 101, "plane": 0, "old": "GOOD", "new": "ASSUMED_BAD",
         "reason": "timeout", "state": ASSUMED_BAD, "drop_count": 0},
        {"t_ns": 2, "qp": 7, "ev": 102, "plane": 0, "old": "GOOD", "new": "ASSUMED_BAD",
         "reason": "timeout", "state": ASSUMED_BAD, "drop_count": 0}]
    assert q.poll() == []


def test_the_rate_limit_drops_and_the_next_admitted_event_counts_them():
    """Burst 3, 10 events/s: five events at t = 0 -> three admitted, two dropped. At 99 ms
    0.99 token has come back: dropped too. At 200 ms 2.0 tokens: admitted, drop_count 3."""
    q = EvEventQueue(rate_per_s=10, burst=3, event_mask=BOTH)
    assert [q.push(event(i), 0) for i in range(5)] == [True, True, True, False, False]
    assert q.push(event(5), 99 * MS) is False           # 0.99 token: not yet
    assert q.push(event(6), 200 * MS) is True           # 0.99 + 1.01 tokens
    got = q.poll()
    assert [e["ev"] for e in got] == [100, 101, 102, 106]
    assert [e["drop_count"] for e in got] == [0, 0, 0, 3]
    assert q.dropped_total == 3


def test_a_full_queue_drops_until_polled():
    q = EvEventQueue(capacity=2, rate_per_s=1e6, burst=100, event_mask=BOTH)
    assert [q.push(event(i), i) for i in range(4)] == [True, True, False, False]
    assert [e["ev"] for e in q.poll(1)] == [100]
    assert q.push(event(9), 10) is True
    assert [(e["ev"], e["drop_count"]) for e in q.poll()] == [(101, 0), (109, 2)]


def test_bad_parameters_are_refused():
    for kw in ({"capacity": 0}, {"rate_per_s": 0}, {"burst": 0}):
        with pytest.raises(ValueError, match="EV event queue"):
            EvEventQueue(**kw)


def change(new, old="GOOD", ev=1):
    return {"t_ns": 0, "qp": 7, "ev": ev, "plane": 0, "old": old, "new": new, "reason": "r"}


def test_nothing_is_generated_before_a_controller_subscribes():
    q = EvEventQueue()
    assert q.push(change("ASSUMED_BAD"), 0) is False
    assert q.poll() == [] and q.dropped_total == 0      # not generated, so not dropped either
    assert q.subscribe(BOTH) == BOTH
    assert q.push(change("ASSUMED_BAD"), 0) is True


def test_only_changes_into_monitored_states_are_events():
    """mrc_ctl.h: an event for every state change that matches the monitored states of the
    profile's mask. ASSUMED_BAD only: GOOD -> ASSUMED_BAD is one, the way back is not; a DENIED
    change never is; a record that changes no state (GOOD -> GOOD) is no state change."""
    q = EvEventQueue(event_mask=ASSUMED_BAD)
    got = [q.push(change("ASSUMED_BAD"), 0), q.push(change("GOOD", old="ASSUMED_BAD"), 0),
           q.push(change("DENIED"), 0), q.push(change("GOOD", old="GOOD"), 0)]
    assert got == [True, False, False, False]
    q.subscribe(GOOD)
    assert q.push(change("GOOD", old="ASSUMED_BAD"), 0) is True
    assert [e["state"] for e in q.poll()] == [ASSUMED_BAD, GOOD]


def test_a_mask_the_header_does_not_support_is_refused_by_name():
    q = EvEventQueue()
    for bad in (DENIED, BOTH | DENIED, 1 << 31):
        with pytest.raises(ValueError, match="only GOOD .* and ASSUMED_BAD .* can be monitored"):
            q.subscribe(bad)
    for bad in (-1, True, "3", None):
        with pytest.raises(ValueError, match="non-negative integer"):
            q.subscribe(bad)
    assert q.event_mask == 0
