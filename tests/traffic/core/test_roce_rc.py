"""The single-path RoCE RC baseline by its rules (in-order receiver, go-back-N, retry_cnt, QP
error on a remote access error), driven packet by packet, and the memory registry's errors."""
import random

import pytest

from model.events import Event
from traffic.core.evs import PathInfo
from traffic.core.messages import DataPacket, Nack, NackReason, Sack
from traffic.core.reliability import AccessError, MemoryRegistry, MRCConfig
from traffic.core.roce_rc import RoceReceiverQP, RoceSenderQP

from tests.helpers.simnet import Harness, SimNet

pytestmark = pytest.mark.core

MS = 1_000_000


def roce(cfg=None, net=None):
    return Harness(net or SimNet(seed=21), cfg=cfg or MRCConfig(max_payload=1000, roce_ack_timeout_ns=MS),
                   sender_cls=RoceSenderQP, receiver_cls=RoceReceiverQP)


def data_of(out):
    return [pkt for pkt, _plane in out if isinstance(pkt, DataPacket)]


def drain(h, ms=20):
    """Everything the sender sends in the next `ms` (polled every 0.1 ms: the pacer lets a few
    packets go at a time)."""
    out = []
    for _ in range(ms * 10):
        out += data_of(h.sender.poll(h.clock.now_ns))
        h.clock.now_ns += MS // 10
    return out


def to_receiver(h, pkts):
    """Feed data packets to the receiver; its replies (ACKs as Sack, NAKs as Nack)."""
    replies = []
    for pkt in pkts:
        replies += [m for m, _plane in h.receiver.on_data(pkt, h.clock.now_ns, 0)]
    return replies


def test_lost_packet_is_naked_once_and_everything_from_it_is_resent():
    """6 packets, PSN 2 lost: the receiver ACKs 0 and 1, drops 3..5 (out of order) with ONE
    sequence-error NAK naming PSN 2, and the sender goes back to 2 and resends 2, 3, 4, 5."""
    h = roce(MRCConfig(max_payload=1000, roce_ack_timeout_ns=1000 * MS))
    region = h.registry.register(bytearray(6000))
    h.sender.post_write(bytes(range(200)) * 30, region.va, region.rkey)
    first = drain(h)
    assert [p.psn for p in first] == [0, 1, 2, 3, 4, 5]
    replies = to_receiver(h, [p for p in first if p.psn != 2])
    acks = [m.cum_psn for m in replies if isinstance(m, Sack)]
    naks = [m for m in replies if isinstance(m, Nack)]
    assert acks == [1, 2]                                # cumulative: next expected PSN
    assert [(n.psn, n.reason) for n in naks] == [(2, NackReason.PSN_SEQ_ERR)]
    assert h.receiver.counters["out_of_order_dropped"] == 3
    for m in replies:
        (h.sender.on_sack if isinstance(m, Sack) else h.sender.on_nack)(m, h.clock.now_ns)
    again = drain(h)
    assert [p.psn for p in again] == [2, 3, 4, 5] and all(p.retransmit for p in again)
    assert [e["psn"] for e in h.events_of(Event.RETRANSMIT, reason="gbn")] == [2, 3, 4, 5]
    replies = to_receiver(h, again)
    assert [m.cum_psn for m in replies] == [3, 4, 5, 6]
    assert bytes(region.buf) == bytes(range(200)) * 30


def test_retry_limit_then_qp_error_at_a_fixed_ack_timeout():
    """No ACK ever: the IB ACK timeout is one fixed interval (1 ms here), waited afresh after
    every timeout: timeouts at 1, 2, 3, 4 ms, the first three each a go-back-N resend; the 4th
    exceeds retry_cnt 3 -> QP error at 4 x 1 ms."""
    net = SimNet(seed=22, planes=2, spines=2)
    net.failed_planes.update({0, 1})
    h = roce(MRCConfig(max_payload=1000, roce_ack_timeout_ns=MS, roce_retry_limit=3), net)
    start = h.clock.now_ns
    h.post([500])
    h.run_until_idle(until_ns=10_000 * MS)
    assert h.sender.error and "3 retries" in h.sender.error
    assert h.sender.counters["timeouts"] == 4
    assert h.sender.counters["retransmitted_packets"] == 3
    assert 4 * MS <= h.clock.now_ns - start <= 4 * MS + MS // 10
    assert h.sender.poll(h.clock.now_ns) == [] and h.sender.next_deadline(h.clock.now_ns) is None


def test_nccl_defaults_error_a_blackholed_qp_after_7_retries_of_4_29_s():
    """NCCL's settings (NCCL_IB_TIMEOUT 20, NCCL_IB_RETRY_CNT 7, NCCL's environment variable
    documentation) are the defaults: a QP whose path answers nothing resends at 4.096 us x 2^20
    = 4.294967296 s, 8.59 s, ... 30.06 s (7 retries) and errors at the 8th timeout,
    8 x 4.294967296 s = 34.359738368 s after its first packet."""
    net = SimNet(seed=23, planes=2, spines=2)
    net.failed_planes.update({0, 1})
    h = roce(MRCConfig(max_payload=1000), net)
    start = h.clock.now_ns
    h.post([500])
    h.run_until_idle(until_ns=100_000 * MS)
    assert h.sender.error and "7 retries" in h.sender.error
    resends = [e["t_ns"] - start for e in h.events_of(Event.RETRANSMIT, reason="gbn")]
    assert resends == pytest.approx([i * 4_294_967_296 for i in range(1, 8)], abs=MS)
    assert h.clock.now_ns - start == pytest.approx(34_359_738_368, abs=MS)


def test_remote_access_error_is_a_qp_error():
    """A WRITE to an unregistered rkey: the receiver answers NAK UNEXP_EVENT, the sender's QP
    goes to error and sends nothing more."""
    h = roce()
    h.sender.post_write(b"x" * 100, 0xDEAD0000, 0x999)
    replies = to_receiver(h, data_of(h.sender.poll(h.clock.now_ns)))
    assert [(type(m), m.reason) for m in replies] == [(Nack, NackReason.UNEXP_EVENT)]
    assert h.receiver.counters["access_errors"] == 1
    h.sender.on_nack(replies[0], h.clock.now_ns)
    assert h.sender.error and "remote access" in h.sender.error
    assert h.sender.poll(h.clock.now_ns + 100 * MS) == []


def test_memory_registry_rejects_what_it_cannot_honour():
    reg = MemoryRegistry()
    with pytest.raises(ValueError, match="writable"):
        reg.register(b"read-only bytes")
    mr = reg.register(bytearray(16), va=0x5000, rkey=7)
    with pytest.raises(ValueError, match="already registered"):
        reg.register(bytearray(4), rkey=7)
    with pytest.raises(AccessError, match="unknown rkey"):
        reg.write(8, 0x5000, b"a")
    reg.write(7, 0x5000 + 12, b"abcd")                     # the last 4 bytes: fits exactly
    assert bytes(mr.buf[12:]) == b"abcd"
    with pytest.raises(AccessError, match="outside region"):
        reg.write(7, 0x5000 + 13, b"abcd")                 # one byte past the end
    with pytest.raises(AccessError, match="outside region"):
        reg.write(7, 0x5000 - 1, b"a")                     # one byte before the start
    reg.deregister(7)
    with pytest.raises(AccessError, match="unknown rkey"):
        reg.write(7, 0x5000, b"a")
    # regions placed by the registry do not overlap: VAs 64 KiB apart (a 70 KB one takes two)
    a = reg.register(bytearray(70_000))
    b = reg.register(bytearray(10))
    assert b.va - a.va == 0x20000 and a.rkey != b.rkey


def test_ack_timeout_is_one_fixed_interval_from_the_previous_timeout():
    """The IB ACK timeout has no backoff: with a 1 ms timeout and one packet sent at t0 the
    resends go at t0+1 ms and t0+2 ms, nothing in between; the QP's own rto_ns (MRC's) does
    not change it."""
    h = roce(MRCConfig(max_payload=1000, roce_ack_timeout_ns=MS, rto_ns=50 * MS))
    region = h.registry.register(bytearray(100))
    h.sender.post_write(b"y" * 100, region.va, region.rkey)
    t0 = h.clock.now_ns
    assert len(data_of(h.sender.poll(t0))) == 1
    assert data_of(h.sender.poll(t0 + MS - 1)) == []
    assert len(data_of(h.sender.poll(t0 + MS))) == 1
    assert h.sender.next_deadline(t0 + MS) == t0 + 2 * MS
    assert data_of(h.sender.poll(t0 + 2 * MS - 1)) == []
    assert len(data_of(h.sender.poll(t0 + 2 * MS))) == 1
    assert h.sender.counters["timeouts"] == 2


def test_the_ack_timeout_exponent_is_4_096_us_times_2_to_the_n():
    """roce_ack_timeout n: 4.096 us x 2^n (IBTA local ACK timeout; n = 14: 67.108864 ms);
    roce_ack_timeout_ns, when set, is the interval itself."""
    assert RoceSenderQP(0x10, 0x11, MRCConfig(roce_ack_timeout=14), _paths(),
                        random.Random(1)).rto_ns() == 67_108_864
    assert RoceSenderQP(0x10, 0x11, MRCConfig(roce_ack_timeout=14, roce_ack_timeout_ns=5),
                        _paths(), random.Random(1)).rto_ns() == 5
    with pytest.raises(ValueError, match="NCCL_IB_TIMEOUT"):
        MRCConfig(roce_ack_timeout=32)


def _paths():
    return PathInfo(planes=(0, 1), spines=2)


def test_a_write_posted_while_the_port_is_down_goes_out_once_it_is_up():
    """Nothing outstanding and the QP's port down when a WRITE is posted: there is no ACK timer
    to wake the QP, and the endpoint polls a QP only at its next deadline, so the port's return
    must be one. (In a switch-down run a RoCE QP whose port went down between two WRITEs never
    sent the second one after the port came back.)"""
    h = roce()
    region = h.registry.register(bytearray(3000))
    now = h.clock.now_ns
    h.sender.set_local_port(h.sender.plane, False, now)
    h.sender.post_write(bytes(3000), region.va, region.rkey)
    assert data_of(h.sender.poll(now)) == []
    assert h.sender.next_deadline(now) is None          # no busy loop while the port is down
    h.sender.set_local_port(h.sender.plane, True, now + 1)
    due = h.sender.next_deadline(now + 1)
    assert due is not None and due <= now + 1
    assert [p.psn for p in data_of(h.sender.poll(now + 1))] == [0, 1, 2]
