"""MRCConfig.tail_sack_copy: the SACK answering an AckReq packet (a message's last packet, a
retransmission) also leaves over a second reverse path. No later SACK re-acknowledges a
message's tail, so when the reverse EV it took crosses a dead link the sender waits a whole RTO:
the receiver retires that reverse EV only some RTTs after the fault, and SACKs lost on it
meanwhile cost the sender second timeouts on packets that had arrived.

Receiver driven packet by packet, then a whole QP over the simulated network with the ACK
direction of one path dead. Expected values by hand from the rule: the copy takes the next plane
with an in-use reverse EV and a port up (planes share no link), else a reverse EV of the same
plane through another spine, else there is none.
"""
import random

import pytest

from model.topology import ev_plane, ev_spine, make_ev
from tests.helpers.simnet import Harness, SimNet
from traffic.core.evs import PathInfo
from traffic.core.memory import MemoryRegistry
from traffic.core.messages import DataPacket, Opcode, Sack, SkipMode
from traffic.core.qp_config import MRCConfig
from traffic.core.receiver import ReceiverQP

pytestmark = pytest.mark.core

QP, PEER, RKEY, VA = 0x300, 0x200, 0x77, 0x10000
MS = 1_000_000


def receiver(planes=(0, 1), spines=2, **cfg):
    reg = MemoryRegistry()
    reg.register(bytearray(1 << 16), va=VA, rkey=RKEY)
    return ReceiverQP(QP, PEER, MRCConfig(**cfg), PathInfo(planes, spines), random.Random(1), reg,
                      emit=lambda e: None)


def pkt(psn, plane=0, opcode=Opcode.WRITE_ONLY, msn=None, dma_len=100, **kw):
    msn = psn if msn is None else msn
    return DataPacket(dest_qp=QP, psn=psn, opcode=opcode, msn=msn, va=VA + 100 * psn,
                      rkey=RKEY, dma_len=dma_len, payload=b"x" * 100, ev=make_ev(plane, 1, 0x99),
                      timestamp=1_000 + psn, **kw)


def set_reverse(rx, plane, spines):
    """Make `plane`'s in-use reverse EVs cross exactly these spines."""
    for rev, spine in zip(rx.reverse_paths.evs[plane], spines, strict=True):
        rev.ev = make_ev(plane, spine, 0x5000 + spine)


def test_an_ack_req_packet_is_sacked_on_its_plane_and_on_the_other_one():
    rx = receiver()
    out = rx.on_data(pkt(0, ack_req=True, ecn_ce=True), 10, 0)
    assert [(type(m), plane, ev_plane(m.path_ev)) for m, plane in out] == \
        [(Sack, 0, 0), (Sack, 1, 1)]
    first, copy = out[0][0], out[1][0]
    # the same acknowledgement: cumulative PSN, bitmap, reflected EV and timestamp ...
    assert (copy.cum_psn, copy.bitmap, copy.ev, copy.echo_timestamp) == (1, 0, first.ev, 1_000)
    # ... but the ECN echo only once, so the sender skips the EV and NSCC decreases once
    assert (first.skip, copy.skip) == (SkipMode.SKIP_ONCE, SkipMode.NONE)
    assert rx.counters["sack_copies"] == 1 and rx.counters["sacks"] == 1


def test_no_copy_for_a_packet_that_ends_nothing_or_with_the_option_off():
    rx = receiver(ack_every=1)                               # every packet SACKed at once
    assert len(rx.on_data(pkt(0, opcode=Opcode.WRITE_FIRST), 10, 0)) == 1
    off = receiver(tail_sack_copy=False)
    assert len(off.on_data(pkt(0, ack_req=True), 10, 0)) == 1
    assert rx.counters["sack_copies"] == off.counters["sack_copies"] == 0


def test_the_packet_that_completes_a_message_after_its_last_one_overtook_it():
    rx = receiver(ack_every=4)                               # coalescing, as on the fabric
    first, middle, last = Opcode.WRITE_FIRST, Opcode.WRITE_MIDDLE, Opcode.WRITE_LAST
    assert rx.on_data(pkt(0, opcode=first, msn=0, dma_len=300), 10, 0) == []   # coalesced
    # the last packet overtakes the middle one: SACKed at once (AckReq), twice
    assert len(rx.on_data(pkt(2, opcode=last, msn=0, dma_len=300, ack_req=True), 11, 0)) == 2
    # the middle one completes the message: SACKed at once, not coalesced, and twice
    out = rx.on_data(pkt(1, opcode=middle, msn=0, dma_len=300), 12, 0)
    assert [(m.cum_psn, plane) for m, plane in out] == [(3, 0), (3, 1)]
    # the next message's first packet completes nothing: coalesced again
    assert rx.on_data(pkt(3, opcode=Opcode.WRITE_FIRST, msn=1), 13, 0) == []
    assert rx.counters["sack_copies"] == 2


def test_a_resent_packet_the_receiver_already_has_is_sacked_twice():
    rx = receiver()
    rx.on_data(pkt(0, ack_req=True), 10, 1)
    out = rx.on_data(pkt(0, ack_req=True, retransmit=True), 20, 1)   # its ACK went missing
    assert [plane for _, plane in out] == [1, 0]
    assert rx.counters["duplicates"] == 1 and rx.counters["sack_copies"] == 2


def test_the_copy_skips_a_plane_whose_port_is_down():
    rx = receiver(planes=(0, 1, 2))
    rx.set_local_port(1, False, 5)
    out = rx.on_data(pkt(0, ack_req=True), 10, 0)
    assert [plane for _, plane in out] == [0, 2]


def test_with_one_plane_the_copy_takes_another_spine_or_is_not_sent():
    rx = receiver(planes=(0,), spines=2)
    set_reverse(rx, 0, (0, 1))
    spines = [ev_spine(m.path_ev) for m, _ in rx.on_data(pkt(0, ack_req=True), 10, 0)]
    assert sorted(spines) == [0, 1]
    same = receiver(planes=(0,), spines=2)
    set_reverse(same, 0, (1, 1))                             # both reverse EVs via spine 1
    assert len(same.on_data(pkt(0, ack_req=True), 10, 0)) == 1


def message_by_message(copy: bool, seed: int) -> dict:
    """30 messages of 3 packets, each posted when the last completed (a ring's steps), SACKs
    coalesced as the endpoints do (ack_every 4, else a message's tail): the ACK
    direction of path (plane 0, spine 0) is dead from the start and both of the receiver's
    plane-0 reverse EVs cross it, so every SACK answering data that came in on plane 0 is lost."""
    net = SimNet(seed=seed, planes=2, spines=2)
    net.path(0, 0).blackhole_to = "A"
    h = Harness(net, cfg=MRCConfig(tail_sack_copy=copy, ack_every=4), seed=seed)
    set_reverse(h.receiver, 0, (0, 0))
    start = h.clock.now_ns
    for _ in range(30):
        h.transfer([3 * h.cfg.max_payload], until_ns=60_000 * MS)
    return {"timeouts": h.sender.counters["timeouts"],
            "retransmitted": h.sender.counters["retransmitted_packets"],
            "elapsed_ms": (h.clock.now_ns - start) / MS}


def test_tail_sacks_survive_a_dead_reverse_path():
    for seed in (1, 2, 3):
        with_copy, without = message_by_message(True, seed), message_by_message(False, seed)
        # Every message's tail SACK also leaves on plane 1, whose paths all work, and it
        # acknowledges the whole message cumulatively: nothing ever times out.
        assert with_copy["timeouts"] == 0 and with_copy["retransmitted"] == 0, with_copy
        # Without the copy, a message whose last packet came in on plane 0 (the sender's
        # planes take turns) has its only tail SACK lost: the sender resends on a timeout until
        # the receiver's probes retire its dead reverse EVs.
        assert without["timeouts"] >= 1, without
        assert without["elapsed_ms"] > with_copy["elapsed_ms"], (with_copy, without)


def test_a_coalesced_sack_whose_delay_ran_out_is_copied_once_no_data_follows():
    """ack_every 4: one middle packet arrives and nothing after it. Its SACK waits ack_delay
    (0.25 base RTT of 1 ms = 0.25 ms) and leaves on its plane only; after another
    tail_copy_wait_rtts (1 base RTT = 1 ms) with no packet, the burst has ended and its copy
    leaves on the other plane, without the echoed timestamp (1 ms of waiting is no round trip)."""
    rx = receiver(ack_every=4, base_rtt_ns=MS, ack_delay_rtts=0.25, tail_copy_wait_rtts=1.0)
    assert rx.on_data(pkt(0, opcode=Opcode.WRITE_FIRST, msn=0, dma_len=1000), 10, 0) == []
    assert sacks(rx.poll(10 + MS // 4 - 1)) == []               # the delay has not run out
    out = sacks(rx.poll(10 + MS // 4))
    assert [(type(m), plane) for m, plane in out] == [(Sack, 0)]
    first = out[0][0]
    assert (first.cum_psn, first.echo_timestamp) == (1, 1_000)
    assert rx.next_deadline(10 + MS // 4) <= 10 + MS // 4 + MS
    assert sacks(rx.poll(10 + MS // 4 + MS - 1)) == []          # still waiting for data
    out = sacks(rx.poll(10 + MS // 4 + MS))
    assert [(type(m), plane) for m, plane in out] == [(Sack, 1)]
    copy = out[0][0]
    assert (copy.cum_psn, copy.bitmap, copy.ev, copy.echo_timestamp) == (1, 0, first.ev, 0)
    assert rx.counters["sack_copies"] == 1 and rx.counters["sacks"] == 1
    assert sacks(rx.poll(10 + 10 * MS)) == []                   # once
    for psn in (1, 2, 3, 4):                                     # 4 packets after that SACK
        out = rx.on_data(pkt(psn, opcode=Opcode.WRITE_MIDDLE, msn=0, dma_len=1000), 20 + psn, 0)
    assert [(type(m), plane) for m, plane in out] == [(Sack, 0)]  # the 4th: a SACK, once
    assert rx.counters["sack_copies"] == 1


def test_a_late_copy_carries_the_port_status_of_its_own_time():
    """Plane 0 goes down between the delayed SACK (both ports up: 0b11) and its copy: the copy
    must say so (0b10), or the sender would take plane 0 for up again."""
    rx = receiver(planes=(0, 1), spines=2, ack_every=4, base_rtt_ns=MS, ack_delay_rtts=0.25,
                  tail_copy_wait_rtts=1.0)
    rx.on_data(pkt(0, plane=1, opcode=Opcode.WRITE_FIRST, msn=0, dma_len=1000), 10, 1)
    [(first, _)] = sacks(rx.poll(10 + MS // 4))
    assert first.port_status == 0b11
    rx.set_local_port(0, False, 10 + MS // 2)
    [(copy, _)] = sacks(rx.poll(10 + MS // 4 + MS))
    assert copy.port_status == 0b10


def test_data_within_the_wait_cancels_the_delayed_sacks_copy():
    """While the sender streams (a packet every 0.5 ms against a 0.25 ms coalescing delay),
    every delayed SACK is followed by data, which later SACKs acknowledge: no copy at all."""
    rx = receiver(ack_every=4, base_rtt_ns=MS, ack_delay_rtts=0.25, tail_copy_wait_rtts=1.0)
    sent = []
    for psn in range(8):
        t = 10 + psn * MS // 2
        sent += sacks(rx.on_data(pkt(psn, opcode=Opcode.WRITE_MIDDLE, msn=0, dma_len=10_000),
                                 t, 0))
        sent += sacks(rx.poll(t + MS // 4))                      # the delay runs out
    assert len(sent) == 8 and all(plane == 0 for _, plane in sent)
    assert rx.counters["sack_copies"] == 0
    last = 10 + 7 * MS // 2 + MS // 4
    assert [plane for _, plane in sacks(rx.poll(last + MS))] == [1]   # the last one: copied
    assert rx.counters["sack_copies"] == 1
    # A delayed SACK, then 4 packets within the wait: the 4th is SACKed at once (ack_every),
    # and that SACK, not the delayed one, is the newest acknowledgement: nothing is copied.
    t = last + 2 * MS
    rx.on_data(pkt(8, opcode=Opcode.WRITE_MIDDLE, msn=0, dma_len=10_000), t, 0)
    assert len(sacks(rx.poll(t + MS // 4))) == 1
    for psn in (9, 10, 11, 12):
        out = sacks(rx.on_data(pkt(psn, opcode=Opcode.WRITE_MIDDLE, msn=0, dma_len=10_000),
                               t + MS // 4 + psn, 0))
    assert [plane for _, plane in out] == [0]
    assert sacks(rx.poll(t + 10 * MS)) == [] and rx.counters["sack_copies"] == 1


def sacks(out: list) -> list:
    """The SACKs among what the receiver's poll returns (it also sends reverse-EV probes)."""
    return [(m, plane) for m, plane in out if isinstance(m, Sack)]


def test_without_tail_copies_the_delayed_sack_leaves_once():
    rx = receiver(ack_every=4, base_rtt_ns=MS, ack_delay_rtts=0.25, tail_sack_copy=False)
    rx.on_data(pkt(0, opcode=Opcode.WRITE_FIRST, msn=0, dma_len=1000), 10, 0)
    assert [(type(m), plane) for m, plane in sacks(rx.poll(10 + MS // 4))] == [(Sack, 0)]
