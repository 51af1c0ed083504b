"""The ECN collision experiment in miniature, with the real SenderQP/ReceiverQP over the
simulated network (fake clock): a sender whose EVs are pinned 6 of 8 to spine 0 puts 3/4 of
its data packets there; when that path marks CE, ECN skips move its packets to spine 1, and the
data still arrives whole."""

import pytest

from model.events import Event
from model.topology import ev_spine
from tests.helpers.simnet import Harness, SimNet, count_data
from traffic.core.reliability import MRCConfig

pytestmark = pytest.mark.core

MSG = 400 * 1024


def pinned_run(ecn: float) -> tuple[float, Harness]:
    """(share of the data packets sent on spine 0, harness) of one 400 KiB WRITE."""
    net = SimNet(planes=1, spines=2, seed=3)
    if ecn:
        net.path(0, 0).ecn = ecn
    data = count_data(net, lambda pkt: ev_spine(pkt.ev))
    cfg = MRCConfig(ev_count=8, ev_backup_count=0, ev_pin_spine=0, ev_pin_count=6,
                    base_rtt_ns=1_000_000, nscc_enabled=False)
    h = Harness(net, cfg)
    expected, region = h.post([MSG])
    h.run_until_idle()
    assert h.sender.error is None and bytes(region.buf) == expected
    # the QP's own per-path count (its final counters, summary.json's flows) is what the
    # network saw leave
    assert h.sender.sent_packets_by_path() == {f"p0s{s}": n for s, n in data.items() if n}
    return data[0] / (data[0] + data[1]), h


def test_without_ecn_the_pinned_spine_carries_three_quarters():
    share, h = pinned_run(0.0)
    assert share == 0.75, share        # 6 of 8 EVs, round robin, no loss
    assert not h.events_of(Event.EV_SKIP)


def test_ecn_on_the_pinned_spine_moves_packets_to_the_other():
    # every packet on spine 0 marked: its EVs are skipped from their first echo on, so spine 0
    # carries what a round trip of its EVs sends before the echo, less than spine 1's 2 EVs
    share, h = pinned_run(1.0)
    skips = h.events_of(Event.EV_SKIP)
    assert skips and all(ev_spine(e["ev"]) == 0 and not e.get("once") for e in skips)
    assert share < 0.5, share


def test_some_marking_moves_some_packets():
    share, _ = pinned_run(0.5)
    assert share < 0.75 - 0.1, share
