"""TolerantLossPolicy on its own, with a fake clock. Each rule as its docstring states it:
a timeout with nothing later delivered is a stall; the first packet an EV carried is excused
(first_packet_grace); one piece of congestion evidence on the EV itself forgives one loss within
the forgiveness window; otherwise the EV is suspended for loss_verdict_ns and retired then unless
a trimmed NACK or the late delivery of that very transmission explains the loss (0: at once)."""
import pytest

from traffic.core.clock import FakeClock
from traffic.core.loss_policy import (CONGESTION, LATE_DELIVERY, NACK_OTHER, SACK_GAP, TIMEOUT,
                                 TRIM_NACK, TRIMMED, TRIMMED_LASTHOP, TolerantLossPolicy, Verdict)
from traffic.core.qp_config import MRCConfig
from traffic.core.rtt import RttEstimator

pytestmark = pytest.mark.core

MS = 1_000_000
EV, OTHER_EV = 0x1234, 0x5678


def _policy(**cfg):
    # base RTT 1 ms and no RTT sample: the forgiveness window is congestion_forgive_rtts (64)
    # x 1 ms = 64 ms, the QP-wide congestion memory congestion_grace_rtts (8) x 1 ms = 8 ms
    config = MRCConfig(base_rtt_ns=MS, **cfg)
    return TolerantLossPolicy(config, RttEstimator(config))


def test_loss_without_trim_retires_at_once_without_a_verdict_window():
    pol = _policy()
    assert pol.on_loss(EV, 0, SACK_GAP, MS).verdict is Verdict.RETIRE
    d = pol.on_loss(OTHER_EV, 0, TIMEOUT, MS, later_delivered=True)
    assert (d.verdict, d.why) == (Verdict.RETIRE, TIMEOUT)


def test_a_timeout_with_nothing_later_delivered_is_a_stall():
    pol = _policy(loss_verdict_ns=300 * MS, first_packet_grace=True)
    d = pol.on_loss(EV, 0, TIMEOUT, 5 * MS, first_on_ev=True, later_delivered=False)
    assert (d.verdict, d.why) == (Verdict.EXCUSE, "stall")
    assert pol.pending == {}
    # a SACK gap always has later evidence (the later packet that arrived): judged normally
    assert pol.on_loss(EV, 0, SACK_GAP, 5 * MS, later_delivered=False).verdict is Verdict.SUSPEND


def test_first_packet_grace_excuses_only_the_first_packet_and_only_when_on():
    on = _policy(first_packet_grace=True)
    d = on.on_loss(EV, 0, SACK_GAP, MS, first_on_ev=True)
    assert (d.verdict, d.why) == (Verdict.EXCUSE, "first_packet")
    assert on.on_loss(EV, MS, SACK_GAP, 2 * MS, first_on_ev=False).verdict is Verdict.RETIRE
    off = _policy(first_packet_grace=False)
    assert off.on_loss(EV, 0, SACK_GAP, MS, first_on_ev=True).verdict is Verdict.RETIRE


def test_one_piece_of_congestion_evidence_forgives_one_loss():
    clock = FakeClock(0)
    pol = _policy()
    pol.on_evidence(EV, CONGESTION, clock.now_ns)
    d = pol.on_loss(EV, 0, SACK_GAP, clock.advance(10 * MS))
    assert (d.verdict, d.why) == (Verdict.FORGIVE, "congestion")
    # the evidence was used up: the next loss, with nothing newer, retires
    assert pol.on_loss(EV, 0, SACK_GAP, clock.advance(10 * MS)).verdict is Verdict.RETIRE
    # new evidence forgives again
    pol.on_evidence(EV, CONGESTION, clock.advance(MS))
    assert pol.on_loss(EV, 0, TIMEOUT, clock.advance(MS)).verdict is Verdict.FORGIVE


def test_used_evidence_stays_used_after_a_judged_loss():
    """Evidence at 0 forgives the loss at 10 ms; the loss at 20 ms is judged (retired); a third
    loss at 30 ms, still inside the 64 ms window and with no newer evidence, must be judged too:
    one piece of evidence forgives one loss, however many losses come after it."""
    clock = FakeClock(0)
    pol = _policy()
    pol.on_evidence(EV, CONGESTION, clock.now_ns)
    assert pol.on_loss(EV, 0, SACK_GAP, clock.advance(10 * MS)).verdict is Verdict.FORGIVE
    assert pol.on_loss(EV, 1, SACK_GAP, clock.advance(10 * MS)).verdict is Verdict.RETIRE
    assert pol.on_loss(EV, 2, SACK_GAP, clock.advance(10 * MS)).verdict is Verdict.RETIRE


def test_congestion_on_another_ev_forgives_nothing():
    """A black-holed path echoes no ECN and no trim: the QP being congested elsewhere is no
    excuse for it."""
    pol = _policy()
    pol.on_evidence(OTHER_EV, CONGESTION, 0)
    assert pol.congested(MS)
    assert pol.on_loss(EV, 0, SACK_GAP, MS).verdict is Verdict.RETIRE


def test_evidence_older_than_the_forgiveness_window_forgives_nothing():
    pol = _policy()
    pol.on_evidence(EV, CONGESTION, 0)
    assert pol.on_loss(EV, 0, SACK_GAP, 64 * MS + 1).verdict is Verdict.RETIRE
    pol.on_evidence(OTHER_EV, CONGESTION, 0)
    assert pol.on_loss(OTHER_EV, 0, SACK_GAP, 64 * MS).verdict is Verdict.FORGIVE


def test_no_forgiveness_with_a_zero_grace():
    pol = _policy(congestion_grace_rtts=0.0)
    pol.on_evidence(EV, CONGESTION, 0)
    assert pol.on_loss(EV, 0, SACK_GAP, MS).verdict is Verdict.RETIRE
    assert not pol.congested(0)


def test_an_unexplained_loss_is_suspended_then_retired_when_its_window_expires():
    clock = FakeClock(100 * MS)
    pol = _policy(loss_verdict_ns=300 * MS)
    d = pol.on_loss(EV, 99 * MS, SACK_GAP, clock.now_ns)
    assert (d.verdict, d.until_ns) == (Verdict.SUSPEND, 400 * MS)
    assert pol.next_due_ns() == 400 * MS
    assert pol.due(clock.advance_to(400 * MS - 1)) == []
    [(ev, retire)] = pol.due(clock.advance_to(400 * MS))
    assert (ev, retire.verdict, retire.why) == (EV, Verdict.RETIRE, SACK_GAP)
    assert pol.pending == {} and pol.next_due_ns() is None and pol.due(clock.advance(MS)) == []


@pytest.mark.parametrize("kind", [TRIM_NACK, LATE_DELIVERY])
def test_a_trim_or_late_delivery_of_that_very_transmission_clears_the_ev(kind):
    pol = _policy(loss_verdict_ns=300 * MS)
    pol.on_loss(EV, 99 * MS, SACK_GAP, 100 * MS)
    # evidence about another transmission (other send time, or other EV) explains nothing
    assert pol.on_evidence(EV, kind, 150 * MS, sent_ns=98 * MS) is None
    assert pol.on_evidence(OTHER_EV, kind, 150 * MS, sent_ns=99 * MS) is None
    d = pol.on_evidence(EV, kind, 180 * MS, sent_ns=99 * MS)
    assert (d.verdict, d.why) == (Verdict.CLEAR, kind)
    assert pol.due(10_000 * MS) == []
    # a trimmed header is congestion on that EV (it delivers); a late packet is not
    assert pol.congested(180 * MS) == (kind == TRIM_NACK)


def test_the_ev_returns_only_when_every_open_loss_on_it_is_explained():
    pol = _policy(loss_verdict_ns=300 * MS)
    assert pol.on_loss(EV, 10 * MS, SACK_GAP, 20 * MS).verdict is Verdict.SUSPEND
    assert pol.on_loss(EV, 11 * MS, TIMEOUT, 30 * MS).verdict is Verdict.SUSPEND
    assert pol.on_evidence(EV, LATE_DELIVERY, 40 * MS, 10 * MS).verdict is Verdict.EXPLAINED
    assert pol.on_evidence(EV, TRIM_NACK, 50 * MS, 11 * MS).verdict is Verdict.CLEAR


def test_one_unexplained_and_one_explained_loss_retires_at_the_first_window():
    pol = _policy(loss_verdict_ns=300 * MS)
    pol.on_loss(EV, 10 * MS, SACK_GAP, 20 * MS)            # due at 320 ms
    pol.on_loss(EV, 11 * MS, SACK_GAP, 30 * MS)            # due at 330 ms
    pol.on_evidence(EV, LATE_DELIVERY, 40 * MS, 11 * MS)
    assert [(ev, d.verdict) for ev, d in pol.due(330 * MS)] == [(EV, Verdict.RETIRE)]


def test_the_same_transmission_is_judged_once():
    pol = _policy(loss_verdict_ns=300 * MS)
    assert pol.on_loss(EV, 10 * MS, SACK_GAP, 20 * MS).verdict is Verdict.SUSPEND
    d = pol.on_loss(EV, 10 * MS, SACK_GAP, 25 * MS)
    assert (d.verdict, d.why) == (Verdict.EXCUSE, "already_suspended")
    assert len(pol.due(1000 * MS)) == 1


def test_trims_and_other_nacks_never_retire():
    pol = _policy(loss_verdict_ns=300 * MS)
    assert pol.on_loss(EV, 0, TRIMMED, MS).verdict is Verdict.FORGIVE
    assert pol.on_loss(EV, 0, TRIMMED_LASTHOP, MS).verdict is Verdict.EXCUSE
    assert pol.on_loss(EV, 0, NACK_OTHER, MS).verdict is Verdict.EXCUSE
    assert pol.pending == {}


def test_a_path_gets_one_stall_excuse_per_stall():
    """A stall times out every packet in flight at once: all of them are excused. A packet sent
    on the same path AFTER that excuse that again times out with nothing later delivered is no
    stall (a dead path swallowing the last packet of each message looks exactly like this):
    it is judged. Other paths, and the same path once the stall memory (8 base RTOs) has
    passed, get their excuse."""
    pol = _policy(loss_verdict_ns=300 * MS)
    rto = pol.rtt.rto_base_ns()
    path, other = (0, 0), (1, 0)
    t = 10 * rto                                     # the first excuse
    assert pol.on_loss(EV, t - rto, TIMEOUT, t, later_delivered=False, path=path).why == "stall"
    # sent before the excuse: the same stall
    assert pol.on_loss(OTHER_EV, t - 1, TIMEOUT, t + 1, later_delivered=False,
                       path=path).why == "stall"
    # another path: its own excuse
    assert pol.on_loss(EV, t + 1, TIMEOUT, t + rto, later_delivered=False,
                       path=other).why == "stall"
    # sent on the excused path after its excuse, lost again with nothing later delivered
    d = pol.on_loss(OTHER_EV, t + 1, TIMEOUT, t + 2 * rto, later_delivered=False, path=path)
    assert (d.verdict, d.why) == (Verdict.SUSPEND, TIMEOUT)
    # once the stall memory has passed, a stall is a stall again
    later = t + 8 * rto + 1
    assert pol.on_loss(EV, later - rto, TIMEOUT, later, later_delivered=False,
                       path=path).why == "stall"


def test_without_a_path_the_excuse_is_per_ev():
    pol = _policy(loss_verdict_ns=300 * MS)
    rto = pol.rtt.rto_base_ns()
    t = 10 * rto
    assert pol.on_loss(EV, t - rto, TIMEOUT, t, later_delivered=False).why == "stall"
    assert pol.on_loss(OTHER_EV, t + 1, TIMEOUT, t + 2 * rto, later_delivered=False).why == "stall"
    assert pol.on_loss(EV, t + 1, TIMEOUT, t + 2 * rto,
                       later_delivered=False).verdict is Verdict.SUSPEND


def test_the_stall_memory_stays_bounded():
    """Replaced EVs leave keys behind when the layout names no path: at most 1024 are kept,
    the oldest excuse goes first."""
    pol = _policy(loss_verdict_ns=300 * MS)
    for ev in range(1100):
        assert pol.on_loss(ev, ev, TIMEOUT, ev + 1, later_delivered=False).why == "stall"
    assert len(pol._stall_excused) == 1024
    assert 0 not in pol._stall_excused and 1099 in pol._stall_excused
