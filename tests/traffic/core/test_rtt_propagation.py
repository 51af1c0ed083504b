"""Timers on a fabric with propagation delay: the margins in base RTTs multiply only the part of
the base RTT that is not propagation, and the propagation is added once (traffic/core/rtt.py).

By hand, random-loss.toml's fabric (host links 6.5 ms, fabric links 0.25 ms, hosts under
different T0s: 13.5 ms one way, model/propagation.py): propagation both ways P = 27 ms. The
probes measure 27.15 ms (0.15 ms of serialization and switching on top of P); a full frame adds
1.6 ms (nscc_frame_rtt_ns), so before any sample the base RTT is 28.75 ms and its variable part
V = 1.75 ms. A wait of n base RTTs is P + n V:
  RTO, rto_rtts 16:               27 + 16 x 1.75 = 55 ms (not 16 x 28.75 = 460 ms)
  forward probe timeout, 16:      55 ms
  reorder window, reorder_rtts 1: V = 1.75 ms (not 28.75 ms: every path of a QP has the same P)
The receiver side starts from the probes' 27.15 ms (V = 0.15 ms):
  reverse probe timeout, 16:      27 + 16 x 0.15 = 29.4 ms; with a 15 ms trim bound
                                  max(29.4, 27.15 + 15) = 42.15 ms
  reverse probe period, 8:        27 + 8 x 0.15 = 28.2 ms
  late after, reorder_rtts 1:     0.15 ms
"""
from __future__ import annotations

import random

import pytest

from traffic.core.evs import PathInfo
from traffic.core.memory import MemoryRegistry
from traffic.core.qp_config import MRCConfig
from traffic.core.receiver import ReceiverQP
from traffic.core.reverse_paths import ReversePaths
from traffic.core.rtt import RttEstimator, variable_rtt_ns, wait_ns
from traffic.core.sender import SenderQP

pytestmark = pytest.mark.core

MS = 1_000_000
P = 27 * MS
PROBE_RTT = 27_150_000
FRAME = 1_600_000


def cfg(**kw) -> MRCConfig:
    values = dict(base_rtt_ns=PROBE_RTT, nscc_frame_rtt_ns=FRAME, propagation_rtt_ns=P,
                  rto_rtts=16.0, probe_timeout_rtts=16.0, reorder_rtts=1.0,
                  reverse_probe_rtts=8.0)
    return MRCConfig(**{**values, **kw})


def test_a_wait_adds_the_propagation_once_and_multiplies_the_rest():
    assert variable_rtt_ns(28_750_000, P) == 1_750_000
    assert wait_ns(16, 28_750_000, P) == 55 * MS
    assert wait_ns(1, 28_750_000, P) == 28_750_000          # one base RTT is the base RTT
    assert wait_ns(16, 3 * MS, 0) == 48 * MS                # no propagation: 16 x base
    # a configured base RTT that does not hold the propagation: the whole base varies
    assert variable_rtt_ns(20 * MS, P) == 20 * MS


def test_the_rto_and_reorder_window_count_the_propagation_once():
    est = RttEstimator(cfg())
    assert est.base_rtt_ns == 28_750_000 and est.variable_ns == 1_750_000
    assert est.rto_base_ns() == 55 * MS
    assert est.reorder_window_ns() == 1_750_000
    # the trim bound (15 ms) is in the RTO once: 28.75 + 15 = 43.75 < 55, so 55 stays
    assert RttEstimator(cfg(fabric_delay_bound_ns=15 * MS)).rto_base_ns() == 55 * MS


def test_without_propagation_the_margins_are_whole_base_rtts():
    """The demo's fabric: probes 0.15 ms, a 9000-byte frame 2.88 ms, base 3.03 ms; rto_rtts 16
    gives 48.48 ms, reorder_rtts 1 gives 3.03 ms, a 27 ms trim bound gives an RTO of at least
    3.03 + 27 = 30.03 ms (below 48.48) and stays out of the window."""
    est = RttEstimator(MRCConfig(base_rtt_ns=150_000, nscc_frame_rtt_ns=2_880_000,
                                 rto_rtts=16.0, reorder_rtts=1.0,
                                 fabric_delay_bound_ns=27 * MS))
    assert est.rto_base_ns() == 48_480_000
    assert est.reorder_window_ns() == 3_030_000
    low = RttEstimator(MRCConfig(base_rtt_ns=150_000, nscc_frame_rtt_ns=2_880_000,
                                 rto_rtts=4.0, fabric_delay_bound_ns=27 * MS))
    assert low.rto_base_ns() == 30_030_000                  # max(12.12, 3.03 + 27) ms


def test_the_first_sample_s_rttvar_is_half_its_variable_part():
    """RFC 6298 sets rttvar to R / 2 at the first sample R; the propagation in R does not vary,
    so it is half of R - P: a sample of 28.75 ms gives 0.875 ms, srtt + 4 rttvar = 32.25 ms
    (below the 55 ms wait), and a reorder window of max(1.75, 32.25 - 28.75) = 3.5 ms."""
    est = RttEstimator(cfg())
    est.update(28_750_000)
    assert est.rttvar_ns == 875_000
    assert est.rto_base_ns() == 55 * MS
    assert est.reorder_window_ns() == 3_500_000


def test_the_window_holds_one_trimming_queue_and_the_samples_queueing_peak():
    """fabric_reorder_bound_ns 5 ms (one full port at 30 Mbit/s) is the window's floor. The
    queueing peak: a sample of 37.75 ms over the 28.75 ms base is 9 ms of queueing, taken at
    once; a sample at the base then takes it 1/8 of the way down, to 7.875 ms."""
    est = RttEstimator(cfg(fabric_reorder_bound_ns=5 * MS))
    assert est.reorder_window_ns() == 5 * MS
    est = RttEstimator(cfg())
    est.update(28_750_000)
    est.update(37_750_000)
    assert est.queue_peak_ns == 9 * MS
    est.update(28_750_000)
    assert est.queue_peak_ns == 7_875_000


def test_ocp_s_fixed_ack_timeout_ignores_the_propagation():
    """ack_timeout 12: 1.024 us x 2^12 = 4,194,304 ns whatever the base RTT holds."""
    assert RttEstimator(cfg(ack_timeout=12)).rto_base_ns() == 4_194_304


def test_the_sender_s_ev_probe_timeout_adds_the_propagation_once():
    sender = SenderQP(0x11, 0x22, cfg(), PathInfo((0, 1), 2), random.Random(1))
    assert sender.evs.probe_timeout_ns == 55 * MS
    assert sender.reorder_window_ns() == 1_750_000


def test_the_reverse_paths_timers_add_the_propagation_once():
    def make(**kw):
        return ReversePaths(0x33, cfg(**kw), PathInfo((0, 1), 2), random.Random(7),
                            {0: True, 1: True}, lambda event: None)
    # in a full frame's base RTT (28.75 ms, variable part 1.75 ms), as the sender's timers:
    # 16 x 1.75 + 27 = 55 ms; with a 30 ms trim bound, the base RTT + the bound = 58.75 ms
    assert make().probe_timeout_ns() == 55 * MS
    assert make(fabric_delay_bound_ns=30 * MS).probe_timeout_ns() == 58_750_000
    rp = make()
    rp.poll(0, active=True)
    assert rp._next_probe_ns == 41 * MS                     # 27 + 8 x 1.75


def test_the_receiver_s_late_threshold_counts_the_variable_part():
    rx = ReceiverQP(0x22, 0x11, cfg(), PathInfo((0, 1), 2), random.Random(3), MemoryRegistry())
    assert rx._late_after_ns() == 1_750_000          # the frame RTT's variable part, as the sender's window
