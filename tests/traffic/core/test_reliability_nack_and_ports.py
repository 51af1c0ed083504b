"""How the MRC sender answers each NACK reason (OCP MRC 1.0: trimmed = congestion, fast retransmit,
EV kept; other reasons count like timeouts; UNEXP_EVENT = QP error), and how local and peer
port state takes a plane out of use on both halves of a QP. Driven packet by packet."""
import dataclasses

import pytest

from model.events import Event
from traffic.core.evs import ASSUMED_BAD, GOOD
from traffic.core.messages import DataPacket, Nack, NackReason
from traffic.core.reliability import MRCConfig

from tests.helpers.simnet import Harness, SimNet

pytestmark = pytest.mark.core

MS = 1_000_000


def sender_with_one_packet(**cfg):
    h = Harness(SimNet(seed=31), cfg=MRCConfig(rto_ns=100 * MS, **cfg))
    region = h.registry.register(bytearray(100))
    h.sender.post_write(b"z" * 100, region.va, region.rkey)
    [(pkt, plane)] = h.sender.poll(h.clock.now_ns)
    return h, pkt, plane


def nack_for(pkt, reason, echo=None, port_status=0):
    return Nack(dest_qp=0x11, psn=pkt.psn, reason=reason, ev=pkt.ev, port_status=port_status,
                echo_timestamp=pkt.timestamp if echo is None else echo)


def resent(h, at_ns):
    return [p for p, _ in h.sender.poll(at_ns) if isinstance(p, DataPacket)]


def test_trimmed_nack_resends_at_once_on_another_ev_and_keeps_the_path():
    h, pkt, _ = sender_with_one_packet()
    h.sender.on_nack(nack_for(pkt, NackReason.TRIMMED), h.clock.now_ns + 10)
    [again] = resent(h, h.clock.now_ns + 20)
    assert again.psn == pkt.psn and again.retransmit and again.ev != pkt.ev
    assert h.sender.evs.state(pkt.ev) == GOOD
    assert [e["reason"] for e in h.events_of(Event.RETRANSMIT)] == ["nack_trimmed"]
    assert h.sender.counters["timeouts"] == 0


def test_nack_of_an_earlier_transmission_is_ignored():
    """The echoed timestamp names the transmission: a NACK for an older copy says nothing about
    the one in flight."""
    h, pkt, _ = sender_with_one_packet()
    h.sender.on_nack(nack_for(pkt, NackReason.TRIMMED, echo=pkt.timestamp - 1), h.clock.now_ns)
    assert resent(h, h.clock.now_ns + 20) == []
    assert h.sender.counters["nacks"] == 1 and not h.events_of(Event.RETRANSMIT)


def test_other_nack_reasons_count_against_the_retry_limit():
    """NO_RESOURCE: resend (reason nack_other), no EV penalty; more than the retry budget of such
    NACKs of one PSN -> QP error naming the reason."""
    h, pkt, _ = sender_with_one_packet(retry_linear_count=2, retry_exp_count=0)   # 2 retries
    t = h.clock.now_ns
    for i in range(2):
        t += MS
        h.sender.on_nack(nack_for(pkt, NackReason.NO_RESOURCE), t)
        [pkt] = resent(h, t)
        assert h.sender.error is None
    assert [e["reason"] for e in h.events_of(Event.RETRANSMIT)] == ["nack_other", "nack_other"]
    assert not h.events_of(Event.EV_STATE, new=ASSUMED_BAD)
    h.sender.on_nack(nack_for(pkt, NackReason.NO_RESOURCE), t + MS)
    assert h.sender.error == f"PSN {pkt.psn} NACKed (reason 0xa) more than 2 retries"
    assert h.events_of(Event.QP_ERROR)


def test_nack_reports_the_peers_ports():
    """port_status bit p = the peer's port on plane p is up: a NACK showing plane 1 down takes
    plane 1 out of use (0 means not reported and changes nothing)."""
    h, pkt, _ = sender_with_one_packet()
    h.sender.on_nack(nack_for(pkt, NackReason.TRIMMED, port_status=0), h.clock.now_ns)
    assert h.sender.evs.usable_planes() == [0, 1]
    h.sender.on_nack(nack_for(pkt, NackReason.TRIMMED, port_status=0b01), h.clock.now_ns)
    assert h.sender.evs.usable_planes() == [0]
    assert [(e["plane"], e["up"], e["side"])
            for e in h.events_of(Event.PORT)] == [(1, False, "peer")]


def test_local_port_down_takes_the_plane_out_of_use_once():
    h = Harness(SimNet(seed=32), cfg=MRCConfig(rto_ns=100 * MS))
    h.sender.set_local_port(0, False, 5)
    h.sender.set_local_port(0, False, 6)                    # no change: no second event
    assert [(e["plane"], e["up"], e["side"], e["t_ns"]) for e in h.events_of(Event.PORT)] == [
        (0, False, "local", 5)]
    assert h.sender.local_port_status == 0b10
    region = h.registry.register(bytearray(4000))
    h.sender.post_write(b"q" * 4000, region.va, region.rkey)
    planes = {plane for _, plane in h.sender.poll(h.clock.now_ns)}
    assert planes == {1}
    h.sender.set_local_port(0, True, 7)
    assert h.sender.local_port_status == 0b11


def test_receiver_answers_on_a_live_port_and_reports_its_ports():
    """A receiver whose plane-0 port is down sends its NACK over plane 1 and says plane 0 is
    down (port_status 0b10); with every port down it cannot answer at all."""
    h, pkt, _ = sender_with_one_packet()
    trimmed = dataclasses.replace(pkt, trimmed=True, payload=b"")
    rx = h.receiver
    rx.set_local_port(0, False, 1)
    rx.set_local_port(0, False, 2)
    assert [(e["plane"], e["up"]) for e in h.events_of(Event.PORT) if e.get("side") == "local"] == [
        (0, False)]
    assert rx.port_status == 0b10
    [(nack, plane)] = rx.on_data(trimmed, 10, 0)
    assert isinstance(nack, Nack) and nack.reason == NackReason.TRIMMED
    assert plane == 1 and nack.port_status == 0b10 and nack.echo_timestamp == pkt.timestamp
    assert nack.psn == pkt.psn and nack.ev == pkt.ev
    rx.set_local_port(1, False, 3)
    assert rx.on_data(trimmed, 11, 0) == []
