"""Edges of the receiver and the message assembler, by hand.

* The receiver probes its reverse paths while data flows, and stops reverse_idle_rtts base RTTs
  after the last data packet (here 1000 ns x 100 = 100000 ns): still at exactly that age.
* CE-marked data, like trimmed data, means a queue on the way: reverse-probe timeouts during
  congestion_grace_rtts (8000 ns) after it are excused.
* A message completes when its last packet has been seen and all its bytes placed.
* RETH's DMA length is 32 bits: a WRITE of 2^32 - 1 bytes is the largest there is.
"""
from __future__ import annotations

import mmap

import pytest

from model.events import Event
from traffic.core.messages import DataPacket, Opcode, Probe
from traffic.core.work_requests import MessageAssembler, QPError, validate_write

from tests.helpers.core_builders import EV0, QP, RKEY, VA
from tests.helpers.core_builders import receiver as _receiver


def receiver(**cfg):
    return _receiver(base_rtt_ns=1000, **cfg)


def pkt(psn, **kw):
    return DataPacket(dest_qp=QP, psn=psn, opcode=Opcode.WRITE_ONLY, msn=psn, va=VA + 100 * psn,
                      rkey=RKEY, dma_len=100, payload=b"x" * 100, ev=EV0, **kw)


def probes(out):
    return [m for m, _ in out if isinstance(m, Probe)]


def test_reverse_probing_stops_after_the_idle_time_and_not_before():
    rx, _ = receiver()
    assert probes(rx.poll(0)) == []                 # no data yet
    rx.on_data(pkt(0), 1000, 0)
    assert len(probes(rx.poll(1000))) == 1
    assert len(probes(rx.poll(101_000))) >= 1       # exactly 100 base RTTs since the data
    assert probes(rx.poll(101_001)) == []


def test_ce_marked_data_excuses_reverse_probe_timeouts():
    for marks, excused in (({"ecn_ce": True}, 1), ({"trimmed": True}, 1), ({}, 0)):
        rx, events = receiver()
        rx.on_data(pkt(0), 0, 0)
        rx.poll(0)                                  # a reverse probe at 0
        rx.on_data(pkt(1, **marks), 3000, 0)        # congestion noted at 3000: until 11000
        rx.poll(4000)                               # the probe of 0 times out
        congested = [e for e in events if e["event"] == Event.PROBE and e.get("congested")]
        assert len(congested) == excused, marks


def test_a_message_completes_only_once_its_last_packet_is_seen():
    done = []
    asm = MessageAssembler(7, done.append)
    # the first packet claims every byte of the message; the last one carries none
    assert asm.add(0, 300, 300, Opcode.WRITE_FIRST, None, 10)
    assert asm.completions == [] and asm.next_msn == 0
    assert asm.add(0, 0, 300, Opcode.WRITE_LAST_IMM, 0xAB, 20)
    assert [(c.msn, c.bytes, c.imm) for c in asm.completions] == [(0, 300, 0xAB)]
    assert done[0]["t_ns"] == 20 and asm.next_msn == 1


def test_the_largest_write_is_2_to_the_32_minus_1_bytes():
    with mmap.mmap(-1, 0xFFFFFFFF) as largest:      # untouched pages: nothing is allocated
        assert validate_write(largest, 0, 1, None).nbytes == 0xFFFFFFFF
    with mmap.mmap(-1, 0x1_0000_0000) as too_big:
        with pytest.raises(QPError, match="message of 4294967296 bytes exceeds the 32-bit RETH"):
            validate_write(too_big, 0, 1, None)
