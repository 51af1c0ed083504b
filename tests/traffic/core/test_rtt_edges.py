"""RttEstimator edges the main RTT tests leave open, by hand from the rules in traffic/core/rtt.py:
an equal sample is not a new base, srtt + 4 rttvar can set the RTO, the exponential phase with
fewer than two linear retries, and "at least 1 ns" / "only once measured" at their limits."""
from traffic.core.qp_config import MRCConfig
from traffic.core.rtt import RttEstimator

MS = 1_000_000


def test_a_sample_equal_to_the_base_is_not_a_new_base():
    est = RttEstimator(MRCConfig(base_rtt_ns=MS))
    assert est.update(2 * MS) is True
    assert est.update(2 * MS) is False


def test_srtt_plus_four_rttvar_sets_the_rto_when_it_is_the_largest():
    est = RttEstimator(MRCConfig(base_rtt_ns=MS, rto_min_ns=MS, rto_rtts=1.0))
    est.update(2 * MS)                                 # srtt 2 ms, rttvar 1 ms
    assert est.rto_base_ns() == 6 * MS                 # max(1, 1 x 2, 2 + 4 x 1) ms


def test_exponential_phase_after_zero_or_a_few_linear_retries():
    """Growing: base x (t + 1) for t <= linear count; then the last linear interval, base x
    (linear count + 1), doubled per exponential retry: x 2^(t - linear count). Fixed (OCP):
    base for t <= linear count, then base x 2^(t - linear count)."""
    def rtos(lin, fixed):
        est = RttEstimator(MRCConfig(rto_ns=MS, retry_linear_count=lin, rto_max_ns=100 * MS,
                                     retry_fixed_interval=fixed))
        return [est.rto_ns(t) // MS for t in range(5)]
    assert rtos(0, False) == [1, 2, 4, 8, 16]
    assert rtos(1, False) == [1, 2, 4, 8, 16]
    assert rtos(2, False) == [1, 2, 3, 6, 12]
    assert rtos(0, True) == [1, 2, 4, 8, 16]
    assert rtos(2, True) == [1, 1, 1, 2, 4]


def test_limits_of_rtts_and_queued():
    est = RttEstimator(MRCConfig(base_rtt_ns=MS))
    assert est.rtts(0) == 1 and est.rtts(0.5) == MS // 2
    assert est.queued(50 * MS) is False               # a bool, before any measurement
