"""NSCC against UEC's reference model, rule by rule: ultraethernet/uet-htsim htsim/sim/uec.cpp
(revision 40ccb05), UecSrc. Each test names the lines it follows; every expected number is
worked by hand from the reference's formula.

The flow of most tests: base RTT 2 ms, 25 MB/s, MSS 8832 -> network BDP 50,000 B, a = 50,000 /
(100 Gbit/s x 12 us = 150,000 B) = 1/3, target 2 ms (no trimming), max_cwnd 1.5 BDP = 75,000 B.
"""
import pytest

from traffic.core.nscc import Nscc, NsccResponse

pytestmark = pytest.mark.core

MS = 1_000_000
RTT = 2 * MS
MSS = 8832


def nscc(**kw):
    args = dict(base_rtt_ns=RTT, link_rate_Bps=25_000_000, mss=MSS)
    args.update(kw)
    return Nscc(**args)


def one_window_at(cc: Nscc, delay_ns: int) -> float:
    """Ack exactly one window (cwnd bytes) at `delay_ns` in one ACK, applied at once
    (adjust_bytes_threshold is set low by the caller); returns what the window gained."""
    before = cc.cwnd
    cc.on_ack(0, RTT + delay_ns, False, 0)          # opens the period: last_adjust = 0
    assert cc.on_ack(int(before), RTT + delay_ns, False, 1) == NsccResponse.PROPORTIONAL_INCREASE
    return cc.cwnd - before


def test_the_proportional_increase_is_additive():
    """uec.cpp:1217 `_inc_bytes += _alpha * newly_acked_bytes * (_target_Qdelay - delay)` with
    uec.cpp:124 `_alpha = 4.0*_mss*_scaling_factor_a*_scaling_factor_b/_target_Qdelay`, applied
    by uec.cpp:1260 `_cwnd += _inc_bytes / _cwnd`. A window W acked at delay d adds
    alpha x W x (target - d) / W = 4 MSS a b (1 - d / target), the same for any W.
    b = target / reference RTT = 2 ms / 2 ms = 1 (the reference RTT left to the network RTT):
    at d = 0, 4 x 8832 / 3 = 11,776 B from 25,000 and from 50,000 alike; at d = 1 ms half
    that, 5,888 B. (Multiplied by cwnd, the window would double: +25,000 and +50,000.)"""
    for start in (0.5, 1.0):
        cc = nscc(initial_window_bdp=start, adjust_bytes_threshold=1000)
        assert one_window_at(cc, 0) == pytest.approx(11_776)
    cc = nscc(initial_window_bdp=0.5, adjust_bytes_threshold=1000)
    assert one_window_at(cc, 1 * MS) == pytest.approx(5_888)


def test_htsims_reference_network_gains_three_mss_per_window_with_trimming():
    """uec.cpp:121-124 on htsim's own network (100 Gbit/s, 12 us, MSS 4096, trimming):
    target = 0.75 x 12 us = 9 us (uec.cpp:108), a = 1, b = 9 / 12 = 0.75 (uec.cpp:122),
    alpha = 4 x 4096 x 1 x 0.75 / 9,000 ns = 1.36533 B/ns: a window at zero delay adds
    4 x 4096 x 0.75 = 12,288 B = 3 MSS, 0.082 of the 150,000 B BDP. The reference RTT set to
    12 us or left to the network RTT (also 12 us here) gives the same."""
    for ref in (None, 12_000):
        cc = Nscc(base_rtt_ns=12_000, link_rate_Bps=100e9 / 8, mss=4096, target_frac=0.75,
                  initial_window_bdp=1.0, adjust_bytes_threshold=1000, reference_rtt_ns=ref)
        assert cc.target_ns == 9_000 and cc.alpha == pytest.approx(4 * 4096 * 0.75 / 9_000)
        before = cc.cwnd
        cc.on_ack(0, 12_000, False, 0)
        cc.on_ack(150_000, 12_000, False, 1)
        assert cc.cwnd - before == pytest.approx(12_288)


def test_a_reference_rtt_of_12_us_gives_htsims_alpha_literally():
    """uec.cpp:122 `_scaling_factor_b = _target_Qdelay / _reference_network_rtt` with the
    reference RTT 12 us (uec.cpp:94): b = 2 ms / 12 us = 166.67, alpha = 4 x 8832 / 3 x
    166.67 / 2 ms = 0.981333 B/ns, so one window at zero delay would add 11,776 x 166.67 =
    1,962,667 B (39 BDPs): the window goes to max_cwnd at once."""
    cc = nscc(reference_rtt_ns=12_000, initial_window_bdp=0.5, adjust_bytes_threshold=1000)
    assert cc.alpha == pytest.approx(11_776 * (2 * MS / 12_000) / (2 * MS))
    one_window_at(cc, 0)
    assert cc.cwnd == 75_000


def test_the_initial_window_is_max_cwnd():
    """uec.cpp:166 `setMaxWnd(1.5*_bdp)` and uec.cpp:170 `_cwnd = _maxwnd`: 1.5 x 50,000 =
    75,000 B; with max_cwnd configured, that."""
    assert nscc().cwnd == 75_000
    assert nscc(max_cwnd=60_000).cwnd == 60_000


def test_target_fi_eta_stay_when_the_base_rtt_changes():
    """uec.cpp:104-134 (initNsccParams) fix target, alpha, fi, eta, fi_scale, qa_threshold and
    the adjust period once; uec.cpp:1389-1393 (update_base_rtt) changes only the BDP and
    _maxwnd. A base RTT of 1 ms measured later: BDP 25,000, max 37,500 (cwnd capped to it),
    gate 37,500 >> 3 = 4,687; target still 2 ms, qa_threshold 8 ms, period 2 ms, fi 14,720,
    eta 441.6, fi_scale 0.25 / 3, alpha 0.005888 B/ns."""
    cc = nscc()
    cc.set_base_rtt(1 * MS)
    assert (cc.bdp, cc.max_window, cc.cwnd, cc.qa_gate_bytes) == (25_000, 37_500, 37_500, 4_687)
    assert cc.target_ns == 2 * MS and cc.qa_threshold_ns == 8 * MS
    assert cc.adjust_period_ns == 2 * MS
    assert cc.fi == pytest.approx(14_720) and cc.eta == pytest.approx(441.6)
    assert cc.fi_scale == pytest.approx(0.25 / 3) and cc.alpha == pytest.approx(0.005888)
    assert cc.network_rtt_ns == 2 * MS and cc.base_rtt_ns == 1 * MS


def test_the_fast_increase_threshold_is_the_reference_rtt_over_12():
    """uec.cpp:1222 `if (delay < timeFromUs(1u))`: 1 us, 1/12 of htsim's 12 us reference RTT.
    With the reference RTT 12 us: cwnd 25,000; 20,000 B at 999 ns count (not yet a window:
    proportional), 10,000 B more make 30,000 > 25,000: fast increase, cwnd += 10,000 x
    0.25 / 3 = 833.33. At 1,000 ns the count starts over (proportional)."""
    cc = nscc(reference_rtt_ns=12_000, initial_window_bdp=0.5)
    assert cc.fast_delay_ns == pytest.approx(1_000)
    assert cc.on_ack(20_000, RTT + 999, False, 0) == NsccResponse.PROPORTIONAL_INCREASE
    assert cc.on_ack(10_000, RTT + 999, False, 1) == NsccResponse.FAST_INCREASE
    assert cc.cwnd == pytest.approx(25_000 + 10_000 / 12)
    assert cc.on_ack(10_000, RTT + 1_000, False, 2) == NsccResponse.PROPORTIONAL_INCREASE
    assert cc.fi_count == 0


def test_the_fast_increase_threshold_follows_the_network_rtt_not_the_target():
    """Reference RTT left to the network RTT (2 ms): the threshold is 2 ms / 12 = 166,667 ns,
    also with trimming (target 1.5 ms; target / 12 would be 125,000 ns). A delay of 150,000 ns
    counts toward the fast increase: 30,000 B then 30,000 B more (60,000 > 50,000) ->
    cwnd 50,000 + 30,000 x 0.25 / 3 = 52,500."""
    cc = nscc(target_frac=0.75, initial_window_bdp=1.0)
    assert cc.target_ns == 1_500_000 and cc.fast_delay_ns == pytest.approx(2 * MS / 12)
    cc.on_ack(30_000, RTT + 150_000, False, 0)
    assert cc.on_ack(30_000, RTT + 150_000, False, 1) == NsccResponse.FAST_INCREASE
    assert cc.cwnd == pytest.approx(52_500)


def test_a_trimmed_nacks_delay_sample_is_the_network_rtt():
    """uec.cpp:1369 `update_delay(_base_rtt + _network_rtt, true, true)`: the sample is the
    network RTT (2 ms, what the connection started with), not the base RTT measured since
    (1 ms). Gain 0.5: avg 0 -> 1 ms (the base RTT would give 0.5 ms). uec.cpp:1381: no quick
    adapt (its first window only opens), so 8,832 B come off: 37,500 -> 28,668."""
    cc = nscc(delay_alpha=0.5)
    cc.set_base_rtt(1 * MS)
    assert cc.on_trim_nack(0, MSS) is False
    assert cc.avg_delay_ns == pytest.approx(1 * MS)
    assert cc.cwnd == pytest.approx(37_500 - MSS) and cc.trigger_qa


def test_a_timeout_takes_one_packet_off_and_nothing_else():
    """uec.cpp:1300 (mark_packet_for_retransmission, from rtxTimerExpired uec.cpp:2368)
    `_cwnd = max(_cwnd - pktsize, _mtu)`: 75,000 - 8,832 = 66,168; the average stays 0 and
    quick adapt is not armed: an ACK after the first window (0 - 4 ms), which achieved nothing
    (below the gate 9,375), at no delay does not quick-adapt. Down to the floor: one MSS."""
    cc = nscc()
    cc.on_ack(1000, RTT, False, 0)
    cc.on_timeout(MSS)
    assert cc.cwnd == pytest.approx(66_168) and cc.avg_delay_ns == 0 and not cc.trigger_qa
    assert cc.on_ack(0, RTT, False, 4_100_000) != NsccResponse.QUICK_ADAPT
    for _ in range(10):
        cc.on_timeout(MSS)
    assert cc.cwnd == MSS
