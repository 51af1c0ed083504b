"""Both loss policies driving a real SenderQP/ReceiverQP pair over the simulated lossy network
(tests/helpers/simnet.py, fake clock): a black-holed path has every EV that sent into it retired
under either policy; a single unexplained loss retires its EV at once under OCP's rule, and only
when the verdict window expires unexplained under the tolerant one."""
import pytest

from model.events import Event
from model.topology import ev_plane, ev_spine
from traffic.core.evs import ASSUMED_BAD
from traffic.core.messages import DataPacket
from traffic.core.reliability import MRCConfig

from tests.helpers.simnet import Harness, SimNet

pytestmark = pytest.mark.core

MS = 1_000_000
VERDICT_NS = 60 * MS
HOLE = (0, 0)


def _cfg(policy: str) -> MRCConfig:
    # the endpoint's tolerant settings (first-packet grace, a verdict window); OCP ignores them
    return MRCConfig(ev_count=16, ev_backup_count=16, max_payload=1000, base_rtt_ns=MS,
                     loss_policy=policy, first_packet_grace=True, loss_verdict_ns=VERDICT_NS)


def _path(ev: int) -> tuple[int, int]:
    return ev_plane(ev), ev_spine(ev)


def _retired(h) -> dict[int, dict]:
    return {e["ev"]: e for e in h.events_of(Event.EV_STATE, new=ASSUMED_BAD)
            if e.get("direction") != "reverse"}


def _watch_data(net, on_data):
    send = net.send

    def watching_send(now_ns, msg, plane, dst):
        if isinstance(msg, DataPacket) and on_data(now_ns, msg) == "drop":
            net.stats["dropped"] += 1
            return
        send(now_ns, msg, plane, dst)

    net.send = watching_send


@pytest.mark.parametrize("policy", ["ocp", "tolerant"])
def test_a_black_holed_path_has_every_ev_that_used_it_retired(policy):
    net = SimNet(planes=2, spines=2, seed=5)
    net.path(*HOLE).blackhole = True
    h = Harness(net, _cfg(policy))
    into_hole: dict[int, list[int]] = {}     # EV -> send times of its data into the hole
    _watch_data(net, lambda t, pkt: into_hole.setdefault(pkt.ev, []).append(t)
                if _path(pkt.ev) == HOLE else None)
    expected, region = h.post([200_000] * 4)
    h.run_until_idle()
    assert h.sender.error is None and h.sender.idle
    assert bytes(region.buf) == expected
    h.run(2 * VERDICT_NS)                    # let open verdicts close
    bad = _retired(h)
    assert into_hole and set(into_hole) <= set(bad)
    assert all(_path(ev) == HOLE for ev in bad), "a healthy path was retired"
    for ev, sends in into_hole.items():
        assert all(t <= bad[ev]["t_ns"] for t in sends), "a retired EV carried data"
    if policy == "ocp":
        assert h.events_of(Event.EV_SUSPECT) == []           # judged at once, never suspended


def _single_loss_run(policy: str, lost_psn: int = 40):
    net = SimNet(planes=2, spines=2, seed=9)
    h = Harness(net, _cfg(policy))
    dropped: list[tuple[int, int]] = []      # (time, ev) of the one packet dropped

    def drop_once(now_ns, pkt):
        if pkt.psn == lost_psn and not pkt.retransmit and not dropped:
            dropped.append((now_ns, pkt.ev))
            return "drop"
        return None

    _watch_data(net, drop_once)
    expected, region = h.post([200_000])
    h.run_until_idle()
    assert h.sender.error is None and bytes(region.buf) == expected
    h.run(2 * VERDICT_NS)
    [(t_drop, ev)] = dropped
    return h, t_drop, ev


def test_ocp_retires_the_ev_at_its_first_unexplained_loss():
    h, t_drop, ev = _single_loss_run("ocp")
    bad = _retired(h)
    assert list(bad) == [ev]
    assert bad[ev]["reason"] in ("sack_gap", "timeout")
    # detected by the SACK of a packet sent a reorder window (0.5 base RTT) later: one round
    # trip (1 ms) plus that window plus the 20 us jitter, well inside 3 base RTTs
    assert t_drop < bad[ev]["t_ns"] <= t_drop + 3 * MS
    assert h.events_of(Event.EV_SUSPECT) == []


def test_tolerant_suspends_at_the_loss_and_retires_when_the_window_expires():
    h, t_drop, ev = _single_loss_run("tolerant")
    [suspect] = h.events_of(Event.EV_SUSPECT)
    assert suspect["ev"] == ev and t_drop < suspect["t_ns"] <= t_drop + 3 * MS
    bad = _retired(h)
    assert list(bad) == [ev]
    assert bad[ev]["t_ns"] == suspect["t_ns"] + VERDICT_NS    # nothing explained the loss


def test_tolerant_retires_a_dead_path_that_only_ever_swallows_a_message_s_last_packet():
    """One-packet messages sent one after another (a collective's steps, shrunk): a packet into
    the black hole is always the last one sent, so its timeout never has anything later
    delivered, which the tolerant policy excuses as a stall of the peer. The path gets that
    excuse once: its next lost packet is judged, and the hole's EVs are retired. Without the
    once-per-stall limit each hole EV timed out at every turn and was never retired."""
    net = SimNet(planes=2, spines=2, seed=3)
    net.path(*HOLE).blackhole = True
    h = Harness(net, _cfg("tolerant"))
    timeouts_into_hole = 0
    for _ in range(48):
        h.transfer([800])
    for e in h.events_of(Event.RETRANSMIT, reason="timeout"):
        timeouts_into_hole += _path(e["old_ev"]) == HOLE
    h.run(2 * VERDICT_NS)
    bad = _retired(h)
    hole_evs = {e["old_ev"] for e in h.events_of(Event.RETRANSMIT, reason="timeout")
                if _path(e["old_ev"]) == HOLE}
    assert all(_path(ev) == HOLE for ev in bad), "a healthy path was retired"
    # each hole EV costs its first packet (first-packet grace) and one more, the judged loss
    # (the path's one stall excuse is spent on the first of them); EVs whose second packet
    # never came stay unjudged. Without the limit every hole EV would be excused at every
    # turn, none retired, and most messages would lose a packet to the hole.
    assert hole_evs and len(bad) >= len(hole_evs) // 2, (len(bad), len(hole_evs))
    assert timeouts_into_hole <= 2 * len(hole_evs) + 2, (timeouts_into_hole, len(hole_evs))
