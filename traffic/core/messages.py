"""What MRC packets mean, independent of how they are encoded.

The pure transport (sender, receiver, EV path health, NSCC) produces and consumes these
objects; the wire codec (traffic/core/codec.py) turns them into bytes and back with the layout of
the wire table (model/wire.py), and the Scapy layers (traffic/layers.py) check those bytes.
traffic/WIRE_FORMAT.md has the field-by-field table against the public sources.

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

# The numbers the wire carries (opcodes, NACK reasons, skip modes, endpoint operations, the probe
# QP, the PSN width) are the wire table's (model/wire.py); re-exported for the transport.
from model.wire import (IMM_OPCODES, LAST_OPCODES, PROBE_QP, PSN_MASK,  # noqa: F401
                        SACK_BITMAP_BITS, WRITE_OPCODES, EndpointOp, NackReason, Opcode,
                        SkipMode)

PROBE_ID_MASK = PSN_MASK  # a probe's id travels in the BTH PSN (project choice; the OCP API's
                          # request id is 16 bits, which the PSN holds)


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
