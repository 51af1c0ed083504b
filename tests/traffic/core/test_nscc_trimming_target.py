"""NSCC's proportional increase with trimming on (target = 0.75 base RTT, traffic/core/nscc.py).

UEC's rule (uet-htsim UecSrc::proportional_increase): below the target the window grows by
alpha x acked x (target - delay), alpha a constant of the flow, so at delays d1 and d2 the
growth is in the ratio (target - d1) / (target - d2). Checked as that ratio, not as an
absolute increment, so it holds whatever constant scales the increase (htsim applies it as
inc_bytes / cwnd once per adjustment, with a smoothed delay): many small ACKs at one constant
delay, the window far below its cap so it barely moves in relative terms.

Hand-worked, base RTT 1 ms, target 0.75 ms: delays 0.25 ms and 0.5 ms give
(0.75 - 0.25) / (0.75 - 0.5) = 2. Measured against the base RTT instead (the target of a
fabric without trimming) the same delays give (1 - 0.25) / (1 - 0.5) = 1.5.
"""
import pytest

from traffic.core.nscc import Nscc, NsccResponse

pytestmark = pytest.mark.core

RTT = 1_000_000                # 1 ms base RTT
ACKS, ACKED = 2000, 100        # 200 kB acknowledged in all, per instance


def growth(delay_ns: int) -> float:
    """Window growth over ACKS acknowledgements of ACKED bytes at a constant queueing delay,
    on a 10 GB/s link from a window of one BDP (10 MB, so 200 kB of growth is ~2% of it)."""
    cc = Nscc(base_rtt_ns=RTT, link_rate_Bps=10e9, mss=1000, target_frac=0.75,
              initial_window_bdp=1.0)
    assert cc.target_ns == 750_000
    start = cc.cwnd
    responses = {cc.on_ack(ACKED, RTT + delay_ns, False, 0) for _ in range(ACKS)}
    assert NsccResponse.PROPORTIONAL_INCREASE in responses
    return cc.cwnd - start


def test_proportional_increase_is_measured_from_the_trimming_target():
    near, far = growth(500_000), growth(250_000)
    assert near > 0
    assert far / near == pytest.approx(2.0, rel=0.1)


def test_just_below_the_trimming_target_the_increase_is_small():
    # delay 0.7 ms: (0.75 - 0.7) / (0.75 - 0.25) = 0.1 of the growth at 0.25 ms (against the
    # base RTT: 0.3 / 0.75 = 0.4)
    assert growth(700_000) / growth(250_000) == pytest.approx(0.1, rel=0.25)
