"""Work requests (traffic/core/work_requests.py) driven directly: the flush of a QP entering the error
state and the receiver's message assembly, with the exact completions and events.

Verbs semantics (ibv_wc_status): the work request holding the failed PSN completes with the
error's own status, every other outstanding one with IBV_WC_WR_FLUSH_ERR, in posting order. On
the receiving side only WRITE-with-IMM consumes a receive completion, in MSN order, once all of
its bytes and its last packet are in.
"""
import random
from collections import deque

import pytest

from model.events import Event
from traffic.core.evs import PathInfo
from traffic.core.messages import Opcode
from traffic.core.qp_config import MRCConfig
from traffic.core.sender import SenderQP
from traffic.core.work_requests import (WC_FLUSH_ERR, WC_REM_ACCESS_ERR, Completion, MessageAssembler,
                                   PostedWrites, QPError, segment_opcode)


class Writes(PostedWrites):
    """The smallest QP that posts writes: what PostedWrites' docstring says subclasses set."""

    def __init__(self, qp_num: int):
        self.qp_num = qp_num
        self.events: list[dict] = []
        self.emit = self.events.append
        self.error = None
        self.next_msn = 0
        self.messages: list = []
        self.send_queue: deque = deque()
        self.completions: list[Completion] = []
        self._wake_ns = 0


def posted(qp_num=0x42):
    q = Writes(qp_num)
    q.post_write(b"a" * 3000, 0x1000, 1)            # msn 0: PSNs 0..2
    q.post_write(b"b" * 3000, 0x2000, 2, imm=7)     # msn 1: PSNs 3..5
    q.post_write(b"c" * 2500, 0x3000, 3)            # msn 2: PSN 6 sent, the rest not yet
    q.post_write(b"d" * 10, 0x4000, 4, imm=9)       # msn 3: not segmented yet
    seqs = [(0, 2), (3, 5), (6, None), (None, None)]
    for msg, (first, last) in zip(q.messages, seqs):
        msg.first_seq, msg.last_seq = first, last
    return q


def test_the_write_holding_the_refused_psn_gets_the_status_the_others_are_flushed():
    q = posted()
    q._fail("remote access error", 500, status=WC_REM_ACCESS_ERR, culprit_seq=4)
    assert q.completions == [
        Completion(0x42, 0, 3000, None, WC_FLUSH_ERR),
        Completion(0x42, 1, 3000, 7, WC_REM_ACCESS_ERR),
        Completion(0x42, 2, 2500, None, WC_FLUSH_ERR),
        Completion(0x42, 3, 10, 9, WC_FLUSH_ERR)]
    assert q.events[0] == {"t_ns": 500, "event": Event.QP_ERROR, "qp": 0x42,
                           "reason": "remote access error"}
    assert q.events[1:] == [
        {"t_ns": 500, "event": Event.COMPLETION, "qp": 0x42, "msn": c.msn, "bytes": c.bytes,
         "imm": c.imm, "side": "send", "status": c.status} for c in q.completions]
    assert q.messages == [] and not q.send_queue


def test_a_failed_psn_in_a_write_still_being_segmented_is_that_writes():
    q = posted()
    q._fail("ACK timeout", 900, status=WC_REM_ACCESS_ERR, culprit_seq=6)
    assert [c.status for c in q.completions] == [WC_FLUSH_ERR, WC_FLUSH_ERR, WC_REM_ACCESS_ERR,
                                                 WC_FLUSH_ERR]


def test_a_qp_fails_once():
    q = posted()
    q._fail("first", 1)
    q._fail("second", 2)
    assert q.error == "first" and len(q.completions) == 4
    assert [e["reason"] for e in q.events if e["event"] == Event.QP_ERROR] == ["first"]


def test_only_writes_with_immediate_complete_at_the_receiver_in_msn_order():
    events = []
    a = MessageAssembler(qp=5, emit=events.append)
    # msn 1 (WRITE-with-IMM, 2000 B) arrives before msn 0 (plain WRITE, 100 B)
    assert a.add(1, 1000, 2000, Opcode.WRITE_LAST_IMM, 0xABC, 10)
    assert a.add(1, 1000, 2000, Opcode.WRITE_FIRST, None, 11)
    assert a.completions == []                       # msn 0 is not in yet
    assert a.add(0, 100, 100, Opcode.WRITE_ONLY, None, 12)
    assert a.completions == [Completion(5, 1, 2000, 0xABC)]    # no completion for the plain WRITE
    assert events == [{"t_ns": 12, "event": Event.COMPLETION, "qp": 5, "msn": 1, "bytes": 2000,
                       "imm": 0xABC, "side": "recv"}]
    assert a.next_msn == 2


def test_a_message_completes_only_when_every_byte_is_in():
    a = MessageAssembler(qp=5, emit=lambda e: None)
    assert a.add(0, 1000, 2000, Opcode.WRITE_LAST_IMM, 1, 10)
    assert a.add(0, 999, 2000, Opcode.WRITE_FIRST, None, 11)
    assert a.completions == []                       # 1999 of 2000 bytes
    assert a.add(0, 1, 2000, Opcode.WRITE_MIDDLE, None, 12)
    assert [c.bytes for c in a.completions] == [2000]


def test_packets_of_completed_messages_or_with_another_length_are_refused():
    a = MessageAssembler(qp=5, emit=lambda e: None)
    assert a.add(0, 100, 100, Opcode.WRITE_ONLY_IMM, 3, 10)
    assert a.add(0, 100, 100, Opcode.WRITE_ONLY_IMM, 3, 11) is False     # msn 0 is complete
    assert a.add(1, 100, 300, Opcode.WRITE_FIRST, None, 12)
    assert a.add(1, 100, 999, Opcode.WRITE_MIDDLE, None, 13) is False    # DMA length differs
    assert len(a.completions) == 1


def test_segment_opcodes_follow_the_iba_write_family():
    """IBA RC WRITE opcodes (0x06..0x0B, here at base 0xC0): ONLY for a one-packet message,
    FIRST / MIDDLE / LAST otherwise; the immediate rides on the last (or only) packet."""
    assert segment_opcode(0, 1, False) == Opcode.WRITE_ONLY
    assert segment_opcode(0, 1, True) == Opcode.WRITE_ONLY_IMM
    assert [segment_opcode(i, 3, False) for i in range(3)] == \
        [Opcode.WRITE_FIRST, Opcode.WRITE_MIDDLE, Opcode.WRITE_LAST]
    assert [segment_opcode(i, 3, True) for i in range(3)] == \
        [Opcode.WRITE_FIRST, Opcode.WRITE_MIDDLE, Opcode.WRITE_LAST_IMM]


def test_reth_and_immediate_fields_take_their_full_width_and_no_more():
    """RETH: 64-bit VA, 32-bit rkey; ImmDt: 32 bits."""
    q = Writes(1)
    q.post_write(b"x", (1 << 64) - 1, (1 << 32) - 1, imm=(1 << 32) - 1)
    for kw, message in (({"remote_va": 1 << 64}, "remote_va 18446744073709551616 must fit 64 bits"),
                        ({"rkey": 1 << 32}, "rkey 4294967296 must fit 32 bits"),
                        ({"imm": 1 << 32}, "imm 4294967296 must fit 32 bits")):
        args = {"remote_va": 0, "rkey": 0, "imm": None, **kw}
        with pytest.raises(QPError) as e:
            q.post_write(b"x", args["remote_va"], args["rkey"], imm=args["imm"])
        assert str(e.value) == message
    assert len(q.messages) == 1


def test_a_write_posted_at_time_zero_is_due_at_once():
    sender = SenderQP(1, 2, MRCConfig(ev_count=4, ev_backup_count=0), PathInfo((0, 1), 2),
                      random.Random(1))
    assert sender.next_deadline(0) is None
    sender.post_write(b"x" * 10, 0, 0)
    assert sender.next_deadline(0) <= 0
