"""Loss verdicts (MRCConfig.loss_verdict_ns): a loss without trim takes its EV out of use at
once, but the EV is retired only if nothing explains the loss within the verdict window.
Driven in the simulated network (tests/helpers/simnet.py) with a fake clock: trimmed headers and
late packets that arrive after the sender already judged them lost (what the CPU-starved
userspace switches of the emulated fabric do under incast), and a silent black hole, which
nothing explains."""

import pytest

from model.events import Event
from model.topology import ev_plane, ev_spine
from traffic.core.evs import ASSUMED_BAD
from traffic.core.messages import DataPacket
from traffic.core.reliability import MRCConfig

from tests.helpers.simnet import Harness, SimNet

pytestmark = pytest.mark.core

VERDICT_NS = 60_000_000


def _cfg(verdict_ns: int) -> MRCConfig:
    return MRCConfig(ev_count=16, ev_backup_count=16, max_payload=1000, base_rtt_ns=1_000_000,
                     loss_verdict_ns=verdict_ns, loss_policy="tolerant")


def _forward_retired(h) -> list[dict]:
    return [e for e in h.events_of(Event.EV_STATE, new=ASSUMED_BAD)
            if e.get("direction") != "reverse"]


def _slow_trim_run(verdict_ns: int, seed: int = 3):
    """Every path trims 5% of data packets; the trimmed headers arrive 20 ms late, long after
    packets sent later on other paths (a SACK-gap 'loss' before the NACK can arrive)."""
    net = SimNet(planes=2, spines=2, seed=seed)
    for plane in range(2):
        for spine in range(2):
            fault = net.path(plane, spine)
            fault.trim = 0.05
            fault.trim_extra_delay_ns = 20_000_000
    h = Harness(net, _cfg(verdict_ns), seed=seed)
    h.transfer([150_000] * 4)
    assert net.stats["trimmed"] > 20
    h.run(2 * VERDICT_NS)       # let every open verdict close
    return h


def test_slow_trimmed_headers_retire_healthy_paths_without_a_verdict_window():
    """The failure the verdict exists for: judged at once, congestion retires EVs."""
    h = _slow_trim_run(verdict_ns=0)
    assert h.sender.counters["sack_gap_losses"] + h.sender.counters["timeouts"] > 0
    assert len(_forward_retired(h)) > 0


def test_slow_trimmed_headers_retire_nothing_with_a_verdict_window():
    h = _slow_trim_run(verdict_ns=VERDICT_NS)
    c = h.sender.counters
    # losses were declared early, and the late trimmed headers explained every one of them
    # (as a NACK, or as a duplicate SACK when the retransmission got there first)
    assert c["loss_verdicts_opened"] > 0 and c["loss_verdicts_failed"] == 0
    assert c["losses_explained_by_trim"] + c["losses_explained_by_late_delivery"] \
        == c["loss_verdicts_opened"]
    assert _forward_retired(h) == []
    # every suspended EV came back to use, each on trimmed-NACK evidence
    suspects = h.events_of(Event.EV_SUSPECT)
    cleared = h.events_of(Event.EV_CLEARED)
    assert suspects and {e["ev"] for e in suspects} == {e["ev"] for e in cleared}
    assert {e["evidence"] for e in cleared} <= {"nack_trimmed", "late_delivery"}
    assert not any(info.suspended for info in h.sender.evs.evs.values())


def _late_net(seed: int, late_ns: int) -> SimNet:
    """Every path delivers 3% of data packets late_ns late."""
    net = SimNet(planes=2, spines=2, seed=seed)
    for plane in range(2):
        for spine in range(2):
            fault = net.path(plane, spine)
            fault.late = 0.03
            fault.late_ns = late_ns
    return net


def test_late_packets_are_explained_by_their_late_delivery():
    net = _late_net(11, 15_000_000)
    h = Harness(net, _cfg(VERDICT_NS), seed=11)
    expected, region = h.post([150_000] * 4)
    h.run_until_idle()
    assert h.sender.error is None and bytes(region.buf) == expected
    assert net.stats["late"] > 10
    h.run(2 * VERDICT_NS)
    c = h.sender.counters
    assert c["loss_verdicts_opened"] > 0
    assert c["losses_explained_by_late_delivery"] > 0 and c["loss_verdicts_failed"] == 0
    assert _forward_retired(h) == []


def test_black_hole_is_retired_after_the_verdict_and_gets_no_data_meanwhile():
    hole = (0, 1)
    net = SimNet(planes=2, spines=2, seed=5)
    net.path(*hole).blackhole = True
    for key in ((1, 0), (1, 1)):
        # congestion (slow trims) on the other plane, whose SACKs never cross the hole: every
        # loss there must be explained, and explains nothing about the hole
        net.path(*key).trim = 0.05
        net.path(*key).trim_extra_delay_ns = 20_000_000
    h = Harness(net, _cfg(VERDICT_NS), seed=5)
    sends: dict[int, list[int]] = {}
    send = net.send

    def counting_send(now_ns, msg, plane, dst):
        if isinstance(msg, DataPacket) and (ev_plane(msg.ev), ev_spine(msg.ev)) == hole:
            sends.setdefault(msg.ev, []).append(now_ns)
        send(now_ns, msg, plane, dst)

    net.send = counting_send
    expected, region = h.post([200_000] * 4)
    h.run_until_idle()
    assert h.sender.error is None and bytes(region.buf) == expected
    h.run(2 * VERDICT_NS)
    retired = {e["ev"]: e["t_ns"] for e in _forward_retired(h)}
    suspected = {}
    for e in h.events_of(Event.EV_SUSPECT):
        suspected.setdefault(e["ev"], e["t_ns"])
    assert sends and set(sends) <= set(retired), (sends, retired)
    assert all((ev_plane(ev), ev_spine(ev)) == hole for ev in retired)
    rto = h.sender.rto_base_ns()
    for ev, times in sends.items():
        # suspended at its first detected loss, retired one verdict window later, and no data
        # went to it once it was suspended
        assert suspected[ev] - times[0] <= rto, (ev, times, suspected[ev])
        assert retired[ev] - suspected[ev] == VERDICT_NS
        assert all(t <= suspected[ev] for t in times), (ev, times, suspected[ev])
    c = h.sender.counters
    assert c["losses_explained_by_trim"] + c["losses_explained_by_late_delivery"] > 0
    assert c["loss_verdicts_failed"] >= len(sends)


def test_late_packets_are_explained_even_with_coalesced_sacks():
    """With SACK coalescing (the endpoints SACK every 4th packet), a late packet that arrives
    before its retransmission must still be reflected in a SACK of its own, or the sender cannot
    tell its loss verdict that the packet was only late (the retransmission's SACK reflects the
    retransmission)."""
    # late enough to be declared lost, early enough to arrive before the retransmission
    # (without the receiver's late-packet SACK some of the verdicts fail)
    net = _late_net(13, 1_500_000)
    cfg = MRCConfig(ev_count=16, ev_backup_count=16, max_payload=1000, base_rtt_ns=1_000_000,
                    loss_verdict_ns=VERDICT_NS, ack_every=4, loss_policy="tolerant")
    h = Harness(net, cfg, seed=13)
    expected, region = h.post([150_000] * 4)
    h.run_until_idle()
    assert h.sender.error is None and bytes(region.buf) == expected
    h.run(2 * VERDICT_NS)
    c = h.sender.counters
    assert net.stats["late"] > 10 and c["loss_verdicts_opened"] > 0
    assert c["loss_verdicts_failed"] == 0, c
    assert c["losses_explained_by_late_delivery"] == c["loss_verdicts_opened"]
    assert _forward_retired(h) == []
