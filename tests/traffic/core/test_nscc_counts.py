"""NSCC counts each response it applies (the counters event reports them per run)."""
from __future__ import annotations

from traffic.core.nscc import Nscc


def test_nscc_counts_every_response_it_applies():
    n = Nscc(base_rtt_ns=1000, link_rate_Bps=1e9, mss=1000)
    first = n.on_ack(1000, 3000, False, 0)         # 2 targets of delay, no ECN: fair increase
    n.on_ack(1000, 3000, False, 10)
    n.on_ack(1000, 3000, False, 20)
    assert first.value == "fair_increase" and n.counts[first.value] == 3
