"""Combined EV state changes (traffic/core/evs.py), alone and inside the sender (traffic/core/sender.py)
over the simulated network: an EV suspended, then denied, then allowed and probed back to GOOD
is picked again; a bad EV on a down plane is not probed through the down port (nor does its
probe time keep the sender due), and is probed once the plane is back."""
import random

import pytest

from model.topology import ev_plane
from traffic.core.evs import ASSUMED_BAD, DENIED, GOOD, EVSet, PathInfo
from traffic.core.messages import Probe
from traffic.core.reliability import MRCConfig

from tests.helpers.simnet import Harness, SimNet

pytestmark = pytest.mark.core

MS = 1_000_000


def two_ev_plane(**kw):
    """One plane, two active EVs, no backups: a slot left empty is refilled only by its own EV."""
    return EVSet(PathInfo(planes=(0,), spines=2), random.Random(4), ev_count=2, backup_count=0,
                 min_active=1, probe_period_ns=5 * MS, probe_k=2, **kw)


def probe_back(s, ev, t):
    """Answer the EV's probes until it is GOOD; returns the time after the last answer."""
    for _ in range(s.probe_k):
        t = max(t, s.evs[ev].next_probe_ns)
        [(probed, seq)] = s.due_probes(t)
        assert probed == ev
        assert s.probe_response(seq, ev, t + 1)
        t += 1
    return t


def test_suspended_then_denied_then_allowed_and_probed_back_is_picked_again():
    s = two_ev_plane()
    a, b = s.rotation
    s.suspend(a, "timeout", 0)              # no backup: keeps its slot, passed over
    assert [s.pick(1) for _ in range(2)] == [b, b]
    s.deny(a, 2)                             # leaves the rotation
    assert s.rotation == [b] and s.state(a) == DENIED
    s.allow(a, 3)                            # must earn GOOD through probes
    assert s.state(a) == ASSUMED_BAD
    t = probe_back(s, a, 3)
    assert s.state(a) == GOOD and a in s.rotation
    # back in the round robin like any GOOD EV: every other packet
    picks = [s.pick(t + i) for i in range(4)]
    assert sorted(picks) == sorted([a, a, b, b])


def test_a_bad_ev_on_a_down_plane_is_not_probed_until_the_plane_is_back():
    s = EVSet(PathInfo(planes=(0, 1), spines=2), random.Random(4), ev_count=4, backup_count=2,
              probe_period_ns=5 * MS, probe_k=2)
    bad = next(ev for ev in s.rotation if ev_plane(ev) == 1)
    s.mark_lost(bad, "timeout", 0)
    assert s.next_probe_deadline() == 5 * MS
    s.set_plane_local(1, False)              # plane 1's NIC port is down
    assert s.due_probes(100 * MS) == []
    assert s.next_probe_deadline() is None   # nothing to wake up for
    s.set_plane_local(1, True)
    s.set_plane_peer(1, False)               # the peer's plane-1 port down: the same
    assert s.due_probes(200 * MS) == [] and s.next_probe_deadline() is None
    s.set_plane_peer(1, True)
    assert [ev for ev, _ in s.due_probes(300 * MS)] == [bad]


# ---------------------------------------------------------------- inside the sender, on simnet

def harness(**cfg):
    config = dict(ev_count=4, ev_backup_count=0, ev_min_active=1, rto_ns=10 * MS,
                  base_rtt_ns=MS, probe_period_ns=5 * MS, probe_k=2, loss_verdict_ns=200 * MS,
                  nscc_enabled=False)
    config.update(cfg)
    return Harness(SimNet(planes=2, spines=2, seed=9, one_way_ns=200_000, jitter_ns=0),
                   cfg=MRCConfig(**config))


def test_in_the_sender_a_suspended_denied_allowed_ev_earns_good_and_carries_data_again():
    h = harness()
    s = h.sender
    ev = s.evs.rotation[0]
    s.evs.suspend(ev, "timeout", h.clock.now_ns)
    s.evs.apply_denylist(lambda e: e == ev, h.clock.now_ns)
    h.transfer([4000] * 4)                   # data flows on the other EVs meanwhile
    assert s.sent_by_ev.get(ev, 0) == 0
    s.evs.apply_denylist(lambda e: False, h.clock.now_ns)
    h.run(50 * MS)                           # probed (every 5 ms) and answered over simnet
    assert s.evs.state(ev) == GOOD and not s.evs.evs[ev].suspended
    h.transfer([4000] * 8)
    assert s.sent_by_ev.get(ev, 0) > 0


def test_the_sender_sends_no_probe_through_a_down_port_and_is_not_kept_due_by_one():
    h = harness()
    s = h.sender
    bad = next(ev for ev in s.evs.rotation if ev_plane(ev) == 1)
    s.evs.mark_lost(bad, "timeout", h.clock.now_ns)
    s.set_local_port(1, False, h.clock.now_ns)
    sent = []
    for t in range(1, 60):                   # 60 ms: a dozen probe periods
        now = h.clock.now_ns + t * MS
        sent += [(m, plane) for m, plane in s.poll(now)]
        d = s.next_deadline(now)
        assert d is None or d > now, (t, d)  # idle: nothing due, no busy loop on the probe
    assert [m for m, plane in sent if isinstance(m, Probe) or plane == 1] == []
    s.set_local_port(1, True, h.clock.now_ns + 60 * MS)
    back = s.poll(h.clock.now_ns + 61 * MS)
    assert [(m.ev, plane) for m, plane in back if isinstance(m, Probe)] == [(bad, 1)]
