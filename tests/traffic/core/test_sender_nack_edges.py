"""The MRC sender packet by packet: a NACK logs the peer's port status at its own time and,
declaring a loss, makes the sender due at once; a message's last packet asks for an ACK; the
send completion's log record; NSCC's window holds the data in flight; a SACK of unsent PSNs
is counted and ignored; a retired EV's probe carries its send time."""
from __future__ import annotations

from model.events import Event
from traffic.core.messages import Nack, NackReason, Probe, Sack
from traffic.core.reliability import MRCConfig

from tests.helpers.simnet import Harness, SimNet

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


def one_packet_sender(**cfg):
    h = Harness(SimNet(seed=31), cfg=MRCConfig(rto_ns=100 * MS, **cfg))
    region = h.registry.register(bytearray(100))
    h.sender.post_write(b"z" * 100, region.va, region.rkey, imm=7)
    [(pkt, _)] = h.sender.poll(h.clock.now_ns)
    return h, pkt


def test_a_nack_that_declares_a_loss_makes_the_sender_due_at_once():
    h, pkt = one_packet_sender()
    t = h.clock.now_ns + 50
    assert h.sender.next_deadline(t) > t             # only the RTO timer: 100 ms away
    h.sender.on_nack(Nack(dest_qp=0x11, psn=pkt.psn, reason=NackReason.NO_RESOURCE, ev=pkt.ev,
                          port_status=0b11, echo_timestamp=pkt.timestamp), t)
    assert h.sender.next_deadline(t) == t


def test_a_last_packet_asks_for_an_ack_and_is_counted():
    h, pkt = one_packet_sender()
    assert pkt.ack_req                               # WRITE_ONLY_IMM ends its message
    assert (h.sender.counters["sent_packets"], h.sender.counters["sent_bytes"]) == (1, 100)
    assert h.sender.counters["bad_acks"] == 0


def test_the_send_completion_is_logged_as_the_send_side():
    h, pkt = one_packet_sender()
    sacks = [m for m, _ in h.receiver.on_data(pkt, h.clock.now_ns + 10, 0)]
    for sack in sacks:
        h.sender.on_sack(sack, h.clock.now_ns + 20)
    done = [e for e in h.events if e["event"] == Event.COMPLETION and e.get("side") == "send"]
    assert done == [{"t_ns": h.clock.now_ns + 20, "event": Event.COMPLETION, "qp": 0x11,
                     "msn": 0, "bytes": 100, "imm": 7, "side": "send"}]


def test_nscc_holds_the_data_in_flight_to_its_window():
    """100 Mbit/s per plane x 2 planes x 1 ms base RTT: a BDP of 25000 B; the initial window
    is max_cwnd, 1.5 BDP = 37,500 B (uet-htsim initNscc). Of 100 x 1024-byte packets posted
    (the pacer's burst raised out of the way), the first poll sends only what fits it."""
    h = Harness(SimNet(seed=31), cfg=MRCConfig(rto_ns=100 * MS, pacing_burst_packets=100))
    region = h.registry.register(bytearray(102_400))
    h.sender.post_write(bytes(102_400), region.va, region.rkey)
    sent = h.sender.poll(h.clock.now_ns)
    cwnd = h.sender.nscc.cwnd
    assert cwnd == 37_500
    assert len(sent) == 36                           # 36 x 1024 <= 37,500 < 37 x 1024


def test_a_sack_beyond_what_was_sent_is_counted_as_bad_and_ignored():
    h, pkt = one_packet_sender()
    # one packet sent (PSN start..start+1): a cumulative ACK of start + 5 acknowledges the unsent
    h.sender.on_sack(Sack(dest_qp=0x11, cum_psn=pkt.psn + 5, port_status=0b11), h.clock.now_ns)
    assert h.sender.counters["bad_acks"] == 1 and h.sender.snd_una == pkt.psn


def test_a_probe_of_a_retired_ev_carries_its_send_time():
    h, pkt = one_packet_sender()
    h.sender.evs.mark_lost(pkt.ev, "test", h.clock.now_ns)
    t = h.clock.now_ns + 10 * h.sender.evs.probe_period_ns
    probes = [m for m, _ in h.sender.poll(t) if isinstance(m, Probe)]
    assert [(p.ev, p.timestamp, p.src_qp) for p in probes] == [(pkt.ev, t, 0x11)]


def test_a_trimmed_packet_is_retransmitted_at_once_when_every_other_ev_is_suspect():
    """The retransmission never goes back on the trimmed packet's own EV. If every other EV
    has an unexplained loss outstanding, retrying on one of them is the only way on: the
    packet must leave in the next poll, not wait for its RTO because its own (clean) EV
    looked like a usable alternative."""
    h, pkt = one_packet_sender()
    others = [ev for ev in h.sender.evs.active() if ev != pkt.ev]
    assert others
    for ev in others:
        info = h.sender.evs.evs[ev]
        h.sender.unexplained.lost((ev, (info.plane, info.spine)), pkt.timestamp)
    t = h.clock.now_ns + 50
    h.sender.on_nack(Nack(dest_qp=0x11, psn=pkt.psn, reason=NackReason.TRIMMED, ev=pkt.ev,
                          port_status=0b11, echo_timestamp=pkt.timestamp), t)
    out = h.sender.poll(t)
    [(retx, _)] = [(m, p) for m, p in out if getattr(m, "psn", None) == pkt.psn]
    assert retx.retransmit and retx.ev != pkt.ev and retx.ev in others
    assert h.sender.counters["retransmits_onto_suspect_evs"] == 1
