"""NSCC four-way response, quick adapt, window bounds, and the per-plane pacer."""
import pytest

from traffic.nscc import Nscc, NsccResponse, PlanePacer

RTT = 1_000_000        # 1 ms base RTT
RATE = 12_500_000      # 100 Mbit/s -> BDP 12_500 B


def fresh(**kw):
    cc = Nscc(base_rtt_ns=RTT, link_rate_Bps=RATE, mss=1000, initial_window_bdp=0.5, **kw)
    return cc


def test_no_ecn_low_delay_proportional_increase_scales_with_distance_to_target():
    a, b = fresh(), fresh()
    w = a.cwnd
    assert a.on_ack(1000, RTT + 100_000, False, 0) == NsccResponse.PROPORTIONAL_INCREASE
    assert b.on_ack(1000, RTT + 800_000, False, 0) == NsccResponse.PROPORTIONAL_INCREASE
    assert a.cwnd - w == pytest.approx(1000 * 0.9)
    assert b.cwnd - w == pytest.approx(1000 * 0.2)


def test_no_ecn_high_delay_fair_increase():
    cc = fresh()
    w = cc.cwnd
    assert cc.on_ack(1000, 3 * RTT, False, 0) == NsccResponse.FAIR_INCREASE
    assert cc.cwnd - w == pytest.approx(1000 * 1000 / w)   # one MSS per window of ACKs


def test_ecn_high_delay_multiplicative_decrease_once_per_rtt_and_bounded():
    cc = fresh()
    w = cc.cwnd
    # delay = 2 RTT, target = RTT: factor = 1 - 0.8 * (2-1)/2 = 0.6
    assert cc.on_ack(0, 3 * RTT, True, 0) == NsccResponse.MULTIPLICATIVE_DECREASE
    assert cc.cwnd == pytest.approx(0.6 * w)
    w2 = cc.cwnd
    cc.on_ack(0, 3 * RTT, True, RTT // 2)        # same base RTT: no second decrease
    assert cc.cwnd == pytest.approx(w2)
    cc.on_ack(0, 3 * RTT, False, RTT // 2 + 1)   # fair increase in between
    w3 = cc.cwnd
    cc.on_ack(0, 4_500_000, True, RTT + 1)       # delay 3.5 RTT: 1-0.8*2.5/3.5 < 0.5 -> 0.5
    assert cc.cwnd == pytest.approx(max(w3 * 0.5, cc.min_window))


def test_ecn_low_delay_no_change():
    cc = fresh()
    w = cc.cwnd
    assert cc.on_ack(1000, RTT + 10_000, True, 0) == NsccResponse.NO_CHANGE
    assert cc.cwnd == w


def test_window_capped_at_1_5_bdp_and_floored_at_mss():
    cc = fresh()
    for i in range(200):
        cc.on_ack(5000, RTT, False, i * 1000)
    assert cc.cwnd == pytest.approx(1.5 * RATE * RTT / 1e9)
    for i in range(40):
        cc.on_ack(0, 3 * RTT, True, (i + 1) * 10 * RTT)
    assert cc.cwnd == cc.min_window == 1000


def test_quick_adapt_on_loss_drops_to_achieved_once_per_rtt():
    cc = Nscc(base_rtt_ns=RTT, link_rate_Bps=RATE, mss=1000, initial_window_bdp=1.5)
    cc.on_ack(3000, RTT, False, 0)
    cc.on_ack(1000, RTT, False, RTT + 1)         # new interval: previous one achieved 3000
    assert cc.on_loss(RTT + 2)
    assert cc.cwnd == pytest.approx(3000)
    assert not cc.on_loss(RTT + 3)               # at most once per base RTT
    assert cc.cwnd == pytest.approx(3000)


def test_trimming_target_is_three_quarters_rtt():
    cc = fresh(target_frac=0.75)
    assert cc.target_ns == 750_000
    assert cc.on_ack(1000, RTT + 800_000, False, 0) == NsccResponse.FAIR_INCREASE


def test_md_factor_bound_validated():
    with pytest.raises(ValueError, match="max_md"):
        Nscc(base_rtt_ns=RTT, link_rate_Bps=RATE, mss=1000, max_md=0.7)


def test_pacer_holds_rate_per_plane():
    pacer = PlanePacer([0, 1], rate_Bps=1_000_000, burst_bytes=2000)   # 1 MB/s = 1 byte/us
    sent = 0
    t = 0
    while t < 100_000_000:                       # 100 ms
        if pacer.can_send(0, t):
            pacer.consume(0, 1000, t)
            sent += 1000
        else:
            t = pacer.next_send_ns(0, t)
    assert 99_000 <= sent <= 103_000             # 100 KB in 100 ms plus one burst
    assert pacer.can_send(1, t)                  # planes are independent


# Hand-worked numbers below: link 10 MB/s, base RTT 1 ms -> BDP 10_000 B, initial window
# 1 BDP = 10_000 B, max window 1.5 BDP = 15_000 B, MSS 1000 B.
def ten_mbyte(**kw):
    return Nscc(base_rtt_ns=RTT, link_rate_Bps=10_000_000, mss=1000, **kw)


def test_trimming_target_turns_a_three_quarter_rtt_delay_into_fair_increase():
    """Delay 0.8 base RTT, no ECN. Default target (1 RTT): below target, proportional increase
    10_000 + 2000 x (1 - 0.8) = 10_400. Trimming target (0.75 RTT): at/above target, fair
    increase 10_000 + 1000 x 2000 / 10_000 = 10_200."""
    plain, trimming = ten_mbyte(), ten_mbyte(target_frac=0.75)
    assert plain.on_ack(2000, RTT + 800_000, False, 0) == NsccResponse.PROPORTIONAL_INCREASE
    assert plain.cwnd == pytest.approx(10_400)
    assert trimming.on_ack(2000, RTT + 800_000, False, 0) == NsccResponse.FAIR_INCREASE
    assert trimming.cwnd == pytest.approx(10_200)


def test_delay_above_four_targets_quick_adapts_to_what_was_acked_last_rtt():
    """Quick adapt is also driven by delay alone (> 4 x target, no ECN, no loss): the window
    falls to the bytes acknowledged in the last base RTT, at most once per base RTT."""
    cc = ten_mbyte()
    assert cc.on_ack(3000, RTT + 200_000, False, 0) == NsccResponse.PROPORTIONAL_INCREASE
    assert cc.cwnd == pytest.approx(10_000 + 3000 * 0.8)
    # exactly 4 targets of delay is not above the threshold: fair increase
    assert cc.on_ack(1000, RTT + 4 * RTT, False, 500_000) == NsccResponse.FAIR_INCREASE
    # one base RTT later the previous interval acked 3000 + 1000 = 4000 B
    assert cc.on_ack(500, RTT + 5 * RTT, False, RTT) == NsccResponse.QUICK_ADAPT
    assert cc.cwnd == pytest.approx(4000)
    # within the same base RTT: no second quick adapt; delay >= target -> fair increase
    assert cc.on_ack(500, RTT + 5 * RTT, False, RTT + 500_000) == NsccResponse.FAIR_INCREASE
    assert cc.cwnd == pytest.approx(4000 + 1000 * 500 / 4000)


def test_pacer_tokens_never_exceed_the_burst_after_idle():
    """Burst 3000 B at 1 MB/s: ten idle seconds still leave only 3000 B of tokens, so sending
    4000 B overdraws by 1000 B = 1 ms at 1 MB/s before the next packet may go."""
    pacer = PlanePacer([0, 1], rate_Bps=1_000_000, burst_bytes=3000)
    pacer.consume(0, 3000, 0)
    assert not pacer.can_send(0, 0)
    t = 10_000_000_000
    assert pacer.can_send(0, t)
    pacer.consume(0, 4000, t)
    assert not pacer.can_send(0, t)
    assert pacer.next_send_ns(0, t) == t + 1_000_000 + 1
    assert pacer.next_send_ns(0, t + 1_000_001) == t + 1_000_001
    # the other plane's bucket is its own: full burst, untouched
    pacer.consume(1, 2999, t)
    assert pacer.can_send(1, t)


def test_window_bounds_and_construction_by_hand():
    """BDP 10_000 B: initial 1 BDP, max 1.5 BDP; an initial window above the max is capped, one
    below min_window raised; a smaller base RTT shrinks the max (and the window with it)."""
    assert ten_mbyte().cwnd == 10_000 and ten_mbyte().max_window == 15_000
    assert ten_mbyte(initial_window_bdp=3).cwnd == 15_000
    assert ten_mbyte(initial_window_bdp=0.01, min_window=2500).cwnd == 2500
    assert ten_mbyte(max_window_bdp=0.1, min_window=2000).max_window == 2000
    cc = ten_mbyte(initial_window_bdp=1.5)
    cc.set_base_rtt(500_000)                               # BDP 5000 -> max 7500
    assert cc.base_rtt_ns == 500_000 and cc.cwnd == 7500
    cc.set_base_rtt(0)
    assert cc.base_rtt_ns == 1
    for kw, msg in (({"max_md": 0}, "max_md"), ({"max_md": 0.51}, "max_md"),
                    ({"mss": 0}, "must be positive")):
        with pytest.raises(ValueError, match=msg):
            Nscc(**{"base_rtt_ns": RTT, "link_rate_Bps": 1e7, "mss": 1000, **kw})
    with pytest.raises(ValueError, match="must be positive"):
        Nscc(base_rtt_ns=0, link_rate_Bps=1e7, mss=1000)
    with pytest.raises(ValueError, match="must be positive"):
        Nscc(base_rtt_ns=RTT, link_rate_Bps=0, mss=1000)


def test_md_once_per_base_rtt_boundary_and_gamma_by_hand():
    """gamma 0.5, delay 2 targets: factor = 1 - 0.5 x (2 - 1) / 2 = 0.75. A second ECN ack
    exactly one base RTT later decreases again (at most once PER base RTT, not less often)."""
    cc = ten_mbyte(gamma=0.5)
    assert cc.on_ack(0, 3 * RTT, True, 0) == NsccResponse.MULTIPLICATIVE_DECREASE
    assert cc.cwnd == pytest.approx(7500)
    cc.on_ack(0, 3 * RTT, True, RTT - 1)
    assert cc.cwnd == pytest.approx(7500)
    cc.on_ack(0, 3 * RTT, True, RTT)
    assert cc.cwnd == pytest.approx(7500 * 0.75)
    assert cc.last_response == NsccResponse.MULTIPLICATIVE_DECREASE


def test_ack_without_rtt_sample_counts_as_no_queueing():
    """No RTT sample (e.g. a SACK of a retransmission): delay taken as 0 -> proportional
    increase by the full acked bytes (alpha 1): 10_000 + 1500."""
    cc = ten_mbyte()
    assert cc.on_ack(1500, None, False, 0) == NsccResponse.PROPORTIONAL_INCREASE
    assert cc.cwnd == pytest.approx(11_500)


def test_quick_adapt_uses_the_better_of_the_last_and_current_interval():
    """Interval 1 acked 2000 B; interval 2 has already acked 6000 B when the loss comes: the
    window falls to 6000, not 2000. Before any ack the window falls to min_window (0 acked)."""
    cc = ten_mbyte()
    cc.on_ack(2000, RTT, False, 0)
    cc.on_ack(6000, RTT, False, RTT)
    assert cc.on_loss(RTT + 1) and cc.last_response == NsccResponse.QUICK_ADAPT
    assert cc.cwnd == pytest.approx(6000)
    fresh_cc = ten_mbyte()
    assert fresh_cc.on_loss(5) and fresh_cc.cwnd == 1000
    assert not fresh_cc.on_loss(5 + RTT - 1) and fresh_cc.on_loss(5 + RTT)


def test_quick_adapt_starts_the_measuring_interval_at_the_loss():
    """A loss before any ack opens the one-base-RTT measuring interval at the loss (t = 0):
    3000 B acked at 0.5 RTT fall in it, the 1000 B at 1 RTT open the next one. A loss at
    1 RTT then adapts to the complete interval's 3000 B."""
    cc = ten_mbyte(min_window=0)
    assert cc.on_loss(0) and cc.cwnd == 0                 # nothing acked yet: 0 bytes
    cc.on_ack(3000, RTT, False, RTT // 2)
    cc.on_ack(1000, RTT, False, RTT)
    assert cc.on_loss(RTT)
    assert cc.cwnd == pytest.approx(3000)


def test_counts_say_which_response_ran_and_what_triggered_each_quick_adapt():
    cc = fresh()
    cc.on_ack(1000, RTT + 100_000, False, 0)           # proportional increase
    cc.on_ack(1000, 3 * RTT, False, 1)                 # delay 2 RTT >= target: fair increase
    cc.on_ack(0, 3 * RTT, True, 2)                     # ECN and delay: multiplicative decrease
    cc.on_ack(0, RTT + 10_000, True, 3)                # ECN, little delay: no change
    cc.on_ack(1000, 6 * RTT, False, 4)                 # delay 5 RTT > 4 targets: quick adapt
    assert cc.on_loss(5) is False                      # within the same base RTT: not again
    assert cc.on_loss(4 + RTT) is True                 # a base RTT later: quick adapt on loss
    assert cc.counts == {"fair_increase": 1, "proportional_increase": 1,
                         "multiplicative_decrease": 1, "no_change": 1, "quick_adapt": 2,
                         "quick_adapt_on_delay": 1, "quick_adapt_on_loss": 1}
