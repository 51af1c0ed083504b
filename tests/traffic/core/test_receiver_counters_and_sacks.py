"""ReceiverQP (traffic/core/receiver.py) driven packet by packet: the counters it reports, the SACK
it answers with (cumulative PSN, bitmap and its base, reflected EV, ECN echo), when a SACK is
coalesced or sent at once, the probe answer, and the local port event.

Expected values by hand from the rules in the module (SACK bitmap of 64 PSNs; a late packet is
one sent a reorder window or more before the newest seen).
"""
from traffic.core.messages import DataPacket, Nack, NackReason, Opcode, Probe, Sack, SkipMode
from traffic.core.receiver import answer_probe
from model.topology import make_ev
from model.events import Event
from tests.helpers.core_builders import EV0, PEER, QP, RKEY, VA, receiver


def pkt(psn, *, opcode=Opcode.WRITE_ONLY, msn=None, size=100, dma_len=None, **kw):
    msn = psn if msn is None else msn
    return DataPacket(dest_qp=QP, psn=psn, opcode=opcode, msn=msn, va=VA + 100 * psn, rkey=RKEY,
                      dma_len=size if dma_len is None else dma_len, payload=b"x" * size,
                      ev=EV0, **kw)


def test_answer_probe_reflects_the_probe_on_its_own_ev():
    probe = Probe(ev=make_ev(1, 0, 0x42), seq=9, timestamp=1234, src_qp=0x200)
    resp, plane = answer_probe(probe, 0b11)
    assert resp == Probe(ev=probe.ev, seq=9, timestamp=1234, response=True, src_qp=0x200,
                         port_status=0b11, path_ev=probe.ev)
    assert plane == 1


def test_local_port_event():
    rx, events = receiver()
    rx.set_local_port(1, False, 500)
    rx.set_local_port(1, False, 600)                       # no change: no event
    assert events == [{"t_ns": 500, "event": Event.PORT, "plane": 1, "up": False, "side": "local",
                       "qp": QP}]


def test_counters_count_each_kind_of_packet_once():
    rx, _ = receiver()
    rx.on_data(DataPacket(dest_qp=QP + 1, psn=0, opcode=Opcode.WRITE_ONLY, msn=0, va=VA,
                          rkey=RKEY, dma_len=1), 10, 0)      # another QP's
    rx.on_data(pkt(0, opcode=Opcode.ACK), 11, 0)            # not a WRITE
    rx.on_data(pkt(0), 12, 0)
    rx.on_data(pkt(0), 13, 0)                               # duplicate
    rx.on_data(pkt(1, trimmed=True), 14, 0)
    rx.on_data(pkt(2, dma_len=50), 15, 0)                   # more payload than the DMA length
    rx.on_data(DataPacket(dest_qp=QP, psn=3, opcode=Opcode.WRITE_ONLY, msn=3, va=VA, rkey=0x99,
                          dma_len=1, payload=b"z"), 16, 0)  # unknown rkey
    c = rx.counters
    assert (c["foreign"], c["malformed"], c["rx_packets"], c["duplicates"], c["trimmed"],
            c["access_errors"]) == (1, 2, 5, 1, 1, 1)
    assert (c["rx_bytes"], c["placed_bytes"], c["sacks"], c["nacks"]) == (100, 100, 2, 2)


def test_a_packet_the_assembler_refuses_is_malformed():
    rx, _ = receiver()
    rx.on_data(pkt(0, opcode=Opcode.WRITE_FIRST, msn=0, dma_len=300), 1, 0)
    rx.on_data(pkt(1, opcode=Opcode.WRITE_MIDDLE, msn=0, dma_len=999), 2, 0)
    assert rx.counters["malformed"] == 1


def test_sack_reports_cumulative_psn_bitmap_and_ecn_and_nacks_name_the_reason():
    rx, _ = receiver()
    # a message's only packet: a tail SACK, sent on its plane and copied on the other
    (sack, plane), (copy, copy_plane) = rx.on_data(pkt(0), 10, 1)
    assert plane == 1 and isinstance(sack, Sack) and copy_plane == 0
    assert (copy.cum_psn, copy.ev) == (sack.cum_psn, sack.ev)
    assert (sack.dest_qp, sack.cum_psn, sack.bitmap, sack.ev, sack.skip) == \
        (PEER, 1, 0, EV0, SkipMode.NONE)
    (sack, _), = rx.on_data(pkt(3, ecn_ce=True), 11, 1)      # 1, 2 missing
    assert (sack.cum_psn, sack.sack_base, sack.bitmap, sack.skip) == (1, 1, 0b100, SkipMode.SKIP_ONCE)
    (nack, _), = rx.on_data(pkt(2, trimmed=True, trim_lasthop=True), 12, 1)
    assert isinstance(nack, Nack) and (nack.psn, nack.reason) == (2, NackReason.TRIMMED_LASTHOP)
    (nack, _), = rx.on_data(DataPacket(dest_qp=QP, psn=4, opcode=Opcode.WRITE_ONLY, msn=4, va=VA,
                                       rkey=0x99, dma_len=1, payload=b"z"), 13, 1)
    assert nack.reason == NackReason.UNEXP_EVENT


def test_the_bitmap_slides_to_end_at_a_psn_64_or_more_beyond_the_cumulative_one():
    """cum 0. PSN 63 (63 beyond cum): the bitmap starts at cum, bit 63. PSN 64: a 64-bit
    bitmap from cum cannot hold it, so it starts at 64 - 64 + 1 = 1 (PSN 63 is bit 62, 64 bit
    63). PSN 70: it starts at 7 (63 -> bit 56, 64 -> bit 57, 70 -> bit 63)."""
    rx, _ = receiver()
    (sack, _), = rx.on_data(pkt(63), 10, 0)
    assert (sack.cum_psn, sack.sack_base, sack.bitmap) == (0, 0, 1 << 63)
    (sack, _), = rx.on_data(pkt(64), 11, 0)
    assert (sack.cum_psn, sack.sack_base, sack.bitmap) == (0, 1, (1 << 63) | (1 << 62))
    (sack, _), = rx.on_data(pkt(70), 12, 0)
    assert (sack.sack_base, sack.bitmap) == (7, (1 << 63) | (1 << 57) | (1 << 56))


def test_coalesced_sack_goes_after_the_ack_delay_for_the_newest_packet():
    """ack_every 4, ack_delay 1e-9 RTTs: int(1e-3 ns) = 0, so the delay is the 1 ns minimum."""
    rx, _ = receiver(ack_every=4, ack_delay_rtts=1e-9, tail_copy_wait_rtts=1e-9)
    assert rx.on_data(pkt(0, opcode=Opcode.WRITE_FIRST, msn=0, dma_len=400, timestamp=5), 100, 1) == []
    assert [m for m, _ in rx.poll(100) if isinstance(m, Sack)] == []
    # on the newest packet's plane
    [(sack, plane)] = [(m, p) for m, p in rx.poll(101) if isinstance(m, Sack)]
    assert (sack.cum_psn, sack.ev, sack.echo_timestamp, sack.skip, plane) == (1, EV0, 5, SkipMode.NONE, 1)
    # nothing came for the (1 ns) wait after it: a tail, copied on the other plane, unstamped
    [(copy, other)] = [(m, p) for m, p in rx.poll(102) if isinstance(m, Sack)]
    assert (copy.cum_psn, copy.echo_timestamp, other) == (1, 0, 0)


def test_late_is_at_least_one_ns_and_at_least_the_trim_bound():
    """reorder_rtts 0: a packet sent 1 ns before the newest is late (own SACK), one sent
    at the same time is not (coalesced)."""
    rx, _ = receiver(ack_every=8, reorder_rtts=0.0)
    first = dict(opcode=Opcode.WRITE_FIRST, msn=0, dma_len=800)
    mid = dict(opcode=Opcode.WRITE_MIDDLE, msn=0, dma_len=800)
    assert rx.on_data(pkt(0, timestamp=1000, **first), 1, 0) == []
    assert rx.on_data(pkt(1, timestamp=1000, **mid), 2, 0) == []      # same time: not late
    assert len(rx.on_data(pkt(2, timestamp=999, **mid), 3, 0)) == 1   # 1 ns older: late
    rx, _ = receiver(ack_every=8, reorder_rtts=0.0, fabric_delay_bound_ns=1000)
    assert rx.on_data(pkt(0, timestamp=5000, **first), 1, 0) == []
    assert rx.on_data(pkt(1, timestamp=4001, **mid), 2, 0) == []      # 999 ns < the bound
    assert len(rx.on_data(pkt(2, timestamp=4000, **mid), 3, 0)) == 1


def test_repeated_foreign_and_non_write_packets_are_each_counted():
    rx, _ = receiver()
    for t in range(2):
        rx.on_data(DataPacket(dest_qp=QP + 1, psn=t, opcode=Opcode.WRITE_ONLY, msn=0, va=VA,
                              rkey=RKEY, dma_len=1), t, 0)
        rx.on_data(pkt(t, opcode=Opcode.ACK), t, 0)
    assert (rx.counters["foreign"], rx.counters["malformed"]) == (2, 2)


def test_sack_and_nack_carry_every_field_the_sender_reads():
    """40 in-order packets (cum 40), then PSN 45: bitmap from cum (5 beyond it), bit 5; one
    packet out of order so far; 41 x 100 B received; MPR as configured; no timestamp echoes 0.
    The NACK goes back on the plane the data came in on, to the peer QP."""
    rx, _ = receiver(mpr=4)
    for psn in range(40):
        rx.on_data(pkt(psn, timestamp=1000 + psn), 10 + psn, 0)
    (sack, plane), = rx.on_data(pkt(45), 100, 1)
    assert plane == 1
    assert (sack.dest_qp, sack.cum_psn, sack.sack_base, sack.bitmap, sack.mpr, sack.ooo_count,
            sack.rx_bytes, sack.echo_timestamp) == (PEER, 40, 40, 1 << 5, 4, 1, 4100, 0)
    (nack, plane), = rx.on_data(pkt(41, trimmed=True), 101, 1)
    assert plane == 1
    assert (nack.dest_qp, nack.psn, nack.reason, nack.ev, nack.echo_timestamp) == \
        (PEER, 41, NackReason.TRIMMED, EV0, 0)
