"""EV probes on the wire: endpoint request 0xD8 / response 0xD9 on QP 2 with the probe id in the
BTH PSN (traffic/WIRE_FORMAT.md). The id space is the PSN's 24 bits; 0xDE (the reliability probe)
and endpoint operations other than EV_PROBE are not EV probes."""
import struct
import zlib

import pytest

from model.topology import FabricSpec, Topology, make_ev
from traffic.core.codec import Codec, DecodeError
from traffic.core.messages import PROBE_ID_MASK, Probe

pytestmark = pytest.mark.core

TOPO = Topology(FabricSpec())
CODEC = Codec(TOPO)
EV = make_ev(0, 1, 0xC123)
BTH_OFF = 14 + 40 + 8          # ECMP frame: Ethernet, IPv6, UDP


def encode(msg):
    return CODEC.encoder(0, 3, 0, "ecmp").encode(msg)


def with_bth_and_body(frame, opcode=None, ep_op=None):
    """frame with its BTH opcode and/or EPH operation byte replaced and the ICRC redone."""
    out = bytearray(frame)
    if opcode is not None:
        out[BTH_OFF] = opcode
    if ep_op is not None:
        out[BTH_OFF + 12] = ep_op
    struct.pack_into("!I", out, len(out) - 4, zlib.crc32(out[BTH_OFF:-4]))
    return bytes(out)


def test_request_and_response_opcodes_and_the_id_in_the_psn():
    for response, opcode in ((False, 0xD8), (True, 0xD9)):
        frame = encode(Probe(ev=EV, seq=0x123456, response=response, path_ev=EV))
        assert frame[BTH_OFF] == opcode
        assert frame[BTH_OFF + 5:BTH_OFF + 8] == b"\x00\x00\x02"           # QP 2
        assert frame[BTH_OFF + 9:BTH_OFF + 12] == b"\x12\x34\x56"          # PSN = probe id
        msg, _ = CODEC.decode(frame)
        assert (msg.seq, msg.response) == (0x123456, response)


def test_probe_ids_beyond_the_psn_are_refused():
    assert PROBE_ID_MASK == (1 << 24) - 1
    encode(Probe(ev=EV, seq=PROBE_ID_MASK, path_ev=EV))
    with pytest.raises(ValueError, match="seq"):
        encode(Probe(ev=EV, seq=PROBE_ID_MASK + 1, path_ev=EV))


@pytest.mark.parametrize("opcode", [0xDE, 0xD1])
def test_reliability_probe_and_ack_opcodes_are_not_decoded(opcode):
    frame = with_bth_and_body(encode(Probe(ev=EV, seq=1, path_ev=EV)), opcode=opcode)
    with pytest.raises(DecodeError) as info:
        CODEC.decode(frame)
    assert info.value.reason == "bad_opcode"


def test_other_endpoint_operations_are_not_ev_probes():
    frame = with_bth_and_body(encode(Probe(ev=EV, seq=1, path_ev=EV)), ep_op=1)
    with pytest.raises(DecodeError) as info:
        CODEC.decode(frame)
    assert info.value.reason == "bad_opcode"
