"""Loss by path order (traffic/core/path_order.py): one path is FIFO, so a packet sent later on
the same (plane, spine) that arrived shows a loss without the reorder window's allowance for
the queueing spread between paths.

The fabric of the sender tests, by hand: SimNet one way 0.5 ms + up to 20 us jitter, so a base
RTT of about 1.04 ms, all of it variable (no propagation); the path margin is reorder_rtts 0.5 x
that = 0.52 ms. Pacing 12.5 MB/s per plane, 1024-byte payloads: a packet per ~0.085 ms per
plane, and with 2 spines a packet per ~0.17 ms on each path. The trimming fabric's reorder bound
is set to 20 ms, so the reorder window alone waits 20 ms; the RTO is fixed at 50 ms.
A packet dropped at t0 is then shown lost by the first packet of its path sent at least 0.52 ms
later (by t0 + 0.52 + 0.17 ms), whose SACK is back a round trip after that: t0 + 1.73 ms.
"""
from __future__ import annotations

import pytest

from model.events import Event
from model.topology import make_ev
from tests.helpers.simnet import Harness, SimNet
from traffic.core.messages import DataPacket
from traffic.core.path_order import PathOrder
from traffic.core.qp_config import MRCConfig

pytestmark = pytest.mark.core

MS = 1_000_000


def test_only_a_later_packet_of_the_same_path_beyond_the_margin_overtakes():
    order = PathOrder()
    a, b, other = make_ev(0, 1, 100), make_ev(0, 1, 200), make_ev(1, 0, 100)
    order.sent(a, 0, seq=1, tx_count=1)
    order.sent(other, 5, seq=2, tx_count=1)
    order.sent(b, 8, seq=3, tx_count=1)          # same path as `a`, another EV
    order.sent(a, 10, seq=4, tx_count=1)
    order.delivered(other, 5)                    # another path: says nothing about path (0, 1)
    assert order.overtaken(margin_ns=3) == []
    order.delivered(a, 10)                       # 10 - 3 = 7: sent at 0 is overtaken, at 8 not
    assert order.overtaken(margin_ns=3) == [(1, 1)]
    assert order.overtaken(margin_ns=3) == []    # reported once
    order.delivered(b, 8)                        # older than what is known delivered: no news
    assert order.overtaken(margin_ns=0) == []


def _config(path_order: bool) -> MRCConfig:
    return MRCConfig(max_payload=1024, port_rate_Bps=12_500_000, base_rtt_ns=1_040_000,
                     fabric_reorder_bound_ns=20 * MS, rto_ns=50 * MS,
                     path_order_loss=path_order)


def _drop_one(net: SimNet, nth: int) -> dict:
    """Drop the nth first transmission given to `net`; returns what was dropped, when."""
    dropped: dict = {}
    send, count = net.send, [0]

    def dropping_send(now_ns, msg, plane, dst):
        if isinstance(msg, DataPacket) and not msg.retransmit:
            count[0] += 1
            if count[0] == nth:
                dropped.update(psn=msg.psn, t_ns=now_ns)
                return
        send(now_ns, msg, plane, dst)

    net.send = dropping_send
    return dropped


def _repair_delay_ns(path_order: bool) -> int:
    net = SimNet(planes=2, spines=2, seed=3)
    h = Harness(net, _config(path_order))
    dropped = _drop_one(net, nth=40)
    h.transfer([256 * 1024])
    (retx,) = h.events_of(Event.RETRANSMIT, psn=dropped["psn"])
    return retx["t_ns"] - dropped["t_ns"]


def test_a_loss_is_found_a_round_trip_after_its_send_not_a_reorder_window():
    delay = _repair_delay_ns(path_order=True)
    assert delay < 3 * MS, delay                 # 1.73 ms by hand (module docstring)


def test_without_path_order_the_same_loss_waits_for_the_reorder_window():
    delay = _repair_delay_ns(path_order=False)
    assert delay >= 20 * MS, delay               # the 20 ms reorder bound (or the 50 ms RTO)


def test_reordering_across_paths_is_not_taken_for_loss():
    """5 ms of jitter reorders packets across paths (never within one, a FIFO): far beyond
    the 0.52 ms path margin, inside the 20 ms reorder window: nothing is retransmitted."""
    net = SimNet(planes=2, spines=2, seed=4, jitter_ns=5 * MS, fifo_paths=True)
    h = Harness(net, _config(path_order=True))
    h.transfer([256 * 1024])
    assert h.sender.counters["retransmitted_packets"] == 0
    assert h.sender.counters["sent_packets"] == 256
