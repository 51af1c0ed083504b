"""MRCConfig.stall_burst_rtts: the tolerant policy excuses a timeout with nothing sent later
delivered as a stall of the peer, once per path and stall. When the lost packet was a message's
last and the packets sent just before it (its burst) were delivered, the peer did not stall: with
stall_burst_rtts > 0 that timeout is judged at once instead of costing the path a second one.

SenderQP/ReceiverQP over the simulated network (fake clock), 3-packet messages one after another
(a ring's steps), one (plane, spine) path black-holed in the data direction (a hole in both
directions also loses the SACKs of healthy paths that return through it: a timeout on such a
path then has its burst delivered too and is judged, a healthy EV retired for a lost ACK; the
README's scale section measures that trade-off on the fabric). Expected by hand from the rule:
the sender takes the planes in turn, so each message has a packet on plane 1, which the hole
never touches, sent within a pacing gap (80 us at the default 100 Mbit/s per plane) of the
others, far inside one base RTT (1 ms). NSCC is off (a fixed window), so a message's packets leave together: every
timeout into the hole therefore has its burst delivered. (With NSCC, quick adapt after a loss can
leave a window of one packet; a packet alone in flight has no burst to be judged by, and the
stall excuse still applies to it.)
"""

import pytest

from model.events import Event
from model.topology import ev_plane, ev_spine
from tests.helpers.simnet import Harness, SimNet
from traffic.core.evs import ASSUMED_BAD
from traffic.core.reliability import MRCConfig

pytestmark = pytest.mark.core

MS = 1_000_000
HOLE = (0, 0)


def _path(ev: int) -> tuple[int, int]:
    return ev_plane(ev), ev_spine(ev)


def run(seed: int, burst_rtts: float):
    net = SimNet(planes=2, spines=2, seed=seed)
    net.path(*HOLE).blackhole_to = "B"      # data into it is lost; SACKs out of it arrive
    cfg = MRCConfig(ev_count=16, ev_backup_count=16, max_payload=1000, base_rtt_ns=MS,
                    loss_policy="tolerant", loss_verdict_ns=60 * MS,
                    stall_burst_rtts=burst_rtts, nscc_enabled=False)
    h = Harness(net, cfg, seed=seed)
    for _ in range(40):
        h.transfer([3000])
    h.run(200 * MS)                          # let open verdicts close
    judged: dict[int, int] = {}              # EV -> when it was first put out of use
    for e in h.events:
        if (e["event"] == Event.EV_SUSPECT or e["event"] == Event.EV_STATE
                and e.get("new") == ASSUMED_BAD) and e.get("direction") != "reverse":
            judged.setdefault(e["ev"], e["t_ns"])
    into_hole = [e for e in h.events_of(Event.RETRANSMIT, reason="timeout")
                 if _path(e["old_ev"]) == HOLE]
    # a timeout into the hole that was not judged by the time its packet was resent
    excused = [e for e in into_hole if judged.get(e["old_ev"], e["t_ns"] + 1) > e["t_ns"]]
    retired = {e["ev"] for e in h.events_of(Event.EV_STATE, new=ASSUMED_BAD)
               if e.get("direction") != "reverse"}
    return into_hole, excused, retired


def test_a_lost_tail_whose_burst_was_delivered_is_judged_at_its_first_timeout():
    for seed in range(1, 9):
        into_hole, excused, retired = run(seed, burst_rtts=1.0)
        assert into_hole, seed                               # tails did fall into the hole
        assert excused == [], (seed, excused)
        assert retired and all(_path(ev) == HOLE for ev in retired), (seed, retired)


def test_without_it_the_path_spends_its_stall_excuse_first():
    excused_by_seed = {}
    for seed in range(1, 9):
        into_hole, excused, retired = run(seed, burst_rtts=0.0)
        assert all(_path(ev) == HOLE for ev in retired), (seed, retired)
        excused_by_seed[seed] = len(excused)
    # every tail timeout has nothing sent later delivered; the path's first one is excused
    assert all(n >= 1 for n in excused_by_seed.values()), excused_by_seed
