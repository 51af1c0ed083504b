"""What MRC packets mean, independent of how they are encoded.

The pure transport (sender, receiver, EV path health, NSCC) produces and consumes these
objects; the wire codec (traffic/codec.py) turns them into bytes and back, and the Scapy
layers (traffic/layers.py) define and check those bytes. traffic/WIRE_FORMAT.md has the
field-by-field table against the public sources.

Where each value comes from (say which when adding one):
- "OCP API": the public OCP MRC 1.0 companion headers (mrc.h, mrc_ctl.h of
  opencomputeproject/OCP-Multipath-Reliable-Connection). They define API structures and
  enumerations, not packet layouts or opcode numbers.
- "paper": the MRC paper (Resilient AI Supercomputer Networking using MRC and SRv6). It has
  no wire-format appendix; its text fixes what packets carry, not where.
- "secondary": the OCP MRC 1.0 specification's values as quoted by secondary sources (the
  specification text itself is not on hand to check them).
- "IBA/RoCEv2": the InfiniBand architecture's RC transport, which MRC extends.
- "project choice": nothing public fixes it.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class Opcode(IntEnum):
    """BTH opcodes (secondary). The WRITE family mirrors IBA/RoCEv2 RC 0x06..0x0B at base 0xC0.

    EV probes travel as endpoint requests/responses: the OCP API makes an EV probe an endpoint
    operation (MRC_CTL_EP_OP_EV_PROBE, sent with mrc_ctl_ep_batch_send_wait). ACK (cumulative
    ACKs ride in SACK here) and RELIABILITY_PROBE are named so captures and decoders know them;
    this emulator sends neither.
    """

    WRITE_FIRST = 0xC6
    WRITE_MIDDLE = 0xC7
    WRITE_LAST = 0xC8
    WRITE_LAST_IMM = 0xC9
    WRITE_ONLY = 0xCA
    WRITE_ONLY_IMM = 0xCB
    ACK = 0xD1
    EP_REQUEST = 0xD8
    EP_RESPONSE = 0xD9
    SACK = 0xDC
    NACK = 0xDD
    RELIABILITY_PROBE = 0xDE


WRITE_OPCODES = frozenset(range(Opcode.WRITE_FIRST, Opcode.WRITE_ONLY_IMM + 1))
IMM_OPCODES = frozenset((Opcode.WRITE_LAST_IMM, Opcode.WRITE_ONLY_IMM))
LAST_OPCODES = frozenset((Opcode.WRITE_LAST, Opcode.WRITE_LAST_IMM,
                          Opcode.WRITE_ONLY, Opcode.WRITE_ONLY_IMM))


class NackReason(IntEnum):
    """NACK reason codes (secondary; the same numbers as UET 1.0's PDS NACK codes)."""

    TRIMMED = 0x01
    TRIMMED_LASTHOP = 0x02
    NO_BITMAP = 0x06
    NO_PKT_BUFFER = 0x07
    NO_RESOURCE = 0x0A
    PSN_OOR_WINDOW = 0x0B
    UNEXP_EVENT = 0x19
    # Project choice for the single-path RoCE RC baseline (traffic/roce_rc.py): the RoCE AETH
    # NAK "PSN sequence error" syndrome (0x60) carried in the same NACK message, so the
    # baseline uses the same message types as MRC.
    PSN_SEQ_ERR = 0x60


class SkipMode(IntEnum):
    """SACK M field: what the sender should do with the reflected EV (secondary)."""

    NONE = 0
    SKIP_ONCE = 1       # ECN echo: pass over this EV for a while
    ALWAYS_SKIP = 2


class EndpointOp(IntEnum):
    """What an endpoint request asks for: numbered as the OCP API's enum mrc_ctl_ep_op_type
    (whether those numbers are also the wire values is not public: project choice)."""

    EV_PROBE = 0
    PORT_STATUS_UPDATE = 1      # not sent here: port status rides in every SACK/NACK/probe


PROBE_QP = 0x2          # destination QP of endpoint requests/responses (secondary)
PSN_MASK = 0xFFFFFF     # 24-bit PSN space (IBA/RoCEv2)
PROBE_ID_MASK = PSN_MASK  # a probe's id travels in the BTH PSN (project choice; the OCP API's
                          # request id is 16 bits, which the PSN holds)
SACK_BITMAP_BITS = 64   # secondary


@dataclass
class DataPacket:
    """One RDMA WRITE packet. Every packet carries RETH so it can be placed on arrival."""

    dest_qp: int
    psn: int
    opcode: int
    msn: int                    # message sequence number of the WRITE this packet belongs to
    va: int                     # RETH virtual address of this packet's first payload byte
    rkey: int
    dma_len: int                # RETH length: bytes of the whole message (IBA/RoCEv2)
    payload: bytes | memoryview = b""
    imm: int | None = None      # ImmDt on *_IMM opcodes
    timestamp: int | None = None  # TSETH: sender's send time (ns), echoed for RTT
    ack_req: bool = False
    retransmit: bool = False    # a BTH reserved bit (project choice) so captures show retransmissions
    ev: int = 0                 # entropy value (UDP sport + flow label)
    ecn_ce: bool = False        # set by the receiver adapter from the (outer) IP header
    trimmed: bool = False       # set by the receiver adapter when the payload was cut in-fabric
    trim_lasthop: bool = False  # trimmed at the last hop (receiver's downlink): NACK TRIMMED_LASTHOP


@dataclass
class Sack:
    """Selective ACK: cumulative PSN plus a bitmap of what arrived beyond it."""

    dest_qp: int
    cum_psn: int                # every PSN < cum_psn (mod 2^24 window) has arrived
    bitmap: int = 0             # bit i set: PSN (sack_base + i) arrived
    sack_base: int = 0          # PSN of bitmap bit 0 (cum_psn + sack offset)
    ev: int = 0                 # reflected EV of the packet that triggered this SACK
    skip: int = SkipMode.NONE   # ECN echo
    mpr: int = 8                # receiver's max PSN range, units of 128 PSNs
    port_status: int = 0        # bit p set: receiver's NIC port p is up
    echo_timestamp: int = 0     # TSETH of the triggering packet, echoed
    ooo_count: int = 0          # out-of-order arrivals seen
    window_penalty: int = 0
    rx_bytes: int = 0           # bytes received on this QP (congestion block)
    path_ev: int = 0            # EV this SACK itself travels on (UDP sport + flow label); not in
                                # the SACK header (ev above is the reflected forward EV)


@dataclass
class Nack:
    dest_qp: int
    psn: int
    reason: int
    ev: int = 0
    port_status: int = 0
    echo_timestamp: int = 0
    path_ev: int = 0            # EV this NACK travels on (UDP sport + flow label); ev = reflected


@dataclass
class Probe:
    """EV probe: an endpoint request (response=False) or response on PROBE_QP. The response
    reflects ev, seq and timestamp; seq is the probe id (the BTH PSN, 0..PROBE_ID_MASK)."""

    ev: int
    seq: int
    timestamp: int = 0
    response: bool = False
    src_qp: int = 0             # the QP whose path health asked for this probe
    port_status: int = 0
    path_ev: int = 0            # EV this probe travels on: = ev for a request; the responder
                                # sends the response back on the same EV (same plane and spine)
