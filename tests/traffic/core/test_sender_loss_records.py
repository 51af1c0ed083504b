"""The sender's loss records after a retransmission or an explanation (traffic/core/sender.py with
the loss policy of traffic/core/loss_policy.py), packet by packet with a fake clock.

* The SACK-gap rule (RACK-like): a packet is lost when one SENT a reorder window later was
  delivered. Only first transmissions set that "latest delivered" mark: a retransmission after
  a trim goes on a fresh, idle path and overtakes the originals still queued on the congested
  one, which are not lost.
* An explained loss (a late delivery echoed by a SACK) counts as a delivery on its EV and path:
  neither stays suspect, so retransmissions may use them again.
* A retransmission asks for an ACK (AckReq), so the receiver answers it at once and never
  coalesces it into a later SACK.

Numbers by hand: base RTT 1 ms, reorder window 0.5 base RTT = 0.5 ms (no RTT sample is taken:
the SACKs below echo no send time unless said), RTO fixed (100 ms unless said), the default
(tolerant) loss policy.
"""
from __future__ import annotations

import pytest

from traffic.core.messages import LAST_OPCODES, Nack, NackReason, Sack
from traffic.core.reliability import MRCConfig

from tests.helpers.simnet import Harness, SimNet

pytestmark = pytest.mark.core

MS = 1_000_000
US = 1_000


def sender(packets: int, gap_ns: int = 0, **cfg):
    """A harness whose sender has sent `packets` one-packet WRITEs from its start time,
    gap_ns apart; returns (harness, the packets by PSN)."""
    config = dict(rto_ns=100 * MS, base_rtt_ns=MS, nscc_enabled=False, ev_count=8,
                  ev_backup_count=8, pacing_burst_packets=64, loss_policy="tolerant")
    config.update(cfg)
    h = Harness(SimNet(planes=2, spines=4, seed=5), cfg=MRCConfig(**config))
    region = h.registry.register(bytearray(100 * packets))
    sent = []
    for i in range(packets):
        h.sender.post_write(b"d" * 100, region.va + 100 * i, region.rkey)
        if gap_ns:
            sent += h.sender.poll(h.clock.now_ns + i * gap_ns)
    if not gap_ns:
        sent = h.sender.poll(h.clock.now_ns)
    assert len(sent) == packets
    return h, {pkt.psn: pkt for pkt, _ in sent}


def sack(cum: int, bitmap: int = 0, base: int = 0, ev: int = 0, echo: int = 0) -> Sack:
    return Sack(dest_qp=0x11, cum_psn=cum, bitmap=bitmap, sack_base=base, ev=ev,
                echo_timestamp=echo, port_status=0b11)


def test_a_retransmissions_delivery_does_not_declare_the_queued_originals_lost():
    h, pkts = sender(6)
    s, t0 = h.sender, h.clock.now_ns
    # PSN 0 is trimmed; its NACK comes back 0.8 ms after it left, and it is resent then
    s.on_nack(Nack(dest_qp=0x11, psn=0, reason=NackReason.TRIMMED, ev=pkts[0].ev,
                   echo_timestamp=pkts[0].timestamp, port_status=0b11), t0 + 800 * US)
    [(resent, _)] = s.poll(t0 + 800 * US)
    assert resent.psn == 0 and resent.retransmit
    # the resend, on an idle path, is SACKed 0.2 ms later; PSNs 1-5 (sent at t0, 1 ms
    # before) are still queued. Had the resend set the mark (t0 + 0.8 ms), everything sent by
    # t0 + 0.3 ms would be lost: all of them.
    s.on_sack(sack(cum=1), t0 + MS)
    assert s.counters["sack_gap_losses"] == 0
    assert not any(s.records[p].lost for p in range(1, 6))
    assert s.poll(t0 + MS) == []                            # nothing to resend
    # the rule itself is live: a first transmission sent at t0 + 1 ms and SACKed makes the
    # mark t0 + 1 ms, and PSNs 1-5 (sent by t0 + 0.5 ms) are then lost
    region = h.registry.register(bytearray(100))
    s.post_write(b"e" * 100, region.va, region.rkey)
    [(late, _)] = s.poll(t0 + MS)
    assert late.psn == 6
    s.on_sack(sack(cum=1, bitmap=1, base=6), t0 + 1200 * US)
    assert s.counters["sack_gap_losses"] == 5


def test_an_explained_loss_is_a_delivery_on_its_ev_and_path():
    # the tolerant policy's verdict window: a timeout suspends the EV for 50 ms
    h, pkts = sender(2, gap_ns=100 * US, loss_verdict_ns=50 * MS, rto_ns=10 * MS)
    s, t0 = h.sender, h.clock.now_ns
    # PSN 1, sent 0.1 ms after PSN 0, is SACKed (something sent later was delivered, so PSN 0's
    # timeout is judged, not excused as a stall); PSN 0 times out at t0 + 10 ms
    s.on_sack(sack(cum=0, bitmap=0b10, base=0), t0 + MS)
    s.poll(t0 + 10 * MS)
    ev = pkts[0].ev
    info = s.evs.evs[ev]
    path = (info.plane, info.spine)
    assert (ev, pkts[0].timestamp) in s.loss_policy.pending
    assert info.suspended
    assert s.unexplained.suspect(ev) and s.unexplained.suspect(path)
    # a SACK echoing PSN 0's own EV and send time: it was only late
    s.on_sack(sack(cum=2, ev=ev, echo=pkts[0].timestamp), t0 + 12 * MS)
    assert s.counters["losses_explained_by_late_delivery"] == 1
    assert not s.unexplained.suspect(ev)
    assert not s.unexplained.suspect(path)
    assert not info.suspended


def test_an_explained_trim_clears_the_path_for_retransmissions():
    # PSN 0 is declared lost by timeout on its EV; a late trimmed NACK of that very
    # transmission explains it: the EV's path is clean again, so the next retransmission that
    # needs a clean path may go there
    h, pkts = sender(2, gap_ns=100 * US, loss_verdict_ns=50 * MS, rto_ns=10 * MS)
    s, t0 = h.sender, h.clock.now_ns
    s.on_sack(sack(cum=0, bitmap=0b10, base=0), t0 + MS)
    s.poll(t0 + 10 * MS)
    ev = pkts[0].ev
    s.on_nack(Nack(dest_qp=0x11, psn=0, reason=NackReason.TRIMMED, ev=ev,
                   echo_timestamp=pkts[0].timestamp, port_status=0b11), t0 + 11 * MS)
    assert s.counters["losses_explained_by_trim"] == 1
    info = s.evs.evs[ev]
    assert not s.unexplained.suspect(ev) and not s.unexplained.suspect((info.plane, info.spine))


def test_every_retransmission_asks_for_an_ack():
    # three-packet message: its first packet does not end the message, so only a resend's
    # own flag asks for the ACK
    h = Harness(SimNet(seed=5), cfg=MRCConfig(rto_ns=10 * MS, base_rtt_ns=MS, max_payload=100,
                                              nscc_enabled=False))
    region = h.registry.register(bytearray(300))
    h.sender.post_write(b"x" * 300, region.va, region.rkey)
    first = [pkt for pkt, _ in h.sender.poll(h.clock.now_ns)]
    assert [p.ack_req for p in first] == [False, False, True]
    assert first[0].opcode not in LAST_OPCODES
    t0 = h.clock.now_ns
    # PSN 0 trimmed (fast retransmit), PSN 1 timed out: both resends carry AckReq
    h.sender.on_nack(Nack(dest_qp=0x11, psn=0, reason=NackReason.TRIMMED, ev=first[0].ev,
                          echo_timestamp=first[0].timestamp, port_status=0b11), t0 + MS)
    h.sender.on_sack(sack(cum=0, bitmap=0b100, base=0), t0 + MS)
    resent = [pkt for pkt, _ in h.sender.poll(t0 + MS)]
    resent += [pkt for pkt, _ in h.sender.poll(t0 + 11 * MS)]
    assert {p.psn for p in resent if p.retransmit} == {0, 1}
    assert all(p.ack_req for p in resent if p.retransmit)


def test_a_resend_that_completes_nothing_is_sacked_on_arrival():
    """Through the real receiver (ack_every 4): PSNs 0 and 1 of a three-packet message are
    lost, 2 arrives. Both time out and are resent; the resend of 0 fills a hole but does not
    complete the message (1 is still missing), yet its SACK leaves at once, not coalesced."""
    h = Harness(SimNet(seed=5), cfg=MRCConfig(rto_ns=10 * MS, base_rtt_ns=MS, max_payload=100,
                                              nscc_enabled=False, ack_every=4))
    region = h.registry.register(bytearray(300))
    h.sender.post_write(b"x" * 300, region.va, region.rkey)
    first = [pkt for pkt, _ in h.sender.poll(h.clock.now_ns)]
    t0 = h.clock.now_ns
    for msg, _ in h.receiver.on_data(first[2], t0 + 500 * US, 0):
        h.sender.on_sack(msg, t0 + MS)
    resent = {p.psn: (p, pl) for p, pl in h.sender.poll(t0 + 11 * MS) if p.retransmit}
    assert sorted(resent) == [0, 1]
    pkt, plane = resent[0]
    answers = [m for m, _ in h.receiver.on_data(pkt, t0 + 11 * MS + 500 * US, plane)]
    assert answers and all(isinstance(m, Sack) for m in answers)   # (and its tail copy)
    assert answers[0].cum_psn == 1 and answers[0].echo_timestamp == pkt.timestamp
