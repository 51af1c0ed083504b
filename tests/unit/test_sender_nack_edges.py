"""The MRC sender's answer to a NACK: the peer's port status it carries is logged at the
NACK's time."""
from __future__ import annotations

from model.events import Event
from traffic.messages import Nack, NackReason
from traffic.reliability import MRCConfig

from tests.unit.simnet import Harness, SimNet

MS = 1_000_000


def test_a_nack_reports_the_peers_ports_at_its_own_time():
    h = Harness(SimNet(seed=31), cfg=MRCConfig(rto_ns=100 * MS))
    region = h.registry.register(bytearray(100))
    h.sender.post_write(b"z" * 100, region.va, region.rkey)
    [(pkt, _)] = h.sender.poll(h.clock.now_ns)
    at = h.clock.now_ns + 123
    h.sender.on_nack(Nack(dest_qp=0x11, psn=pkt.psn, reason=NackReason.TRIMMED, ev=pkt.ev,
                          port_status=0b01, echo_timestamp=pkt.timestamp), at)
    ports = [e for e in h.events if e["event"] == Event.PORT]
    assert ports == [{"t_ns": at, "event": Event.PORT, "plane": 1, "up": False, "side": "peer",
                      "qp": 0x11}]

