"""Loss policy windows and counts at their edges (traffic/core/loss_policy.py), by hand with base RTT
1 ms: the QP-wide congestion memory max(grace RTTs, 8 srtt), the forgiveness window
max(forgive RTTs, 16 srtt, that memory) and its limits, one piece of evidence per loss, a verdict
window of 1 ns, and the count of open verdicts per EV through explain / retire / new losses."""
from traffic.core.loss_policy import (CONGESTION, LATE_DELIVERY, SACK_GAP, TIMEOUT, TRIM_NACK,
                                 Decision, TolerantLossPolicy, Verdict)
from traffic.core.qp_config import MRCConfig
from traffic.core.rtt import RttEstimator

MS = 1_000_000
EV, OTHER_EV = 0x1234, 0x5678


def policy(srtt_sample=None, **cfg):
    config = MRCConfig(base_rtt_ns=MS, **cfg)
    rtt = RttEstimator(config)
    if srtt_sample is not None:
        rtt.update(srtt_sample)                        # first sample: srtt = sample
    return TolerantLossPolicy(config, rtt)


def test_congestion_memory_is_eight_srtt_when_that_is_longer():
    pol = policy(srtt_sample=2 * MS, congestion_grace_rtts=1.0)   # max(1 ms, 8 x 2 ms) = 16 ms
    pol.on_evidence(EV, CONGESTION, 10 * MS)
    assert pol.congested(26 * MS - 1) and not pol.congested(26 * MS)


def test_congestion_memory_without_a_sample_is_the_grace_alone():
    pol = policy(congestion_grace_rtts=1e-6)           # max(1 ns, 8 x 0)
    pol.on_evidence(EV, CONGESTION, 10 * MS)
    assert pol.congested(10 * MS) and not pol.congested(10 * MS + 1)


def test_a_grace_below_one_rtt_still_remembers_and_forgives():
    pol = policy(congestion_grace_rtts=0.5)            # 0.5 ms
    pol.on_evidence(EV, CONGESTION, 0)
    assert pol.congested(MS // 2 - 1) and not pol.congested(MS // 2)
    assert pol.on_loss(EV, 0, SACK_GAP, MS) == Decision(Verdict.FORGIVE, "congestion")


def test_congestion_on_the_ev_itself_forgives_its_loss_not_another_evs():
    pol = policy()
    pol.on_evidence(EV, CONGESTION, 0)
    assert pol.on_loss(EV, 0, SACK_GAP, MS).verdict is Verdict.FORGIVE
    assert pol.on_loss(OTHER_EV, 0, SACK_GAP, MS).verdict is Verdict.RETIRE


def test_forgiveness_window_is_sixteen_srtt_when_that_is_longest():
    """srtt 2 ms: max(forgive 1 ms, 16 x 2 ms, max(grace 1 ms, 8 x 2 ms)) = 32 ms."""
    def verdict(loss_at):
        pol = policy(srtt_sample=2 * MS, congestion_forgive_rtts=1.0, congestion_grace_rtts=1.0)
        pol.on_evidence(EV, CONGESTION, 0)
        return pol.on_loss(EV, 0, SACK_GAP, loss_at).verdict
    assert verdict(32 * MS) is Verdict.FORGIVE
    assert verdict(32 * MS + 1) is Verdict.RETIRE


def test_forgiveness_window_is_the_congestion_memory_when_that_is_longest():
    """No sample: max(forgive 1 ms, 0, grace 100 ms) = 100 ms."""
    pol = policy(congestion_forgive_rtts=1.0, congestion_grace_rtts=100.0)
    pol.on_evidence(EV, CONGESTION, 0)
    assert pol.on_loss(EV, 0, SACK_GAP, 100 * MS).verdict is Verdict.FORGIVE


def test_one_piece_of_evidence_forgives_one_loss_even_at_the_same_instant():
    pol = policy()
    pol.on_evidence(EV, CONGESTION, 5 * MS)
    assert pol.on_loss(EV, 1, SACK_GAP, 5 * MS).verdict is Verdict.FORGIVE
    assert pol.on_loss(EV, 2, SACK_GAP, 5 * MS + 1).verdict is Verdict.RETIRE


def test_the_evidence_still_counts_as_used_one_whole_window_later():
    """Window 10 ms (forgive 10 RTTs, no sample, grace 1 RTT). Evidence and a forgiven loss at
    t = 0; a second loss at exactly 10 ms is still within the window of both: not forgiven."""
    pol = policy(congestion_forgive_rtts=10.0, congestion_grace_rtts=1.0)
    pol.on_evidence(EV, CONGESTION, 0)
    assert pol.on_loss(EV, 1, SACK_GAP, 0).verdict is Verdict.FORGIVE
    assert pol.on_loss(EV, 2, SACK_GAP, 10 * MS).verdict is Verdict.RETIRE


def test_a_one_ns_verdict_window_suspends():
    pol = policy(loss_verdict_ns=1)
    assert pol.on_loss(EV, 0, TIMEOUT, 7) == Decision(Verdict.SUSPEND, TIMEOUT, 8)


def test_verdicts_past_an_explained_one_are_still_due():
    pol = policy(loss_verdict_ns=MS)
    pol.on_loss(EV, 100, SACK_GAP, 0)
    pol.on_loss(OTHER_EV, 200, TIMEOUT, 10)
    assert pol.on_evidence(EV, LATE_DELIVERY, 20, sent_ns=100).verdict is Verdict.CLEAR
    assert pol.due(MS + 10) == [(OTHER_EV, Decision(Verdict.RETIRE, TIMEOUT))]


def test_a_retired_verdict_no_longer_counts_as_open():
    pol = policy(loss_verdict_ns=MS)
    pol.on_loss(EV, 100, SACK_GAP, 0)
    pol.on_loss(EV, 200, SACK_GAP, 10)
    assert [ev for ev, _ in pol.due(MS)] == [EV]
    assert pol.on_evidence(EV, LATE_DELIVERY, MS + 1, sent_ns=200) == \
        Decision(Verdict.CLEAR, LATE_DELIVERY)


def test_open_verdicts_are_counted_through_explanations_and_new_losses():
    pol = policy(loss_verdict_ns=MS)
    pol.on_loss(EV, 1, SACK_GAP, 0)
    pol.on_loss(EV, 2, SACK_GAP, 0)
    assert pol.on_evidence(EV, LATE_DELIVERY, 5, sent_ns=1).verdict is Verdict.EXPLAINED  # 1 open
    pol.on_loss(EV, 3, SACK_GAP, 6)                                                       # 2 open
    assert pol.on_evidence(EV, LATE_DELIVERY, 7, sent_ns=2).verdict is Verdict.EXPLAINED  # 1 open
    assert pol.on_evidence(EV, LATE_DELIVERY, 8, sent_ns=3).verdict is Verdict.CLEAR      # none
    pol.on_loss(EV, 4, SACK_GAP, 9)
    assert pol.on_evidence(EV, LATE_DELIVERY, 10, sent_ns=4).verdict is Verdict.CLEAR


def test_a_trimmed_nack_that_explains_a_loss_is_congestion_evidence_for_the_next():
    """The trim says the path was congested, not dead: the EV's next loss is forgiven."""
    pol = policy(loss_verdict_ns=MS)
    assert pol.on_loss(EV, 1, SACK_GAP, 0).verdict is Verdict.SUSPEND
    assert pol.on_evidence(EV, TRIM_NACK, 10, sent_ns=1) == Decision(Verdict.CLEAR, TRIM_NACK)
    assert pol.on_loss(EV, 2, SACK_GAP, 20) == Decision(Verdict.FORGIVE, "congestion")
