"""EV events of one endpoint for the controller (pure: time is passed in).

OCP mrc_ctl.h (struct mrc_ctl_ev_event, mrc_ctl_poll_ev_event): the NIC generates an EV event for
every EV state change its profile's event mask monitors, into an EV event queue the controller
polls; an event carries `drop_count`, the events dropped between the previous delivered event and
this one. Here every forward EV state change of the endpoint's QPs is offered to an EvEventQueue;
it keeps at most `capacity` undelivered events and admits at most `rate_per_s` per second (a
token bucket of `burst` events), so a path that flaps cannot flood the controller; what it
refuses is counted into the next admitted event's drop_count. The endpoint's control socket
serves `poll` ("ev_events"); the run's path monitor forwards them to the controller
(emulation/network/path_monitor.py).
"""
from __future__ import annotations

from collections import deque

# Events admitted per second of the world the endpoint runs in (the endpoint passes its
# ev_event_rate_per_s, a rate the time scale divides by k, so the limit holds in emulated time).
EV_EVENT_RATE_PER_S = 50.0
# keys of an ev_state log event that are the log's, not the EV's
NOT_EV_FIELDS = frozenset({"event", "host", "direction"})


class EvEventQueue:
    """Bounded, rate-limited queue of EV state-change events with mrc_ctl.h drop counts."""

    def __init__(self, capacity: int = 256, rate_per_s: float = EV_EVENT_RATE_PER_S, burst: int = 50):
        if capacity < 1 or rate_per_s <= 0 or burst < 1:
            raise ValueError(f"EV event queue: capacity and burst must be >= 1 and rate_per_s "
                             f"> 0, got {capacity}, {burst}, {rate_per_s}")
        self.capacity = capacity
        self.rate_per_s = float(rate_per_s)
        self.burst = float(burst)
        self.tokens = float(burst)
        self.stamp_ns: int | None = None
        self.pending: deque[dict] = deque()
        self.dropped = 0              # refused since the last admitted event
        self.dropped_total = 0

    def push(self, event: dict, now_ns: int) -> bool:
        """Offer one ev_state event; True if admitted."""
        if self.stamp_ns is not None and now_ns > self.stamp_ns:
            self.tokens = min(self.burst,
                              self.tokens + (now_ns - self.stamp_ns) * self.rate_per_s / 1e9)
        if self.stamp_ns is None or now_ns > self.stamp_ns:
            self.stamp_ns = now_ns
        if self.tokens < 1 or len(self.pending) >= self.capacity:
            self.dropped += 1
            self.dropped_total += 1
            return False
        self.tokens -= 1
        out = {k: v for k, v in event.items() if k not in NOT_EV_FIELDS}
        out["drop_count"] = self.dropped
        self.dropped = 0
        self.pending.append(out)
        return True

    def poll(self, max_entries: int | None = None) -> list[dict]:
        """The oldest undelivered events (all, or at most max_entries), removed from the queue."""
        n = len(self.pending) if max_entries is None else min(max_entries, len(self.pending))
        return [self.pending.popleft() for _ in range(n)]
