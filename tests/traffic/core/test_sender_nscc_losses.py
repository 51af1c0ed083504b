"""What each kind of loss does to NSCC's window, through the sender (traffic/core/sender.py
_declare_lost, traffic/core/nscc.py "Losses"), as UEC's reference model has it
(ultraethernet/uet-htsim htsim/sim/uec.cpp, revision 40ccb05):

* a trimmed NACK takes the NACK path: uec.cpp:1582 processNack -> updateCwndOnNack_NSCC
  (uec.cpp:1359-1384): one network RTT into the averaged delay (uec.cpp:1369), quick adapt
  armed, the NACKed bytes off cwnd (uec.cpp:1381). htsim's sink NACKs trims only
  (uec.cpp:2779, processTrimmed);
* a timeout takes the packet off cwnd: uec.cpp:2368 -> uec.cpp:1300;
* a SACK gap changes nothing: htsim's SACK-gap recovery (runSleek) runs only with
  _enable_sleek, false by default (uec.cpp:79); a NACK that is not a trim has no counterpart
  in htsim and changes nothing either.

Numbers by hand: base RTT 1 ms, 2 planes x 12.5 MB/s -> BDP 25,000 B, initial window
max_cwnd = 37,500 B; 100-byte packets; the averaged delay's gain 0.0125.
"""
from __future__ import annotations

import pytest

from traffic.core.messages import Nack, NackReason, Sack
from traffic.core.reliability import MRCConfig

from tests.helpers.simnet import Harness, SimNet

pytestmark = pytest.mark.core

MS = 1_000_000
US = 1_000


def nscc_sender(packets: int, gap_ns: int = 0):
    """A sender that has sent `packets` one-packet WRITEs, gap_ns apart from its start time;
    returns (harness, the packets by PSN)."""
    h = Harness(SimNet(planes=2, spines=4, seed=5),
                cfg=MRCConfig(rto_ns=100 * MS, base_rtt_ns=MS, pacing_burst_packets=64))
    assert h.sender.nscc.cwnd == 37_500
    region = h.registry.register(bytearray(100 * packets))
    sent = []
    for i in range(packets):
        h.sender.post_write(b"d" * 100, region.va + 100 * i, region.rkey)
        sent += h.sender.poll(h.clock.now_ns + i * gap_ns)
    assert len(sent) == packets
    return h, {pkt.psn: pkt for pkt, _ in sent}


def nack(pkt, reason) -> Nack:
    return Nack(dest_qp=0x11, psn=pkt.psn, reason=reason, ev=pkt.ev,
                echo_timestamp=pkt.timestamp, port_status=0b11)


def test_a_sack_gap_loss_leaves_the_window_alone():
    """PSN 0 at t0, PSN 1 at t0 + 0.6 ms; a SACK of PSN 1 alone (no RTT sample) at t0 + 1 ms:
    PSN 1 was sent more than the reorder window (0.5 ms) after PSN 0, so PSN 0 is lost. The
    SACK's 100 B only add to the batched increase (not applied yet: 100 B < 8 MSS), the loss
    adds nothing: cwnd 37,500, average 0, quick adapt not armed."""
    h, pkts = nscc_sender(2, gap_ns=600 * US)
    s, t0 = h.sender, h.clock.now_ns
    s.on_sack(Sack(dest_qp=0x11, cum_psn=0, bitmap=0b10, sack_base=0, port_status=0b11),
              t0 + MS)
    assert s.counters["sack_gap_losses"] == 1 and s.records[0].lost
    cc = s.nscc
    assert cc.cwnd == 37_500 and cc.avg_delay_ns == 0 and not cc.trigger_qa
    assert cc.counts["loss_bytes_off_cwnd"] == 0


def test_a_nack_that_is_not_a_trim_leaves_the_window_alone():
    h, pkts = nscc_sender(1)
    h.sender.on_nack(nack(pkts[0], NackReason.NO_RESOURCE), h.clock.now_ns + 500 * US)
    cc = h.sender.nscc
    assert h.sender.records[0].lost
    assert cc.cwnd == 37_500 and cc.avg_delay_ns == 0 and not cc.trigger_qa


@pytest.mark.parametrize("reason", [NackReason.TRIMMED, NackReason.TRIMMED_LASTHOP])
def test_a_trimmed_nack_takes_the_nack_path(reason):
    """37,500 - 100 = 37,400; the average 0.0125 x 1 ms (the network RTT) = 12,500 ns; quick
    adapt armed for the end of its window."""
    h, pkts = nscc_sender(1)
    h.sender.on_nack(nack(pkts[0], reason), h.clock.now_ns + 500 * US)
    cc = h.sender.nscc
    assert cc.cwnd == 37_400 and cc.avg_delay_ns == pytest.approx(12_500) and cc.trigger_qa


def test_a_timeout_takes_the_packet_off_and_nothing_else():
    """RTO fixed at 100 ms: at t0 + 100 ms PSN 0 times out: 37,500 - 100 = 37,400."""
    h, pkts = nscc_sender(1)
    h.sender.poll(h.clock.now_ns + 100 * MS)
    cc = h.sender.nscc
    assert h.sender.counters["timeouts"] == 1
    assert cc.cwnd == 37_400 and cc.avg_delay_ns == 0 and not cc.trigger_qa
