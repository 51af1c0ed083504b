"""A silently black-holed path while ECN marks arrive on the OTHER paths (the t1-blackhole
regression: QP-wide congestion must never excuse losses on a path that echoes nothing).
Driven in the simulated network (tests/helpers/simnet.py) with a fake clock."""

import pytest

from model.events import Event
from model.topology import ev_plane, ev_spine
from traffic.core.evs import ASSUMED_BAD
from traffic.core.messages import DataPacket
from traffic.core.reliability import MRCConfig

from tests.helpers.simnet import Harness, SimNet

pytestmark = pytest.mark.core

HOLE = (0, 0)      # plane 0, spine 0


def _path(ev: int) -> tuple[int, int]:
    return ev_plane(ev), ev_spine(ev)


def _run(first_packet_grace: bool):
    net = SimNet(planes=2, spines=2, seed=5)
    for plane in range(2):
        for spine in range(2):
            if (plane, spine) != HOLE:
                net.path(plane, spine).ecn = 0.3        # the QP is congested elsewhere
    net.path(*HOLE).blackhole = True
    cfg = MRCConfig(ev_count=16, ev_backup_count=16, max_payload=1000, base_rtt_ns=1_000_000,
                    first_packet_grace=first_packet_grace)
    h = Harness(net, cfg)
    sent_into_hole: dict[int, list[int]] = {}    # black-holed EV -> send times of its data
    send = net.send

    def counting_send(now_ns, msg, plane, dst):
        if isinstance(msg, DataPacket) and _path(msg.ev) == HOLE:
            sent_into_hole.setdefault(msg.ev, []).append(now_ns)
        send(now_ns, msg, plane, dst)

    net.send = counting_send
    h.transfer([200_000] * 4)
    return h, sent_into_hole


def _check(h, sent_into_hole, max_detected_losses_per_ev):
    assert h.net.stats["ecn_marked"] > 100               # congestion was really signalled
    bad = {e["ev"]: e["t_ns"] for e in h.events_of(Event.EV_STATE, new=ASSUMED_BAD)
           if e.get("direction") != "reverse"}
    assert all(_path(ev) == HOLE for ev in bad), "a congested (ECN) path was retired"
    # every EV that carried data into the hole was retired ...
    assert sent_into_hole and set(sent_into_hole) <= set(bad), (sent_into_hole, bad)
    retx = h.events_of(Event.RETRANSMIT)
    rto = h.sender.rto_base_ns()
    for ev, sends in sent_into_hole.items():
        # ... within a bounded time of its first packet into the hole (one loss-detection
        # delay per loss it takes: the first, or with first-packet grace the second), and
        # never carried data after its retirement
        assert bad[ev] - sends[0] <= max_detected_losses_per_ev * rto, (ev, sends, bad[ev])
        assert all(t <= bad[ev] for t in sends), (ev, sends, bad[ev])
    # no retransmission went on an EV (or into the path) already known to lose packets
    assert retx
    known_lossy: set[int] = set()
    hole_known = False
    for e in retx:
        assert e["new_ev"] not in known_lossy, e
        assert e["new_ev"] != e["old_ev"]
        if hole_known:
            assert _path(e["new_ev"]) != HOLE, e
        if e["reason"] in ("timeout", "sack_gap") and _path(e["old_ev"]) == HOLE:
            known_lossy.add(e["old_ev"])
            hole_known = True
    assert h.sender.counters["retransmits_onto_suspect_evs"] == 0


def test_black_holed_path_retired_at_first_loss_despite_congestion_elsewhere():
    h, sent_into_hole = _run(first_packet_grace=False)
    _check(h, sent_into_hole, max_detected_losses_per_ev=1)


def test_black_holed_path_retired_by_second_loss_with_first_packet_grace():
    """With the endpoint's first-packet grace a fresh EV's first loss is excused; the second
    retires it (replacements drawn onto the hole cost at most two packets each)."""
    h, sent_into_hole = _run(first_packet_grace=True)
    _check(h, sent_into_hole, max_detected_losses_per_ev=2)
