"""NSCC and the plane pacer at the boundaries of their rules (traffic/core/nscc.py docstring table),
by hand: delay exactly at the target, the once-per-base-RTT decrease when the clock does not
start at zero, and the pacer's exact refill and wait at 1 byte/ns."""
import pytest

from traffic.core.nscc import Nscc, NsccResponse, PlanePacer

RTT = 1_000_000                  # 1 ms base RTT
RATE = 1e9                       # 1 GB/s: BDP = 1e6 bytes


def nscc(**kw):
    args = dict(base_rtt_ns=RTT, link_rate_Bps=RATE, mss=1000)
    args.update(kw)
    return Nscc(**args)


def test_smallest_positive_parameters_are_accepted_and_zero_refused():
    n = Nscc(base_rtt_ns=1, link_rate_Bps=1, mss=1)
    assert n.last_response is None                    # no ACK seen yet
    for bad in ({"base_rtt_ns": 0}, {"link_rate_Bps": 0}, {"mss": 0}):
        with pytest.raises(ValueError, match="base_rtt_ns, link_rate_Bps and mss must be positive"):
            nscc(**bad)


def test_delay_exactly_at_the_target_is_the_high_delay_row():
    """delay >= target: fair increase without ECN, multiplicative decrease with it (averaged
    delay = the target with gain 1: not above it, so the window stays)."""
    n = nscc()
    assert n.on_ack(1000, 2 * RTT, False, 0) == NsccResponse.FAIR_INCREASE
    n = nscc(delay_alpha=1.0)
    before = n.cwnd
    assert n.on_ack(1000, 2 * RTT, True, 0) == NsccResponse.MULTIPLICATIVE_DECREASE
    assert n.cwnd == before


def test_one_decrease_per_base_rtt_also_late_in_a_run():
    """ECN, averaged delay 2 targets (gain 1): factor max(1 - 0.8 x 1/2, 0.5) = 0.6. At
    t = 10 RTT it applies; half an RTT later it does not; one RTT later it does again."""
    n = nscc(delay_alpha=1.0)
    w = n.cwnd
    t0 = 10 * RTT
    n.on_ack(0, 3 * RTT, True, t0)
    assert n.cwnd == pytest.approx(0.6 * w)
    n.on_ack(0, 3 * RTT, True, t0 + RTT // 2)
    assert n.cwnd == pytest.approx(0.6 * w)
    n.on_ack(0, 3 * RTT, True, t0 + RTT)
    assert n.cwnd == pytest.approx(0.36 * w)


def test_pacer_refill_and_wait_at_one_byte_per_ns():
    """Burst 1000 B, 2e9 B overdrawn at t = 0: paid back at 1 B/ns after 2 s, so the plane may
    send again at 2e9 + 1 ns (tokens > 0), not before."""
    p = PlanePacer([0], rate_Bps=1e9, burst_bytes=1000)
    p.consume(0, 1000 + 2_000_000_000, 0)
    assert p.next_send_ns(0, 0) == 2_000_000_001
    assert not p.can_send(0, 2_000_000_000)
    assert p.can_send(0, 2_000_000_001)


def test_pacer_parameters_must_be_positive_and_one_is_enough():
    PlanePacer([0], rate_Bps=1, burst_bytes=1)
    for rate, burst in ((0, 1000), (1e9, 0)):
        with pytest.raises(ValueError, match="pacer rate_Bps and burst_bytes must be positive"):
            PlanePacer([0], rate_Bps=rate, burst_bytes=burst)


def test_a_stale_earlier_time_does_not_refill_the_same_interval_twice():
    """1 B/ns, 4000 B overdrawn at t = 0: at 1000 ns 1000 B are paid back; a call stamped 500 ns
    (an earlier clock reading) changes nothing, so at 1000 ns the deficit is still 3000 B."""
    p = PlanePacer([0], rate_Bps=1e9, burst_bytes=1000)
    p.consume(0, 5000, 0)
    assert p.next_send_ns(0, 1000) == 1000 + 3000 + 1
    assert not p.can_send(0, 500)
    assert p.next_send_ns(0, 1000) == 1000 + 3000 + 1
