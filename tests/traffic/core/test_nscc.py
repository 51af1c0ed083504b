"""NSCC as UEC's reference model (uet-htsim htsim/sim/uec.cpp, traffic/core/nscc.py docstring) has
it: the quick-adapt gate, batched increases with eta, fast increase (fi_scale), the decrease on
the averaged delay, trimmed bytes off cwnd; and the per-plane pacer. The reference's arithmetic
rule by rule, with its lines in uec.cpp: tests/traffic/core/test_nscc_reference.py.

Hand-worked numbers: base RTT 2 ms, 25 MB/s, MSS 8832 -> BDP 50,000 B, max_cwnd 1.5 BDP =
75,000 B (also the initial window), scaling a = 50,000 / (100 Gbit/s x 12 us = 150,000 B) =
1/3, so fi = 5 x 8832 / 3 = 14,720 B, eta = 0.15 x 8832 / 3 = 441.6 B, fi_scale = 0.25 / 3,
target = 2 ms, qa_threshold = 8 ms, quick-adapt windows of base RTT + target = 4 ms, gate
75,000 >> 3 = 9,375 B, adjust_bytes_threshold 8 x 8832 = 70,656 B, adjust period 2 ms; the
reference RTT is the network RTT (2 ms): b = 1, alpha = 4 x 8832 / 3 / 2 ms = 0.005888 B/ns,
fast-increase delay 2 ms / 12.
"""
import pytest

from traffic.core.nscc import Nscc, NsccResponse, PlanePacer

pytestmark = pytest.mark.core

MS = 1_000_000
RTT = 2 * MS
MSS = 8832


def nscc(**kw):
    args = dict(base_rtt_ns=RTT, link_rate_Bps=25_000_000, mss=MSS)
    args.update(kw)
    return Nscc(**args)


def test_derived_knobs_by_hand():
    cc = nscc()
    assert cc.bdp == 50_000 and cc.max_window == 75_000 and cc.cwnd == 75_000
    assert cc.alpha == pytest.approx(0.005888) and cc.fast_delay_ns == pytest.approx(2 * MS / 12)
    assert cc.fi == pytest.approx(14_720) and cc.eta == pytest.approx(441.6)
    assert cc.fi_scale == pytest.approx(0.25 / 3)
    assert cc.target_ns == 2 * MS and cc.qa_threshold_ns == 8 * MS
    assert cc.qa_gate_bytes == 9_375 and cc.adjust_bytes_threshold == 70_656
    assert cc.adjust_period_ns == 2 * MS
    trimming = nscc(target_frac=0.75)
    assert trimming.target_ns == 1.5 * MS and trimming.qa_threshold_ns == 6 * MS


def test_the_issue_example_a_flow_at_0_8_bdp_keeps_its_window_on_one_loss():
    """Two RTTs of ACKs at 0.8 BDP (8,000 B every 0.4 ms, no queueing), then one lost MSS.
    The first ACK opens the quick-adapt window (0 - 4 ms); the next nine ACK 72,000 B in it,
    far above the gate (9,375 B): no quick adapt (the old rule cut cwnd to 40,000). The loss
    takes its 8,832 B off the window: 75,000 - 8,832 = 66,168."""
    cc = nscc(initial_window_bdp=1.5)
    for i in range(10):
        cc.on_ack(8000, RTT, False, i * 400_000)
    assert cc.cwnd == 75_000
    assert cc.on_trim_nack(4_400_000, nacked_bytes=MSS) is False
    assert cc.cwnd == pytest.approx(66_168)
    assert cc.counts["quick_adapt"] == 0


def test_quick_adapt_fires_below_the_gate_and_not_at_it():
    """Window 0 - 4 ms achieves 9,000 B (< 9,375): a loss at 4.5 ms cuts cwnd to 9,000. With
    9,375 B achieved (not below the gate) the loss only takes its bytes off: 75,000 - 8,832."""
    cc = nscc(initial_window_bdp=1.5)
    cc.on_ack(1000, RTT, False, 0)                 # opens the window; reset to 0 bytes
    cc.on_ack(4500, 3 * MS, False, 1 * MS)
    cc.on_ack(4500, 3 * MS, False, 2 * MS)
    assert cc.on_trim_nack(4_500_000, nacked_bytes=MSS) is True
    assert cc.cwnd == 9_000 and cc.last_response == NsccResponse.QUICK_ADAPT
    cc = nscc(initial_window_bdp=1.5)
    cc.on_ack(1000, RTT, False, 0)
    cc.on_ack(4687, 3 * MS, False, 1 * MS)
    cc.on_ack(4688, 3 * MS, False, 2 * MS)
    assert cc.on_trim_nack(4_500_000, nacked_bytes=MSS) is False
    assert cc.cwnd == pytest.approx(75_000 - MSS)


def test_a_loss_inside_the_window_arms_quick_adapt_for_the_windows_end():
    """Loss at 1.5 ms: the window (0 - 4 ms) is not over, so 8,832 B come off cwnd (75,000 ->
    66,168) and quick adapt is armed; the first ACK after 4 ms runs it: the window achieved
    3,000 + 2,000 (the 2,000 of that ACK count) -> cwnd 8,832 (the floor, one MSS)."""
    cc = nscc(initial_window_bdp=1.5)
    cc.on_ack(1000, RTT, False, 0)
    cc.on_ack(3000, RTT, False, 1 * MS)
    assert cc.on_trim_nack(1_500_000, nacked_bytes=MSS) is False
    assert cc.cwnd == pytest.approx(66_168)
    assert cc.on_ack(2000, RTT, False, 4_100_000) == NsccResponse.QUICK_ADAPT
    assert cc.cwnd == MSS
    assert cc.counts["quick_adapt_on_loss"] == 1


def test_after_a_quick_adapt_losses_of_the_bytes_then_in_flight_are_ignored():
    """Quick adapt with 20,000 B in flight (cwnd -> 5,000). Then lost 8,832 B, an ECN ACK of
    1,000 B (delay 3 ms >= target would decrease) and lost 8,832 B: 18,664 B accounted, all
    below 20,000, ignored. A loss of 2,000 B makes 20,664: that one comes off (-> 3,000)."""
    cc = nscc(initial_window_bdp=1.5, min_window=1000)
    cc.on_ack(1000, RTT, False, 0)
    cc.on_ack(5000, RTT, False, 1 * MS)
    assert cc.on_trim_nack(4_500_000, nacked_bytes=MSS, inflight_bytes=20_000) is True
    assert cc.cwnd == 5000
    assert cc.on_trim_nack(4_600_000, nacked_bytes=MSS) is False
    assert cc.cwnd == 5000 and cc.last_response == NsccResponse.IGNORED
    assert cc.on_ack(1000, RTT + 3 * MS, True, 4_650_000) == NsccResponse.IGNORED
    assert cc.on_trim_nack(4_700_000, nacked_bytes=MSS) is False
    assert cc.cwnd == 5000
    assert cc.on_trim_nack(4_800_000, nacked_bytes=2000) is False
    assert cc.cwnd == 3000


def test_timeouts_and_disabled_quick_adapt_only_take_the_bytes_off():
    """A timeout takes its packet off and arms nothing; a trim with quick adapt disabled takes
    its bytes off: 75,000 - 8,832 = 66,168 either way."""
    cc = nscc(initial_window_bdp=1.5)
    cc.on_ack(1000, RTT, False, 0)
    assert cc.on_timeout(MSS) is None
    assert cc.cwnd == pytest.approx(66_168) and not cc.trigger_qa
    cc = nscc(initial_window_bdp=1.5, disable_qa=True)
    cc.on_ack(1000, RTT, False, 0)
    assert cc.on_trim_nack(5 * MS, nacked_bytes=MSS) is False
    assert cc.cwnd == pytest.approx(66_168)


def test_delay_above_qa_threshold_quick_adapts_at_the_windows_end():
    """No loss, no ECN: an ACK with 8.5 ms of queueing (> 8 ms) after the window of 0 - 4 ms
    that achieved 6,000 B cuts cwnd to 6,000; 8 ms exactly does not."""
    cc = nscc(initial_window_bdp=1.5, min_window=1000)
    cc.on_ack(1000, RTT, False, 0)
    cc.on_ack(6000, RTT, False, 1 * MS)
    assert cc.on_ack(0, RTT + 8 * MS, False, 4_100_000) == NsccResponse.FAIR_INCREASE
    cc = nscc(initial_window_bdp=1.5, min_window=1000)
    cc.on_ack(1000, RTT, False, 0)
    cc.on_ack(6000, RTT, False, 1 * MS)
    assert cc.on_ack(0, RTT + 8_500_000, False, 4_100_000) == NsccResponse.QUICK_ADAPT
    assert cc.cwnd == 6000 and cc.counts["quick_adapt_on_delay"] == 1


def test_fair_increase_is_batched_and_eta_comes_once_per_period():
    """cwnd 50,000; delay 2.5 ms >= target, no ECN. ACK 10,000 at 0: pending 14,720 x 10,000,
    cwnd unchanged. ACK 61,000 at 1 ms: 71,000 B > 70,656 -> cwnd += 14,720 x 71,000 / 50,000
    = 20,902.4 (no eta: 1 ms < 2 ms). ACK 1,000 at 2.5 ms (2.5 ms since the period began): cwnd
    += 14,720 x 1,000 / 70,902.4, plus eta 441.6."""
    cc = nscc(initial_window_bdp=1.0)
    assert cc.on_ack(10_000, RTT + 2_500_000, False, 0) == NsccResponse.FAIR_INCREASE
    assert cc.cwnd == 50_000
    cc.on_ack(61_000, RTT + 2_500_000, False, 1 * MS)
    assert cc.cwnd == pytest.approx(70_902.4)
    cc.on_ack(1000, RTT + 2_500_000, False, 2_500_000)
    assert cc.cwnd == pytest.approx(70_902.4 + 14_720 * 1000 / 70_902.4 + 441.6)


def test_proportional_increase_is_batched():
    """cwnd 25,000 (0.5 BDP), alpha 0.005888 B/ns. Delay 1 ms: 0.005888 x 10,000 x 1 ms =
    58,880,000 pending; delay 1.5 ms: 0.005888 x 61,000 x 0.5 ms = 179,584,000; 71,000 B >
    70,656 -> cwnd 25,000 + 238,464,000 / 25,000 = 34,538.56."""
    cc = nscc(initial_window_bdp=0.5)
    assert cc.on_ack(10_000, RTT + 1 * MS, False, 0) == NsccResponse.PROPORTIONAL_INCREASE
    assert cc.cwnd == 25_000
    cc.on_ack(61_000, RTT + 1_500_000, False, 100_000)
    assert cc.cwnd == pytest.approx(34_538.56)


def test_fast_increase_after_a_window_at_near_zero_delay():
    """Delay 0 (< 2 ms / 12): 30,000 B (not yet a window of 50,000) -> proportional; 30,000 B
    more (60,000 > 50,000) -> fast increase at once: 50,000 + 30,000 x 0.25 / 3 = 52,500."""
    cc = nscc(initial_window_bdp=1.0)
    assert cc.on_ack(30_000, RTT, False, 0) == NsccResponse.PROPORTIONAL_INCREASE
    assert cc.on_ack(30_000, RTT, False, 100_000) == NsccResponse.FAST_INCREASE
    assert cc.cwnd == pytest.approx(52_500)


def test_multiplicative_decrease_reads_the_averaged_delay():
    """ECN with 4 ms of delay. With htsim's gain 0.0125 one sample moves the average to 50 us,
    below the 2 ms target: no decrease (the old rule: x 0.6 on the instantaneous delay). With
    gain 1 the average is the 4 ms: factor max(1 - 0.8 x (4 - 2) / 4, 0.5) = 0.6 -> 30,000; a
    second one within the base RTT does nothing, one base RTT later it applies again."""
    cc = nscc(initial_window_bdp=1.0)
    assert cc.on_ack(0, RTT + 4 * MS, True, 0) == NsccResponse.MULTIPLICATIVE_DECREASE
    assert cc.avg_delay_ns == pytest.approx(50_000) and cc.cwnd == 50_000
    cc = nscc(delay_alpha=1.0, initial_window_bdp=1.0)
    cc.on_ack(0, RTT + 4 * MS, True, 0)
    assert cc.cwnd == pytest.approx(30_000)
    cc.on_ack(0, RTT + 4 * MS, True, RTT - 1)
    assert cc.cwnd == pytest.approx(30_000)
    cc.on_ack(0, RTT + 4 * MS, True, RTT)
    assert cc.cwnd == pytest.approx(18_000)
    cc = nscc(delay_alpha=1.0, gamma=0.8, initial_window_bdp=1.0)
    cc.on_ack(0, RTT + 20 * MS, True, 0)        # 1 - 0.8 x 18/20 = 0.28 -> bounded at 0.5
    assert cc.cwnd == pytest.approx(25_000)


def test_the_average_counts_unmarked_high_delay_as_a_quarter_rtt_and_a_loss_as_one_rtt():
    """Gain 0.5. No ECN, 3 ms (> target): sample 0.5 ms -> avg 250 us. ECN, 1 ms: 625 us.
    A trimmed NACK: sample one network RTT, 2 ms -> 1,312.5 us."""
    cc = nscc(delay_alpha=0.5)
    cc.on_ack(1000, RTT + 3 * MS, False, 0)
    assert cc.avg_delay_ns == pytest.approx(250_000)
    cc.on_ack(1000, RTT + 1 * MS, True, 1000)
    assert cc.avg_delay_ns == pytest.approx(625_000)
    cc.on_trim_nack(2000, nacked_bytes=0)
    assert cc.avg_delay_ns == pytest.approx(1_312_500)


def test_ecn_below_target_changes_nothing_and_bounds_hold():
    cc = nscc(initial_window_bdp=1.0)
    assert cc.on_ack(1000, RTT + 10_000, True, 0) == NsccResponse.NO_CHANGE
    assert cc.cwnd == 50_000
    assert nscc(initial_window_bdp=3).cwnd == 75_000
    assert nscc(max_cwnd=60_000, initial_window_bdp=3).cwnd == 60_000
    cc = nscc(initial_window_bdp=1.5)
    cc.set_base_rtt(1 * MS)                        # BDP 25,000 -> max 37,500
    assert cc.cwnd == 37_500 and cc.qa_gate_bytes == 37_500 >> 3
    for kw, msg in (({"max_md_jump": 0}, "max_md_jump"), ({"max_md_jump": 0.51}, "max_md_jump"),
                    ({"qa_gate": 32}, "qa_gate"), ({"mss": 0}, "must be positive")):
        with pytest.raises(ValueError, match=msg):
            nscc(**kw)


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


def test_the_knobs_given_are_the_knobs_kept_and_their_bounds_are_inclusive():
    """Explicit fi / adjust_bytes_threshold replace the derived ones; qa_gate 31 (the largest
    shift of a 32-bit window) and a reference RTT of 1 ns are legal, a reference RTT of 0 or
    below is not."""
    cc = nscc(fi=1234.0, adjust_bytes_threshold=4321)
    assert cc.fi == 1234.0 and cc.adjust_bytes_threshold == 4321
    assert nscc(qa_gate=31).qa_gate == 31 and nscc(qa_gate=0).qa_gate == 0
    assert nscc(reference_rtt_ns=1).reference_rtt_ns == 1
    for bad in (0, -5):
        with pytest.raises(ValueError, match="reference_rtt_ns must be positive"):
            nscc(reference_rtt_ns=bad)
