"""Loss without trim vs congestion and stalls (congestion must never retire a path):
driven packet by packet with a fake clock."""
import random

import pytest

from model.events import Event
from traffic.core.evs import ASSUMED_BAD, PathInfo
from traffic.core.messages import DataPacket, Opcode, Probe, Sack, SkipMode
from traffic.core.reliability import MemoryRegistry, MRCConfig, ReceiverQP, SenderQP

pytestmark = pytest.mark.core

T0 = 1_000_000_000
MS = 1_000_000


def _sender(**kw):
    cfg = MRCConfig(ev_count=8, ev_backup_count=8, max_payload=1000, base_rtt_ns=MS, rto_ns=5 * MS,
                    nscc_enabled=False, reorder_rtts=0.5,
                    loss_policy="tolerant", **kw)
    events = []
    tx = SenderQP(0x11, 0x22, cfg, PathInfo((0, 1), 2), random.Random(1), events.append)
    return tx, events


def _send(tx, now, n=1):
    out = tx.poll(now)
    pkts = [m for m, _ in out if isinstance(m, DataPacket)]
    assert len(pkts) == n
    return pkts


def _sack(tx, pkt, now, ecn=False):
    """The receiver's SACK when `pkt` arrives (cumulative PSN + bitmap of what arrived so far),
    echoing its timestamp; the arrivals are remembered on the sender object."""
    got = tx.__dict__.setdefault("_test_arrived", set())
    got.add(pkt.psn)
    cum = 0
    while cum in got:
        cum += 1
    bitmap = sum(1 << i for i in range(64) if cum + i in got)
    tx.on_sack(Sack(dest_qp=0x11, cum_psn=cum, sack_base=cum, bitmap=bitmap,
                    ev=pkt.ev, skip=SkipMode.SKIP_ONCE if ecn else SkipMode.NONE,
                    echo_timestamp=pkt.timestamp, port_status=3), now)


def _bad(events):
    return [e for e in events if e["event"] == Event.EV_STATE and e["new"] == ASSUMED_BAD]


def test_timeout_with_nothing_delivered_since_does_not_retire_the_path():
    tx, events = _sender()
    tx.post_write(bytearray(1000), 0, 1)
    [p0] = _send(tx, T0)
    tx.poll(T0 + 6 * MS)                      # RTO expired, nothing at all came back: a stall
    assert tx.counters["timeouts"] == 1 and tx.counters["timeouts_without_evidence"] == 1
    assert _bad(events) == []
    assert tx.counters["retransmitted_packets"] == 1


def test_timeout_with_a_later_packet_delivered_retires_the_path():
    tx, events = _sender()
    tx.post_write(bytearray(1000), 0, 1)
    [p0] = _send(tx, T0)
    tx.post_write(bytearray(1000), 0, 1)
    [p1] = _send(tx, T0 + 100_000)            # later, other EV; it arrives, p0 does not
    _sack(tx, p1, T0 + 1_100_000)             # RTT 1 ms = base: no congestion signal
    tx.poll(T0 + 6 * MS)
    assert [e["ev"] for e in _bad(events)] == [p0.ev]


def test_congestion_on_other_evs_does_not_excuse_a_loss_on_a_silent_ev():
    """The QP is congested (ECN echoes on every other EV) but the EV that lost a packet echoed
    nothing itself: that is a dead path, retired at its first loss with SACK-gap evidence."""
    tx, events = _sender()
    pkts = []
    for i in range(40):                       # 40 packets, 0.1 ms apart, round robin on 8 EVs
        tx.post_write(bytearray(1000), 0, 1)
        pkts += _send(tx, T0 + i * 100_000)
    lost_ev = pkts[0].ev
    for p in pkts:
        if p.ev != lost_ev:
            _sack(tx, p, p.timestamp + MS, ecn=True)
        if _bad(events):
            break
    now = pkts[-1].timestamp + MS
    assert tx.congested(now)                  # congestion QP-wide ...
    assert [e["ev"] for e in _bad(events)] == [lost_ev]   # ... still retired at once
    assert _bad(events)[0]["reason"] == "sack_gap"
    assert tx.counters["congestion_losses_forgiven"] == 0


def test_evidence_on_the_ev_itself_forgives_one_loss_per_evidence():
    """An EV that echoed ECN then goes silent (black-holed right after): its first loss is
    forgiven (the evidence was fresh), its second, with no new evidence, retires it."""
    tx, events = _sender()
    tx.post_write(bytearray(1000), 0, 1)
    [first] = _send(tx, T0)
    victim = first.ev
    _sack(tx, first, T0 + MS, ecn=True)       # the victim EV itself signals congestion
    t, losses_on_victim = T0 + MS, 0
    while not _bad(events) and t < T0 + 200 * MS:
        t += 100_000
        tx.post_write(bytearray(1000), 0, 1)
        for p in [m for m, _ in tx.poll(t) if isinstance(m, DataPacket)]:
            if p.ev == victim:
                losses_on_victim += 1         # black hole from now on
            else:
                _sack(tx, p, t, ecn=False)    # arrives at once (sacked when sent: fake clock)
    assert [e["ev"] for e in _bad(events)] == [victim]
    assert tx.counters["congestion_losses_forgiven"] == 1
    # retired at its second loss (a third packet may already be on its way when it is found)
    assert 2 <= losses_on_victim <= 3


def test_losses_on_a_path_that_itself_signals_congestion_never_retire_it():
    tx, events = _sender()
    pkts = []
    for i in range(40):                       # 4 ms, under the 5 ms RTO
        tx.post_write(bytearray(1000), 0, 1)
        pkts += _send(tx, T0 + i * 100_000)
    lost_ev = pkts[0].ev
    on_lost = [p for p in pkts if p.ev == lost_ev]
    # every other one lost, each loss after an ECN echo on that EV (its own evidence)
    dropped = {id(on_lost[1]), id(on_lost[3])}
    for p in pkts:
        if id(p) not in dropped:
            _sack(tx, p, p.timestamp + MS, ecn=True)                # ECN echo on every path
    assert tx.counters["sack_gap_losses"] >= 2 and tx.counters["congestion_losses_forgiven"] == 2
    assert _bad(events) == []


def test_reverse_probe_answer_late_or_under_congestion_does_not_retire_reverse_ev():
    cfg = MRCConfig(base_rtt_ns=MS, probe_timeout_rtts=4.0, reverse_probe_fail_limit=1,
                    reverse_probe_rtts=1.0)
    events = []
    reg = MemoryRegistry()
    reg.register(bytearray(1 << 16))
    rx = ReceiverQP(0x22, 0x11, cfg, PathInfo((0,), 1), random.Random(2), reg, events.append)
    data = dict(dest_qp=0x22, opcode=Opcode.WRITE_MIDDLE, msn=0, va=reg.regions[0x100].va, rkey=0x100,
                dma_len=1 << 16, payload=b"x" * 100, timestamp=1, ev=0x1234)
    rx.on_data(DataPacket(psn=0, ecn_ce=True, **data), T0, 0)      # congestion seen
    [(probe, _)] = [x for x in rx.poll(T0) if isinstance(x[0], Probe)]
    rx.poll(T0 + 5 * MS)                                           # timed out, but congested
    assert _bad(events) == []
    # a late answer still counts as the path working
    rx.on_probe_response(Probe(ev=probe.ev, seq=probe.seq, response=True), T0 + 6 * MS)
    assert all(r.fails == 0 for r in rx.reverse[0])
    # no congestion any more: an unanswered probe retires the reverse EV (fail limit 1) once a
    # probe sent later on another reverse EV is answered (the peer is alive, that path works)
    t = T0 + 200 * MS
    rx.on_data(DataPacket(psn=1, **data), t, 0)
    [(lost, _)] = [x for x in rx.poll(t) if isinstance(x[0], Probe)]
    rx.poll(t + 50 * MS)
    assert _bad(events) == []                  # timed out, but no evidence against it yet
    later = lost
    for i in range(4):                         # round robin: the next probe on the other EV
        rx.on_data(DataPacket(psn=2 + i, **data), t + (51 + i) * MS, 0)
        later = [m for m, _ in rx.poll(t + (51 + i) * MS) if isinstance(m, Probe)][0]
        if later.ev != lost.ev:
            break
    assert later.ev != lost.ev
    rx.on_probe_response(Probe(ev=later.ev, seq=later.seq, response=True), t + 56 * MS)
    bad = _bad(events)
    assert lost.ev in {e["ev"] for e in bad}
    assert all(e["reason"] == "reverse_probe_timeout" and e["t_ns"] >= t + 56 * MS for e in bad)


def test_reverse_probe_timeouts_during_a_peer_stall_retire_nothing():
    """Every probe times out (the peer's CPU stalled), then answers resume: the probes sent
    before the stall ended are not held against their EVs."""
    cfg = MRCConfig(base_rtt_ns=MS, probe_timeout_rtts=4.0, reverse_probe_fail_limit=1,
                    reverse_probe_rtts=1.0)
    events = []
    reg = MemoryRegistry()
    reg.register(bytearray(1 << 16))
    rx = ReceiverQP(0x22, 0x11, cfg, PathInfo((0, 1), 2), random.Random(3), reg, events.append)
    data = dict(dest_qp=0x22, opcode=Opcode.WRITE_MIDDLE, msn=0, va=reg.regions[0x100].va,
                rkey=0x100, dma_len=1 << 16, payload=b"x" * 100, timestamp=1, ev=0x1234)
    sent = []
    for i in range(20):                       # 20 ms of probes, none answered in time
        now = T0 + i * MS
        rx.on_data(DataPacket(psn=i, **data), now, 0)
        sent += [m for m, _ in rx.poll(now) if isinstance(m, Probe)]
    assert len(sent) >= 10 and _bad(events) == []
    for p in sent:                            # the stall ends: all answers arrive late
        rx.on_probe_response(Probe(ev=p.ev, seq=p.seq, response=True), T0 + 25 * MS)
    now = T0 + 26 * MS
    rx.on_data(DataPacket(psn=30, **data), now, 0)
    for m, _ in rx.poll(now):
        if isinstance(m, Probe):
            rx.on_probe_response(Probe(ev=m.ev, seq=m.seq, response=True), now + MS)
    assert _bad(events) == []


def test_first_packet_on_a_fresh_ev_lost_is_excused_once_then_the_path_retires():
    """first_packet_grace: the first packet an EV carries may sit in the switches' slow path;
    losing it does not retire the EV, losing its next packet does (a dead path costs one)."""
    tx, events = _sender(first_packet_grace=True)
    tx.post_write(bytearray(40 * 1000), 0, 0x100)
    victim, t, excused_checked = None, T0, False
    for _ in range(200):
        for m, _p in tx.poll(t):
            if not isinstance(m, DataPacket):
                continue
            if victim is None:
                victim = m.ev                       # everything on this EV is lost
            if m.ev != victim:
                _sack(tx, m, t + MS)
        if not excused_checked and tx.counters["first_packet_losses_excused"]:
            assert _bad(events) == []               # first loss on it: excused
            excused_checked = True
        if _bad(events):
            break
        t += MS // 4
    assert excused_checked and tx.counters["first_packet_losses_excused"] >= 1
    assert victim in {e["ev"] for e in _bad(events)}
