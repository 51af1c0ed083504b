"""Work requests and completions every QP shares (MRC and the RoCE baseline): the queue of
posted RDMA WRITEs and their send completions on the sending side, message assembly and
WRITE-with-IMM completions on the receiving side, and the QP error that ends both.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from model.events import Event
from traffic.core.messages import IMM_OPCODES, LAST_OPCODES, PSN_MASK, Opcode
from traffic.core.qp_config import unwrap

MAX_MESSAGE = 0xFFFFFFFF  # RETH DMA length is 32 bits


class QPError(RuntimeError):
    """Operation on a QP in the error state, or a bad request (the message says which)."""


# Completion status (verbs' ibv_wc_status): a QP in error completes each of its outstanding
# work requests with an error status instead of leaving them posted for ever.
WC_SUCCESS = "success"                      # IBV_WC_SUCCESS
WC_RETRY_EXC_ERR = "retry_exceeded"         # IBV_WC_RETRY_EXC_ERR: the WR whose retries ran out
WC_REM_ACCESS_ERR = "remote_access_error"   # IBV_WC_REM_ACCESS_ERR: the WR the peer refused
WC_FLUSH_ERR = "flush_error"                # IBV_WC_WR_FLUSH_ERR: every other outstanding WR


@dataclass
class Completion:
    qp: int
    msn: int              # 24-bit MSN as on the wire
    bytes: int
    imm: int | None
    status: str = WC_SUCCESS

    @property
    def ok(self) -> bool:
        return self.status == WC_SUCCESS


@dataclass
class _OutMessage:
    msn: int              # absolute
    buf: memoryview
    remote_va: int
    rkey: int
    imm: int | None
    first_seq: int | None = None
    last_seq: int | None = None

    @property
    def length(self) -> int:
        return self.buf.nbytes


def segment_opcode(index: int, count: int, with_imm: bool) -> int:
    if count == 1:
        return Opcode.WRITE_ONLY_IMM if with_imm else Opcode.WRITE_ONLY
    if index == 0:
        return Opcode.WRITE_FIRST
    if index == count - 1:
        return Opcode.WRITE_LAST_IMM if with_imm else Opcode.WRITE_LAST
    return Opcode.WRITE_MIDDLE


def validate_write(buf, remote_va: int, rkey: int, imm) -> memoryview:
    view = memoryview(buf).cast("B")
    if view.nbytes > MAX_MESSAGE:
        raise QPError(f"message of {view.nbytes} bytes exceeds the 32-bit RETH length")
    if not 0 <= remote_va < 1 << 64:
        raise QPError(f"remote_va {remote_va!r} must fit 64 bits")
    if not 0 <= rkey < 1 << 32:
        raise QPError(f"rkey {rkey!r} must fit 32 bits")
    if imm is not None and not 0 <= imm < 1 << 32:
        raise QPError(f"imm {imm!r} must fit 32 bits")
    return view


@dataclass
class _TxRecord:
    """One segment of a posted WRITE and its latest transmission (both QP kinds keep them:
    traffic/core/sender.py, traffic/core/roce_rc.py)."""

    seq: int
    msg: _OutMessage
    offset: int
    length: int
    opcode: int
    ev: int = 0
    sent_ns: int = 0
    tx_count: int = 0
    first_on_ev: bool = False # this transmission was the first packet its EV ever carried
    timeouts: int = 0
    acked: bool = False
    lost: bool = False        # declared lost, waiting in the retransmit queue
    retx_reason: str = ""
    declared: tuple[int, int] | None = None   # (ev, sent_ns) of the last transmission declared lost


class PostedWrites:
    """What every sending QP (MRC and the RoCE baseline) shares: the queue of posted WRITEs,
    send completions, the error latch and segmentation. Subclasses set cfg, qp_num, emit,
    next_msn, messages, send_queue, completions, error, _wake_ns, records, snd_nxt,
    _seg_offset and _seg_index in their constructors."""

    def _fail(self, reason: str, now_ns: int, status: str = WC_FLUSH_ERR,
              culprit_seq: int | None = None) -> None:
        """Put the QP in error and flush its work requests: every posted WRITE not yet
        complete gets an error completion, in posting order; the one holding `culprit_seq`
        (the PSN whose retries ran out, or that the peer refused) gets `status`, the others
        WC_FLUSH_ERR, as a verbs QP entering the error state. Later posts raise QPError."""
        if self.error is not None:
            return
        self.error = reason
        self.emit({"t_ns": now_ns, "event": Event.QP_ERROR, "qp": self.qp_num, "reason": reason})
        for msg in self.messages:
            culprit = (culprit_seq is not None and msg.first_seq is not None
                       and msg.first_seq <= culprit_seq <= (msg.last_seq if msg.last_seq is not None
                                                            else culprit_seq))
            comp = Completion(self.qp_num, msg.msn & PSN_MASK, msg.length, msg.imm,
                              status if culprit else WC_FLUSH_ERR)
            self.completions.append(comp)
            self.emit({"t_ns": now_ns, "event": Event.COMPLETION, "qp": self.qp_num,
                       "msn": comp.msn, "bytes": comp.bytes, "imm": comp.imm, "side": "send",
                       "status": comp.status})
        self.messages.clear()
        self.send_queue.clear()

    def post_write(self, local_buf, remote_va: int, rkey: int, imm: int | None = None) -> int:
        """Queue an RDMA WRITE (WRITE-with-IMM if imm is given); returns its 24-bit MSN.
        The buffer is referenced, not copied: keep it unchanged until the send completion."""
        if self.error is not None:
            raise QPError(f"QP {self.qp_num} is in error: {self.error}")
        view = validate_write(local_buf, remote_va, rkey, imm)
        msg = _OutMessage(msn=self.next_msn, buf=view, remote_va=remote_va, rkey=rkey, imm=imm)
        self.next_msn += 1
        self.messages.append(msg)
        self.send_queue.append(msg)
        self._wake_ns = -1
        return msg.msn & PSN_MASK

    def pop_completions(self) -> list[Completion]:
        out, self.completions = self.completions, []
        return out

    def _next_segment_length(self) -> int:
        """Payload bytes of the next packet of the WRITE at the head of the send queue."""
        return min(self.cfg.max_payload, self.send_queue[0].length - self._seg_offset)

    def _cut_segment(self, record_type):
        """The next packet of the WRITE at the head of the send queue as a new `record_type`
        (PSN snd_nxt, its offset, length and opcode), recorded and counted; a WRITE whose last
        packet this is leaves the queue. Both senders segment this way (MRC and RoCE RC)."""
        msg = self.send_queue[0]
        count = max(1, math.ceil(msg.length / self.cfg.max_payload))
        rec = record_type(seq=self.snd_nxt, msg=msg, offset=self._seg_offset,
                          length=self._next_segment_length(),
                          opcode=segment_opcode(self._seg_index, count, msg.imm is not None))
        if self._seg_index == 0:
            msg.first_seq = rec.seq
        self.records[rec.seq] = rec
        self.snd_nxt += 1
        self._seg_offset += rec.length
        self._seg_index += 1
        if self._seg_index == count:
            msg.last_seq = rec.seq
            self.send_queue.popleft()
            self._seg_offset = 0
            self._seg_index = 0
        return rec


class MessageAssembler:
    """Receiver side message tracking: completes messages in MSN order."""

    def __init__(self, qp: int, emit: Callable[[dict], None]):
        self.qp = qp
        self.emit = emit
        self.next_msn = 0                   # absolute MSN of the next message to complete
        self.pending: dict[int, list] = {}  # abs msn -> [bytes_received, dma_len, imm, has_imm, last_seen]
        self.completions: list[Completion] = []

    def add(self, msn24: int, nbytes: int, dma_len: int, opcode: int, imm, now_ns: int) -> bool:
        """Account one newly placed packet; returns False if inconsistent (caller counts it)."""
        msn = unwrap(msn24, self.next_msn)
        if msn < self.next_msn:
            return False
        entry = self.pending.get(msn)
        if entry is None:
            entry = self.pending[msn] = [0, dma_len, None, False, False]
        elif entry[1] != dma_len:
            return False
        entry[0] += nbytes
        if opcode in IMM_OPCODES:
            entry[2] = imm
            entry[3] = True
        if opcode in LAST_OPCODES:
            entry[4] = True
        while True:
            head = self.pending.get(self.next_msn)
            if head is None or not head[4] or head[0] < head[1]:
                break
            del self.pending[self.next_msn]
            if head[3]:
                comp = Completion(self.qp, self.next_msn & PSN_MASK, head[1], head[2])
                self.completions.append(comp)
                self.emit({"t_ns": now_ns, "event": Event.COMPLETION, "qp": self.qp,
                           "msn": comp.msn, "bytes": comp.bytes, "imm": comp.imm,
                           "side": "recv"})
            self.next_msn += 1
        return True


class AssembledCompletions:
    """What every receiving QP (MRC and the RoCE baseline) shares: WRITE-with-IMM completions
    come from its MessageAssembler (self.assembler, set by the subclass)."""

    @property
    def completions(self) -> list[Completion]:
        return self.assembler.completions

    def pop_completions(self) -> list[Completion]:
        out, self.assembler.completions = self.assembler.completions, []
        return out
