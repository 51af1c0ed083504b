"""The decoder on bad input: fuzzed and mutated frames raise only DecodeError, each kind of bad
frame is counted under its own reason, and trimmed data frames decode as trimmed."""
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emulation.network import vqueue
from model.topology import FabricSpec, Topology, make_ev
from traffic.core.codec import DECODE_REASONS, Codec, DecodeError
from traffic.core.messages import DataPacket, Nack, Opcode, Probe, Sack

from tests.helpers.codec_strategies import CODEC, messages

pytestmark = pytest.mark.core

FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TOPO = Topology(FabricSpec())
SMALL = Codec(TOPO)
EV = make_ev(0, 1, 0x4321)


def data(**kw):
    fields = dict(dest_qp=9, psn=100, opcode=Opcode.WRITE_MIDDLE, msn=1, va=0x1000, rkey=7,
                  dma_len=8192, payload=bytes(range(200)), timestamp=12345, ev=EV)
    fields.update(kw)
    return DataPacket(**fields)


def frame_of(msg, mode="ecmp", ecn=2):
    return SMALL.encoder(0, 3, 0, mode).encode(msg, ecn=ecn)


def reason_of(frame, codec=SMALL):
    with pytest.raises(DecodeError) as info:
        codec.decode(frame)
    assert info.value.reason in DECODE_REASONS
    return info.value.reason


def decode_or_reason(frame):
    """Decode must either succeed or raise DecodeError with a specific reason; nothing else.

    decode() turns any unexpected exception into DecodeError("malformed") so a bug cannot kill
    an endpoint; that reason is therefore a bug here, not an acceptable answer."""
    try:
        CODEC.decode(frame)
    except DecodeError as exc:
        assert exc.reason in DECODE_REASONS, exc.reason
        assert exc.reason != "malformed", str(exc)
        return exc.reason
    return None


def data_header_len(msg, mode):
    """Bytes before the payload, by hand: Ethernet 14, IPv6 40 (+40 outer in srv6), UDP 8,
    BTH 12, METH 4, TSETH 8 if timestamped, RETH 16, ImmDt 4 if the opcode carries one."""
    return (14 + 40 + (40 if mode == "srv6" else 0) + 8 + 12 + 4
            + (8 if msg.timestamp is not None else 0) + 16 + (4 if msg.imm is not None else 0))


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_only_raise_decode_error(blob):
    assert decode_or_reason(blob) is not None


@FUZZ
@given(messages(), st.data())
def test_truncated_frames_decode_as_trimmed_or_fail_as_truncated(case, draw):
    """A frame cut anywhere is either a data packet whose headers survived (decoded as trimmed,
    payload gone, header fields intact) or rejected as "truncated"; nothing else."""
    route, msg, ecn = case
    frame = CODEC.encoder(*route[:4]).encode(msg, ecn=ecn)
    cut = draw.draw(st.integers(0, len(frame) - 1))
    headers_survive = isinstance(msg, DataPacket) and cut >= data_header_len(msg, route[3])
    if headers_survive:
        got, meta = CODEC.decode(frame[:cut])
        assert meta.trimmed and got.trimmed and got.payload == b""
        assert (got.psn, got.dest_qp, got.opcode) == (msg.psn, msg.dest_qp, msg.opcode)
    else:
        assert decode_or_reason(frame[:cut]) == "truncated"


@FUZZ
@given(messages(), st.data())
def test_flipped_bytes_only_raise_decode_error(case, draw):
    route, msg, ecn = case
    frame = bytearray(CODEC.encoder(*route[:4]).encode(msg, ecn=ecn))
    for _ in range(draw.draw(st.integers(1, 4))):
        i = draw.draw(st.integers(0, len(frame) - 1))
        frame[i] ^= draw.draw(st.integers(1, 255))
    decode_or_reason(bytes(frame))


@FUZZ
@given(messages(), st.data())
def test_any_single_byte_error_in_the_icrc_span_is_caught(case, draw):
    route, msg, ecn = case
    frame = bytearray(CODEC.encoder(*route[:4]).encode(msg, ecn=ecn))
    bth = 14 + 40 + (40 if route[3] == "srv6" else 0) + 8
    i = draw.draw(st.integers(bth, len(frame) - 1))
    frame[i] ^= draw.draw(st.integers(1, 255))
    assert decode_or_reason(bytes(frame)) is not None


def test_each_reason():
    good = frame_of(data())
    assert reason_of(b"") == "truncated"
    assert reason_of(good[:50]) == "truncated"
    assert reason_of(good[:12] + b"\x08\x00" + good[14:]) == "not_ipv6"
    assert reason_of(good[:14] + b"\x40" + good[15:]) == "not_ipv6"
    assert reason_of(good[:20] + b"\x06" + good[21:]) == "not_udp"
    assert reason_of(good[:56] + struct.pack("!H", 4792) + good[58:]) == "not_roce"
    assert reason_of(good[:58] + struct.pack("!H", 999) + good[60:]) == "bad_length"
    assert reason_of(good[:62] + b"\xd1" + good[63:]) == "bad_opcode"
    assert reason_of(good[:-1] + bytes([good[-1] ^ 1])) == "bad_icrc"
    assert reason_of(good[:22] + b"\xfe" + good[23:]) == "foreign_addr"
    assert reason_of("not a frame") == "not_bytes"
    assert reason_of(None) == "not_bytes"
    srv6 = frame_of(Sack(dest_qp=1, cum_psn=5, path_ev=EV), mode="srv6")
    assert reason_of(srv6[:18] + struct.pack("!H", 1) + srv6[20:]) == "bad_length"
    assert reason_of(srv6[:54] + b"\x40" + srv6[55:]) == "not_ipv6"
    assert reason_of(srv6[:-2]) == "truncated"
    # A control packet whose lengths were shrunk consistently is still wrong for its opcode.
    nack = frame_of(Nack(dest_qp=1, psn=2, reason=1, path_ev=EV))
    short = bytearray(nack[:-4])
    struct.pack_into("!H", short, 18, len(short) - 54)
    struct.pack_into("!H", short, 58, len(short) - 54)
    assert reason_of(bytes(short)) == "bad_length"


def test_foreign_fabric_addresses_are_rejected():
    other = Codec(Topology(FabricSpec(groups=4)))
    frame = other.encoder(0, 7, 0, "ecmp").encode(Probe(ev=EV, seq=1))
    assert reason_of(frame) == "foreign_addr"


@pytest.mark.parametrize("mode", ["ecmp", "srv6"])
@pytest.mark.parametrize("last_hop", [False, True])
@pytest.mark.parametrize("opcode", [Opcode.WRITE_FIRST, Opcode.WRITE_ONLY_IMM])
def test_frames_cut_by_the_in_fabric_trimmer_decode_as_trimmed(mode, last_hop, opcode):
    msg = data(opcode=opcode, imm=77 if opcode == Opcode.WRITE_ONLY_IMM else None)
    full = frame_of(msg, mode=mode, ecn=3)
    trimmed = vqueue.trim_frame(full, last_hop=last_hop)
    got, meta = SMALL.decode(trimmed)
    assert meta.trimmed and got.trimmed and got.payload == b""
    assert meta.trim_lasthop == got.trim_lasthop == last_hop
    assert (got.psn, got.dest_qp, got.msn, got.imm, got.va, got.timestamp) == (
        msg.psn, msg.dest_qp, msg.msn, msg.imm, msg.va, msg.timestamp)
    assert meta.ecn_ce and meta.ev == EV


@pytest.mark.parametrize("mode", ["ecmp", "srv6"])
def test_plain_truncation_keeping_the_headers_decodes_as_trimmed(mode):
    full = frame_of(data(timestamp=None), mode=mode)
    headers = len(full) - 200 - 4
    for keep in (headers, headers + 1, len(full) - 1):
        got, meta = SMALL.decode(full[:keep])
        assert meta.trimmed and got.trimmed and not got.trim_lasthop and got.payload == b""
    assert reason_of(full[:headers - 1]) == "truncated"
    got, meta = SMALL.decode(full + b"\x00" * 6)      # Ethernet padding after the ICRC is fine
    assert not meta.trimmed and got.payload == bytes(range(200))


def fix_lengths(frame):
    """ECMP frame with its IPv6 and UDP lengths set to what is there."""
    out = bytearray(frame)
    struct.pack_into("!H", out, 18, len(out) - 54)
    struct.pack_into("!H", out, 58, len(out) - 54)
    return bytes(out)


def test_header_only_frames_need_the_trimmers_dscp():
    full = frame_of(data(payload=b"", timestamp=None, opcode=Opcode.WRITE_LAST))
    assert not SMALL.decode(full)[1].trimmed           # empty payload, ICRC present
    assert reason_of(fix_lengths(full[:-2])) == "bad_length"   # 2 ICRC bytes gone
    headers_only = fix_lengths(full[:-4])
    assert reason_of(headers_only) == "bad_length"     # no ICRC and no trim mark: unvouched
    marked = vqueue.set_traffic_class(headers_only, dscp=vqueue.DSCP_TRIMMED)
    assert SMALL.decode(marked)[1].trimmed
    # A flipped opcode (LAST -> LAST_IMM) on an empty WRITE must not pass as a trimmed frame.
    flipped = bytearray(full)
    flipped[62] ^= 1
    assert reason_of(bytes(flipped)) == "bad_length"


def test_encoder_rejects_messages_it_cannot_encode():
    enc = SMALL.encoder(0, 3, 0, "ecmp")
    with pytest.raises(ValueError, match="WRITE opcode"):
        enc.encode(data(opcode=Opcode.SACK))
    with pytest.raises(ValueError, match="imm"):
        enc.encode(data(opcode=Opcode.WRITE_LAST_IMM))
    with pytest.raises(ValueError, match="imm"):
        enc.encode(data(imm=5))
    with pytest.raises(ValueError, match="psn"):
        enc.encode(data(psn=1 << 24))
    with pytest.raises(ValueError, match="dest_qp"):
        enc.encode(data(dest_qp=-1))
    with pytest.raises(ValueError, match="out of range"):
        enc.encode(data(rkey=1 << 32))
    with pytest.raises(ValueError, match="plane 1"):
        enc.encode(data(ev=make_ev(1, 0, 5)))
    with pytest.raises(ValueError, match="cum_psn"):
        enc.encode(Sack(dest_qp=1, cum_psn=1 << 24, path_ev=EV))
    with pytest.raises(ValueError, match="Nack"):
        enc.encode(Nack(dest_qp=1, psn=1, reason=300, path_ev=EV))
    with pytest.raises(ValueError, match="ecn"):
        enc.encode(data(), ecn=4)
    with pytest.raises(ValueError, match="not an MRC message"):
        enc.encode(b"raw bytes")
    with pytest.raises(ValueError, match="mode"):
        SMALL.encoder(0, 3, 0, "mpls")
    with pytest.raises(ValueError, match="same host"):
        SMALL.encoder(2, 2, 0, "ecmp")
    # The encoder still works after refusing.
    assert SMALL.decode(enc.encode(data()))[0].psn == 100


def test_large_payload_grows_the_buffer_and_later_frames_are_clean():
    enc = SMALL.encoder(0, 3, 0, "srv6")
    big = bytes(range(256)) * 40
    got, _ = SMALL.decode(enc.encode(data(payload=big)))
    assert got.payload == big
    small_frame = enc.encode(data(payload=b"ab"))
    got, meta = SMALL.decode(small_frame)
    assert got.payload == b"ab" and meta.frame_len == len(small_frame)


def test_wire_ev_defaults_and_override():
    enc = SMALL.encoder(0, 3, 0, "srv6")
    reflected = make_ev(1, 0, 9)                  # a forward EV on another plane, only reflected
    sack = Sack(dest_qp=1, cum_psn=1, ev=reflected, path_ev=EV)
    got, meta = SMALL.decode(enc.encode(sack))
    assert (got.ev, got.path_ev, meta.ev) == (reflected, EV, EV)
    other = make_ev(0, 0, 77)
    got, meta = SMALL.decode(enc.encode(sack, ev=other))
    assert (got.path_ev, meta.ev) == (other, other)
    probe = Probe(ev=EV, seq=3)                   # path_ev 0: travels on the probed EV
    assert SMALL.decode(enc.encode(probe))[1].ev == EV
    # The spine bits of the EV choose the uSID container in srv6 mode.
    f0 = enc.encode(data(ev=make_ev(0, 0, 5)))
    f1 = enc.encode(data(ev=make_ev(0, 1, 5)))
    assert f0[38:54] != f1[38:54]


def with_ecn(frame, offset, ecn):
    """frame with the ECN field (low 2 bits of Traffic Class) of the IPv6 header at offset set."""
    out = bytearray(frame)
    word = struct.unpack_from("!I", out, offset)[0]
    struct.pack_into("!I", out, offset, word & ~(3 << 20) | ecn << 20)
    return bytes(out)


def test_ce_is_read_from_the_outer_srv6_header_only():
    """Switches mark the header they forward on: in srv6 mode that is the outer IPv6 header
    (offset 14); the inner one (offset 54) is not looked at by the fabric."""
    frame = frame_of(data(), mode="srv6", ecn=2)
    outer_ce = with_ecn(with_ecn(frame, 14, 3), 54, 2)
    inner_ce = with_ecn(with_ecn(frame, 14, 2), 54, 3)
    assert SMALL.decode(outer_ce)[1].ecn_ce and SMALL.decode(outer_ce)[0].ecn_ce
    assert not SMALL.decode(inner_ce)[1].ecn_ce and not SMALL.decode(inner_ce)[0].ecn_ce
    plain = frame_of(data(), mode="ecmp", ecn=2)
    assert SMALL.decode(with_ecn(plain, 14, 3))[1].ecn_ce
    assert not SMALL.decode(plain)[1].ecn_ce
