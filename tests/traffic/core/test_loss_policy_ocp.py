"""OcpLossPolicy on its own, with a fake clock: OCP MRC 1.0's rule: a loss without trim (an
ACK timeout, or a SACK showing a later packet arrived) makes the EV ASSUMED_BAD immediately; a
trimmed NACK is congestion, not failure: fast retransmit, the EV is not retired."""
import pytest

from traffic.core.clock import FakeClock
from traffic.core.loss_policy import (CONGESTION, LATE_DELIVERY, NACK_OTHER, SACK_GAP, TIMEOUT,
                                 TRIM_NACK, TRIMMED, TRIMMED_LASTHOP, OcpLossPolicy,
                                 TolerantLossPolicy, Verdict, make_loss_policy)
from traffic.core.qp_config import MRCConfig
from traffic.core.rtt import RttEstimator

pytestmark = pytest.mark.core

MS = 1_000_000
EV = 0x1234


def _policy(**cfg):
    config = MRCConfig(base_rtt_ns=MS, loss_policy="ocp", **cfg)
    return OcpLossPolicy(config, RttEstimator(config))


@pytest.mark.parametrize("cause", [SACK_GAP, TIMEOUT])
def test_a_loss_without_trim_retires_the_ev_at_once(cause):
    clock = FakeClock(5 * MS)
    d = _policy().on_loss(EV, 4 * MS, cause, clock.now_ns)
    assert d.verdict is Verdict.RETIRE and d.why == cause


def test_none_of_the_tolerant_excuses_apply():
    """Knobs that soften the rule in the tolerant policy change nothing here: a first packet,
    an EV that just echoed congestion, a timeout with nothing later delivered, a verdict
    window: each loss retires at once and nothing is left pending."""
    clock = FakeClock(0)
    pol = _policy(first_packet_grace=True, loss_verdict_ns=300 * MS)
    pol.on_evidence(EV, CONGESTION, clock.now_ns)          # this very EV echoed ECN
    clock.advance(MS)
    assert pol.on_loss(EV, 0, SACK_GAP, clock.now_ns, first_on_ev=True).verdict is Verdict.RETIRE
    assert pol.on_loss(EV + 1, 0, TIMEOUT, clock.now_ns,
                       later_delivered=False).verdict is Verdict.RETIRE
    assert pol.pending == {} and pol.next_due_ns() is None
    assert pol.due(clock.advance(10_000 * MS)) == []


def test_trims_and_other_nacks_never_retire():
    pol = _policy()
    trimmed = pol.on_loss(EV, 0, TRIMMED, MS)
    assert trimmed.verdict is Verdict.FORGIVE          # fast retransmit, pass the EV over once
    assert pol.on_loss(EV, 0, TRIMMED_LASTHOP, MS).verdict is Verdict.EXCUSE
    assert pol.on_loss(EV, 0, NACK_OTHER, MS).verdict is Verdict.EXCUSE


def test_evidence_after_the_fact_changes_nothing():
    """The verdict was final: a trimmed NACK or a late SACK of the lost transmission arriving
    afterwards is no decision (the EV stays retired until its probes bring it back)."""
    pol = _policy()
    assert pol.on_loss(EV, 2 * MS, SACK_GAP, 3 * MS).verdict is Verdict.RETIRE
    assert pol.on_evidence(EV, TRIM_NACK, 4 * MS, sent_ns=2 * MS) is None
    assert pol.on_evidence(EV, LATE_DELIVERY, 4 * MS, sent_ns=2 * MS) is None


def test_congestion_is_remembered_qp_wide_for_the_grace_window():
    """congested() is true for congestion_grace_rtts base RTTs (no RTT sample yet: 8 x 1 ms)."""
    pol = _policy(congestion_grace_rtts=8.0)
    assert not pol.congested(0)
    pol.on_evidence(EV, CONGESTION, 10 * MS)
    assert pol.congested(17 * MS) and not pol.congested(18 * MS)


def test_the_config_selects_the_policy():
    assert isinstance(make_loss_policy(MRCConfig(loss_policy="ocp"), RttEstimator(MRCConfig())),
                      OcpLossPolicy)
    assert isinstance(make_loss_policy(MRCConfig(loss_policy="tolerant"),
                                       RttEstimator(MRCConfig())), TolerantLossPolicy)
    # OCP's rule is the default (traffic/core/qp_config.py)
    assert isinstance(make_loss_policy(MRCConfig(), RttEstimator(MRCConfig())), OcpLossPolicy)
    with pytest.raises(ValueError, match="loss_policy.*'strict'"):
        MRCConfig(loss_policy="strict")
