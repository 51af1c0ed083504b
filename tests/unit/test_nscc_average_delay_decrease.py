"""NSCC's multiplicative decrease on an averaged delay (uet-htsim UecSrc): an ECN echo on an ACK
whose own delay is high cuts the window only while the average queueing delay is above the
target, so ECN on a path with a short queue moves traffic (the EV skip) without cutting the
window on every jittery ACK. Fake clock (times passed in); expected values by hand."""
import pytest

from traffic.nscc import OUTLIER_DELAY_GAIN, Nscc, NsccResponse

RTT = 1_000_000                    # base RTT 1 ms, target 1 ms (no trimming)
RATE = 1_000_000                   # 1 MB/s: BDP 1,000 bytes
MSS = 100


def cc(gain=None):
    return Nscc(base_rtt_ns=RTT, link_rate_Bps=RATE, mss=MSS, delay_avg_gain=gain)


def test_a_marked_jittery_ack_does_not_cut_when_the_average_is_low():
    n = cc(gain=0.5)
    before = n.cwnd
    # delay 2 ms (>= target: the MD row) but the average starts at 0: 0.5 * 2 ms = 1 ms ...
    assert n.on_ack(0, 3 * RTT, True, 0) == NsccResponse.MULTIPLICATIVE_DECREASE
    assert n.avg_delay_ns == pytest.approx(1_000_000)
    # ... which equals the target: factor 1 - 0.8 * 0 / 1 = 1, the window keeps its size
    assert n.cwnd == pytest.approx(before)
    # the same ACK with the sample alone cuts: factor max(1 - 0.8 * (2 - 1) / 2, 0.5) = 0.6
    raw = cc()
    raw.on_ack(0, 3 * RTT, True, 0)
    assert raw.cwnd == pytest.approx(0.6 * before)


def test_a_sustained_queue_cuts_by_the_average():
    n = cc(gain=0.5)
    before = n.cwnd
    # marked ACKs with delay 3 ms every 0.4 ms: average 1.5, 2.25 ms; the first sees it at
    # 1.5 ms > 1 ms and cuts by 1 - 0.8 * 0.5 / 1.5 = 0.7333
    n.on_ack(0, 4 * RTT, True, 0)
    assert n.cwnd == pytest.approx(before * (1 - 0.8 * 0.5 / 1.5))
    after_first = n.cwnd
    n.on_ack(0, 4 * RTT, True, 400_000)          # within one base RTT: no second cut
    assert n.avg_delay_ns == pytest.approx(2_250_000)
    assert n.cwnd == pytest.approx(after_first)
    n.on_ack(0, 4 * RTT, True, 1_000_000)        # a base RTT later: average 2.625 ms
    assert n.cwnd == pytest.approx(after_first * (1 - 0.8 * 1.625 / 2.625))


def test_delay_without_ecn_pulls_the_average_towards_a_quarter_base_rtt():
    n = cc(gain=0.5)
    n.avg_delay_ns = 2_000_000
    n.on_ack(0, 5 * RTT, False, 0)               # 4 ms, unmarked: sample base / 4 = 0.25 ms
    assert n.avg_delay_ns == pytest.approx(0.5 * 250_000 + 0.5 * 2_000_000)
    n.on_ack(0, RTT + 500_000, False, 1)         # 0.5 ms < target: the sample itself
    assert n.avg_delay_ns == pytest.approx(0.5 * 500_000 + 0.5 * 1_125_000)


def test_outliers_above_five_base_rtts_enter_with_the_small_gain():
    n = cc(gain=0.5)
    n.on_ack(0, 11 * RTT, True, 0)               # marked, delay 10 ms > 5 base RTTs
    assert n.avg_delay_ns == pytest.approx(OUTLIER_DELAY_GAIN * 10_000_000)


def test_gain_is_validated():
    for bad in (0, -0.1, 1.5):
        with pytest.raises(ValueError, match="delay_avg_gain"):
            cc(gain=bad)
    assert cc(gain=1).delay_avg_gain == 1
