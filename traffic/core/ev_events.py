"""EV events of one endpoint for the controller (pure: time is passed in).

OCP mrc_ctl.h: the NIC generates an EV event (struct mrc_ctl_ev_event) for every EV state change
that matches the monitored states in the EV profile's `ev_event_mask`, into an EV event queue
the controller polls (mrc_ctl_poll_ev_event); "Only MRC_CTL_EV_ASSUMED_BAD and MRC_CTL_EV_GOOD
are supported" in that mask, and an event carries `drop_count`, the events dropped between the
previous delivered event and this one, and (API 1.0.1) `state`, the EV's new state as its
mrc_ctl_ev_state bit. Here:

* nothing is generated until a controller subscribes (`subscribe(mask)`, what
  mrc_ctl_modify_ev_profile with MRC_CTL_EV_PROFILE_EVENT_MASK does); a mask naming DENIED or
  an unknown bit is refused, as the header supports GOOD and ASSUMED_BAD only;
* an EV state change into a monitored state is offered to the queue; a change into another
  state (DENIED, UNKNOWN) or a log record that changes no state (a GOOD backup taking a slot)
  is not an event;
* the queue keeps at most `capacity` undelivered events and admits at most `rate_per_s` per
  second (a token bucket of `burst` events), so a path that flaps cannot flood the controller;
  what it refuses is counted into the next admitted event's drop_count (the precise count,
  MRC_CTL_OPT_CAP_EV_EVENT_PRECISE_DROP_CNT). The rate is one of the world the endpoint runs
  in: the run passes [mrc.endpoint] ev_event_rate_per_s through the time scale
  (emulation/calibration/time_scale.py divides a rate by k), so the limit holds per emulated
  second.

Each event also names the QP's peer: an EV of this project names plane and spine only, where an
SRv6 EV of OCP's names the whole path (its uSID container); with the peer the controller knows
the path as the NIC's EV does. The endpoint's control socket serves `ev_subscribe` and `poll`
("ev_events"); the run's path monitor subscribes and forwards them to the controller and to its
localiser (emulation/network/path_monitor.py).
"""
from __future__ import annotations

from collections import deque

# Events admitted per second of the emulated world (the endpoint's default
# ev_event_rate_per_s, which the time scale turns into the wall world's rate).
EV_EVENT_RATE_PER_S = 50.0
# mrc_ctl.h enum mrc_ctl_ev_state: the bit of each state
EV_STATE_BITS = {"GOOD": 1 << 0, "ASSUMED_BAD": 1 << 1, "DENIED": 1 << 2, "UNKNOWN": 1 << 31}
# mrc_ctl.h struct mrc_ctl_ev_profile_attr.ev_event_mask: "Only MRC_CTL_EV_ASSUMED_BAD and
# MRC_CTL_EV_GOOD are supported"
SUPPORTED_EVENT_MASK = EV_STATE_BITS["GOOD"] | EV_STATE_BITS["ASSUMED_BAD"]
# keys of an ev_state log event that are the log's, not the EV's
NOT_EV_FIELDS = frozenset({"event", "host", "direction", "replaces"})


def check_event_mask(mask) -> int:
    """`mask` as an int, or a ValueError naming what is wrong with it."""
    if isinstance(mask, bool) or not isinstance(mask, int) or mask < 0:
        raise ValueError(f"EV event mask must be a non-negative integer, got {mask!r}")
    if mask & ~SUPPORTED_EVENT_MASK:
        raise ValueError(f"EV event mask {mask:#x}: only GOOD ({EV_STATE_BITS['GOOD']:#x}) and "
                         f"ASSUMED_BAD ({EV_STATE_BITS['ASSUMED_BAD']:#x}) can be monitored "
                         f"(mrc_ctl.h ev_event_mask)")
    return mask


class EvEventQueue:
    """Bounded, rate-limited queue of EV state-change events with mrc_ctl.h drop counts."""

    def __init__(self, capacity: int = 256, rate_per_s: float = EV_EVENT_RATE_PER_S,
                 burst: int = 50, event_mask: int = 0):
        if capacity < 1 or rate_per_s <= 0 or burst < 1:
            raise ValueError(f"EV event queue: capacity and burst must be >= 1 and rate_per_s "
                             f"> 0, got {capacity}, {burst}, {rate_per_s}")
        self.capacity = capacity
        self.rate_per_s = float(rate_per_s)
        self.burst = float(burst)
        self.tokens = float(burst)
        self.stamp_ns: int | None = None
        self.event_mask = check_event_mask(event_mask)
        self.pending: deque[dict] = deque()
        self.dropped = 0              # refused since the last admitted event
        self.dropped_total = 0

    def subscribe(self, mask: int) -> int:
        """Monitor the states in `mask` from now on (0: none); the mask now in force."""
        self.event_mask = check_event_mask(mask)
        return self.event_mask

    def monitored(self, event: dict) -> bool:
        """True when `event` (an ev_state record) is a state change into a monitored state."""
        new = event.get("new")
        return (new != event.get("old")
                and bool(EV_STATE_BITS.get(new, 0) & self.event_mask))

    def push(self, event: dict, now_ns: int) -> bool:
        """Offer one ev_state record; True if it became an event and was admitted."""
        if not self.monitored(event):
            return False
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
        out["state"] = EV_STATE_BITS[event["new"]]
        out["drop_count"] = self.dropped
        self.dropped = 0
        self.pending.append(out)
        return True

    def poll(self, max_entries: int | None = None) -> list[dict]:
        """The oldest undelivered events (all, or at most max_entries), removed from the queue."""
        n = len(self.pending) if max_entries is None else min(max_entries, len(self.pending))
        return [self.pending.popleft() for _ in range(n)]
