"""OCP's fixed ACK timeout (mrc.h struct mrc_qp_attr `timeout`: "Local ACK timeout; 1.024 *
2^timeout us. Max val = 24") as a QP setting: `ack_timeout` = n gives a FIXED base interval of
1.024 us x 2^n, whatever the RTT samples say; unset, the interval adapts (rto_rtts x base RTT,
at least srtt + 4 rttvar, rto_min_ns and the trim bound: traffic/core/rtt.py).

By hand: n = 12 -> 1,024 ns x 4,096 = 4,194,304 ns (T). The retry schedule around it (7 linear
retries at T, then doubling) is OCP's: tests/traffic/core/test_sender_retries.py.
"""
from __future__ import annotations

import pytest

from model.events import Event
from traffic.core.messages import Sack
from traffic.core.qp_config import MRCConfig
from traffic.core.rtt import RttEstimator
from traffic.nic.endpoint_support import EMULATED_FABRIC_QP_DEFAULTS, qp_timers

from tests.helpers.simnet import Harness, SimNet

pytestmark = pytest.mark.core

MS = 1_000_000
T = 4_194_304


def test_the_fixed_interval_ignores_samples_floors_and_the_trim_bound():
    """The emulated fabric's defaults with rto_rtts 16, a 2 ms RTO floor, a 10 ms trim bound, and
    samples of 1 ms and 41 ms (srtt 6 ms, rttvar 10.375 ms: srtt + 4 rttvar = 47.5 ms), the
    adaptive interval (above 16 ms and 1 + 10 ms); ack_timeout 12 keeps T for every linear
    retry, then 2T."""
    cfg = dict(EMULATED_FABRIC_QP_DEFAULTS, rto_rtts=16.0, rto_min_ns=2 * MS,
               fabric_delay_bound_ns=10 * MS, base_rtt_ns=MS)
    adaptive, fixed = RttEstimator(MRCConfig(**cfg)), RttEstimator(MRCConfig(ack_timeout=12, **cfg))
    for est in (adaptive, fixed):
        est.update(MS)
        est.update(41 * MS)
    assert adaptive.rto_base_ns() == 47_500_000
    assert [fixed.rto_ns(t) for t in range(8)] == [T] * 8
    assert fixed.rto_ns(8) == 2 * T


def test_the_sender_times_out_at_the_fixed_interval_after_a_long_rtt_sample():
    """A packet SACKed 30 ms after it left (an RTT sample of 30 ms: the adaptive interval
    would grow past it); the next packet, sent at the SACK's time s, is retransmitted at
    exactly s + T, not a ns before."""
    h = Harness(SimNet(seed=9), cfg=MRCConfig(ack_timeout=12, nscc_enabled=False, base_rtt_ns=MS))
    region = h.registry.register(bytearray(200))
    h.sender.post_write(b"a" * 100, region.va, region.rkey)
    [(first, _)] = h.sender.poll(h.clock.now_ns)
    s = first.timestamp + 30 * MS
    h.sender.on_sack(Sack(dest_qp=0x11, cum_psn=first.psn + 1, echo_timestamp=first.timestamp,
                          ev=first.ev, port_status=0b11), s)
    assert h.sender.rtt.srtt_ns == 30 * MS
    h.sender.post_write(b"b" * 100, region.va + 100, region.rkey)
    [(second, _)] = h.sender.poll(s)
    assert h.sender.poll(s + T - 1) == [] and not h.events_of(Event.RETRANSMIT)
    h.sender.poll(s + T)
    assert [e["t_ns"] for e in h.events_of(Event.RETRANSMIT, psn=second.psn)] == [s + T]


def test_the_endpoint_reports_the_fixed_interval_over_its_defaults():
    """An endpoint's QP (EMULATED_FABRIC_QP_DEFAULTS, rto_rtts 16) with ack_timeout 12 and a
    base RTT of 2 ms starts with RTO T, not 16 x 2 ms."""
    cfg = dict(EMULATED_FABRIC_QP_DEFAULTS, rto_rtts=16.0, base_rtt_ns=2 * MS)
    assert qp_timers(MRCConfig(ack_timeout=12, **cfg))["rto_ns"] == T
    assert qp_timers(MRCConfig(**cfg))["rto_ns"] == 32 * MS
