"""SACK coalescing (ack_every > 1, delayed-SACK timer): fewer SACKs, same delivery, no false
retirements from the coalescing delay (deterministic SimNet, fake clock)."""

import pytest

from model.events import Event
from traffic.core.evs import ASSUMED_BAD
from traffic.core.messages import DataPacket, Opcode, Sack
from traffic.core.reliability import MRCConfig

from tests.helpers.simnet import Harness, SimNet

pytestmark = pytest.mark.core

SIZES = [200_000, 1, 3000, 65_536]


def _deliver(h):
    region_expected, region = h.post(SIZES)
    h.run_until_idle()
    assert h.sender.error is None, h.sender.error
    assert bytes(region.buf) == region_expected
    assert h.receiver.counters["placed_bytes"] == sum(SIZES)
    assert [c.imm for c in h.receiver.completions] == [0x1000 + i for i in range(len(SIZES))]


def test_coalesced_sacks_deliver_everything_with_far_fewer_sacks_and_no_retirement():
    every = Harness(SimNet(seed=11, jitter_ns=200_000), MRCConfig(ack_every=1))
    _deliver(every)
    coalesced = Harness(SimNet(seed=11, jitter_ns=200_000), MRCConfig(ack_every=8))
    _deliver(coalesced)
    n1, n8 = every.receiver.counters["sacks"], coalesced.receiver.counters["sacks"]
    assert n8 < n1 / 3, (n1, n8)
    assert not coalesced.events_of(Event.EV_STATE, new=ASSUMED_BAD)
    assert coalesced.sender.counters["retransmitted_packets"] == 0


def test_coalesced_sacks_still_recover_from_loss():
    h = Harness(SimNet(seed=12, loss=0.05, jitter_ns=100_000), MRCConfig(ack_every=8))
    _deliver(h)
    assert h.sender.counters["retransmitted_packets"] > 0


def _data(psn, **kw):
    fields = dict(dest_qp=0x22, psn=psn, opcode=Opcode.WRITE_MIDDLE, msn=0, va=0x1000_0000 + psn * 8,
                  rkey=0x100, dma_len=1 << 20, payload=b"x" * 8, timestamp=1000 + psn, ev=0xC0DE)
    fields.update(kw)
    return DataPacket(**fields)


def test_delayed_sack_timer_and_immediate_triggers():
    h = Harness(SimNet(seed=13), MRCConfig(ack_every=4, ack_delay_ns=50_000))
    h.registry.register(bytearray(1 << 20))
    rx = h.receiver
    t = 1_000_000_000
    assert rx.on_data(_data(0), t, 0) == []            # coalesced: nothing yet
    assert rx.next_deadline(t) <= t + 50_000           # ... but the delayed SACK is armed
    assert not [m for m, _ in rx.poll(t + 49_999) if isinstance(m, Sack)]
    out = rx.poll(t + 50_000)
    # nothing came for the delay: the SACK leaves once (a copy would follow only after a frame
    # RTT without data, and the next packet comes 10 us later)
    sacks = [(m, p) for m, p in out if isinstance(m, Sack)]
    assert [(m.cum_psn, m.echo_timestamp) for m, _ in sacks] == [(1, 1000)]
    # ECN-marked packet: SACK at once with the echo
    [(sack, _)] = rx.on_data(_data(1, ecn_ce=True), t + 60_000, 0)
    assert sack.cum_psn == 2 and sack.skip
    # out of order alone does not force a SACK; a retransmission (AckReq) does
    assert rx.on_data(_data(3), t + 70_000, 1) == []
    # (its SACK is a tail SACK: copied on a second reverse path, another plane)
    [(sack, p0), (copy, p1)] = rx.on_data(_data(2, ack_req=True, retransmit=True), t + 71_000, 0)
    assert sack.cum_psn == copy.cum_psn == 4 and p0 == 0 and p1 != 0
    # far beyond the cumulative PSN (bitmap half full): at once
    assert rx.on_data(_data(40), t + 72_000, 0) != []
    # every ack_every-th packet
    outs = [rx.on_data(_data(p), t + 80_000 + p, 0) for p in range(4, 8)]
    assert [len(o) for o in outs] == [0, 0, 0, 1]
