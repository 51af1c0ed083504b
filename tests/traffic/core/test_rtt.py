"""RttEstimator: base RTT, srtt / rttvar (RFC 6298 gains) and the timers derived from them,
checked against arithmetic by hand."""

import pytest

from traffic.core.qp_config import MRCConfig
from traffic.core.rtt import RttEstimator

pytestmark = pytest.mark.core

MS = 1_000_000


def test_rto_before_any_sample_is_linear_then_exponential_and_capped():
    """Growing linear phase: 4 ms x (t + 1) for t <= 7, then the last linear interval (32 ms)
    doubled per exponential retry: 64, 128, then the 200 ms cap. No jump at the phase change."""
    est = RttEstimator(MRCConfig(base_rtt_ns=MS, rto_min_ns=MS, rto_rtts=4.0,
                                 retry_linear_count=7, rto_max_ns=200 * MS,
                                 retry_fixed_interval=False))
    assert est.rto_base_ns() == 4 * MS                 # max(1 ms, 4 x 1 ms)
    assert [est.rto_ns(t) // MS for t in range(11)] == [4, 8, 12, 16, 20, 24, 28, 32,
                                                        64, 128, 200]


def test_samples_set_base_srtt_and_rttvar():
    est = RttEstimator(MRCConfig(base_rtt_ns=MS, rto_min_ns=MS, rto_rtts=4.0))
    assert est.update(2 * MS) is True                  # first sample replaces the guess
    assert (est.base_rtt_ns, est.srtt_ns, est.rttvar_ns) == (2 * MS, 2 * MS, 1 * MS)
    assert est.rto_base_ns() == 8 * MS                 # max(1, 4 x 2, 2 + 4 x 1) ms
    assert est.update(4 * MS) is False                 # larger: base unchanged
    assert est.base_rtt_ns == 2 * MS
    assert est.rttvar_ns == 1.25 * MS                  # 0.75 x 1 + 0.25 x |2 - 4|
    assert est.srtt_ns == 2.25 * MS                    # 0.875 x 2 + 0.125 x 4
    assert est.rto_base_ns() == 8 * MS                 # max(1, 4 x 2, 2.25 + 4 x 1.25) ms
    assert est.update(MS) is True and est.base_rtt_ns == MS


def test_queueing_is_judged_only_against_a_measured_base():
    est = RttEstimator(MRCConfig(base_rtt_ns=MS, congestion_delay_rtts=1.0))
    assert not est.queued(50 * MS)                     # the configured guess may be wrong
    est.update(2 * MS)
    assert est.queued(4 * MS) and not est.queued(4 * MS - 1)   # >= 1 base RTT of queueing


def test_reorder_window_follows_srtt_not_the_trim_bound():
    """The window is reorder_rtts base RTTs or srtt + 4 rttvar - base; the trim bound (5 ms)
    is in the RTO once (base + bound = 6 ms, above 4 x base = 4 ms) and not in the window."""
    est = RttEstimator(MRCConfig(base_rtt_ns=MS, reorder_rtts=0.5))
    assert est.reorder_window_ns() == MS // 2
    est.update(2 * MS)
    est.update(4 * MS)
    assert est.reorder_window_ns() == int(5.25 * MS)   # 2.25 + 4 x 1.25 - 2
    fixed = RttEstimator(MRCConfig(base_rtt_ns=MS, adaptive_reorder=False,
                                   fabric_delay_bound_ns=5 * MS))
    assert fixed.reorder_window_ns() == MS // 2
    assert fixed.rto_base_ns() == 6 * MS               # base + 1 x bound beats 4 x base


def test_a_fixed_rto_overrides_the_estimate():
    est = RttEstimator(MRCConfig(rto_ns=9 * MS))
    est.update(50 * MS)
    assert est.rto_base_ns() == 9 * MS and est.rto_ns(1) == 9 * MS    # fixed interval
    assert est.rto_ns(8) == 18 * MS                    # the first exponential retry


def test_timers_asked_for_before_a_sample_follow_the_samples_after_it():
    """RTO and reorder window read between samples (as the sender does per packet) are those
    of the samples so far: 4 x 1 ms base; then 1 ms and 9 ms samples give srtt 2 ms and
    rttvar 2.375 ms (RFC 6298 gains), srtt + 4 rttvar = 11.5 ms, reorder 11.5 - 1 = 10.5 ms."""
    est = RttEstimator(MRCConfig(base_rtt_ns=MS, rto_min_ns=MS, rto_rtts=4.0,
                                 reorder_rtts=0.5))
    assert (est.rto_ns(0), est.reorder_window_ns()) == (4 * MS, MS // 2)
    est.update(MS)
    assert (est.rto_ns(0), est.reorder_window_ns()) == (4 * MS, int(2.0 * MS))
    est.update(9 * MS)
    assert est.rto_ns(0) == int(11.5 * MS) and est.rto_ns(8) == int(23 * MS)
    assert est.reorder_window_ns() == int(10.5 * MS)


def test_timers_start_from_the_measured_base_rtt_with_no_floor():
    """Probes measured 0.15 ms: 16 base RTTs are 2.4 ms (above the 1 ms rto_min_ns), no 2 ms
    floor in between."""
    est = RttEstimator(MRCConfig(base_rtt_ns=150_000, rto_rtts=16.0))
    assert est.base_rtt_ns == 150_000
    assert est.rto_base_ns() == 2_400_000


def test_until_a_sample_the_base_is_a_full_frame_s_round_trip():
    """Probes measured 0.15 ms; a 9000-byte frame stored and forwarded on 4 links of 100 Mbit/s
    adds 4 x 0.72 ms = 2.88 ms (nscc_frame_rtt_ns). Before any sample the base is 3.03 ms, so
    the first data packets' RTO is 16 x 3.03 = 48.48 ms, not 16 x the probe's 0.15 ms (which a
    full frame's round trip alone exceeds); the first sample replaces it."""
    est = RttEstimator(MRCConfig(base_rtt_ns=150_000, nscc_frame_rtt_ns=2_880_000,
                                 rto_rtts=16.0))
    assert est.base_rtt_ns == 3_030_000
    assert est.rto_base_ns() == 48_480_000
    assert est.update(3_200_000) is True
    assert est.base_rtt_ns == 3_200_000
