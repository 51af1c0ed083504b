"""The endpoint's receive path fed with bytes (no sockets): malformed, truncated, foreign and
random frames are counted by reason and dropped; nothing raises; probes are answered."""
import random

from hypothesis import given, settings, strategies as st

import pytest

from model.topology import FabricSpec, Topology, make_ev
from tests.helpers.endpoint_fakes import FakePort
from traffic.core.codec import Codec
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import EndpointConfig
from traffic.core.messages import DataPacket, Nack, Opcode, Probe, Sack

pytestmark = pytest.mark.core

SPEC = FabricSpec()
TOPO = Topology(SPEC)
CODEC = Codec(TOPO)


class FakeClock:
    def __init__(self):
        self.t = 1_000_000

    def __call__(self):
        self.t += 1000
        return self.t


def make_endpoint(host=1):
    cfg = EndpointConfig.from_dict({"host": host, "fabric": SPEC.to_dict(),
                                    "base_rtt_ns": 1_000_000})
    ports = {p: FakePort(p) for p in range(SPEC.planes)}
    return Endpoint(cfg, ports=ports, clock=FakeClock()), ports


def valid_frames(src=0, dst=1, mode="srv6"):
    out = []
    for plane in range(SPEC.planes):
        ev = make_ev(plane, 1, 77)
        enc = CODEC.encoder(src, dst, plane, mode)
        out.append((plane, enc.encode(DataPacket(dest_qp=0x123, psn=5, opcode=Opcode.WRITE_ONLY_IMM,
                                                 msn=1, va=0, rkey=9, dma_len=100,
                                                 payload=bytes(100), imm=4, timestamp=5, ev=ev))))
        out.append((plane, enc.encode(Sack(dest_qp=0x123, cum_psn=7, path_ev=ev))))
        out.append((plane, enc.encode(Nack(dest_qp=0x123, psn=7, reason=1, path_ev=ev))))
        out.append((plane, enc.encode(Probe(ev=ev, seq=3, path_ev=ev, response=True, src_qp=0x77))))
    return out


def total_accounted(ep):
    return ep.counters.dropped_malformed


def test_probe_request_is_answered_on_the_same_plane_and_ev():
    ep, ports = make_endpoint(1)
    ev = make_ev(1, 1, 4242)
    frame = CODEC.encoder(0, 1, 1, "srv6").encode(Probe(ev=ev, seq=11, timestamp=99, src_qp=5,
                                                        path_ev=ev))
    ep.handle_frame(1, frame)
    ep._flush_tx(ep.clock())
    assert ports[0].sent == [] and len(ports[1].sent) == 1
    reply, meta = CODEC.decode(ports[1].sent[0])
    assert reply.response and reply.seq == 11 and reply.timestamp == 99 and reply.src_qp == 5
    assert meta.ev == ev and meta.dst_host == 0 and meta.src_host == 1
    assert reply.port_status == 0b11
    ep.close()


def test_valid_frames_for_unknown_qps_are_dropped_by_reason():
    ep, _ = make_endpoint(1)
    frames = valid_frames()
    for plane, f in frames:
        ep.handle_frame(plane, f)
    d = ep.counters.dropped
    assert d.get("unknown_qp") == 6           # data, sack, nack on two planes
    assert d.get("stale_probe") == 2          # responses nobody asked for
    ep.close()


def test_wrong_host_wrong_plane_foreign_and_corrupt_frames():
    ep, _ = make_endpoint(1)
    other = CODEC.encoder(0, 2, 0, "srv6").encode(Sack(dest_qp=1, cum_psn=0,
                                                       path_ev=make_ev(0, 0, 5)))
    ep.handle_frame(0, other)
    assert ep.counters.dropped == {"not_for_us": 1}
    mine = CODEC.encoder(0, 1, 0, "srv6").encode(Sack(dest_qp=1, cum_psn=0,
                                                      path_ev=make_ev(0, 0, 5)))
    ep.handle_frame(1, mine)                  # arrived on the other port
    assert ep.counters.dropped["wrong_plane"] == 1
    corrupt = bytearray(mine)
    corrupt[-10] ^= 0xFF
    ep.handle_frame(0, bytes(corrupt))
    assert ep.counters.dropped["bad_icrc"] == 1
    ep.handle_frame(0, mine[:60])
    assert ep.counters.dropped["truncated"] == 1
    foreign = bytearray(mine)
    foreign[14 + 40 + 8] ^= 0x40              # inner source address no longer a fabric NIC
    ep.handle_frame(0, bytes(foreign))
    assert ep.counters.dropped["foreign_addr"] == 1
    ep.handle_frame(0, b"")
    ep.handle_frame(0, memoryview(bytearray(3)))
    assert ep.counters.dropped["truncated"] == 3
    ep.close()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_never_raise(data):
    ep, _ = make_endpoint(1)
    ep.handle_frame(0, data)
    assert ep.counters.dropped_malformed == 1
    ep.close()


def test_mutated_valid_frames_never_raise():
    ep, ports = make_endpoint(1)
    rng = random.Random(1234)
    frames = valid_frames() + valid_frames(mode="ecmp")
    n = 3000
    for _ in range(n):
        plane, frame = rng.choice(frames)
        buf = bytearray(frame)
        for _ in range(rng.randint(1, 6)):
            kind = rng.random()
            if kind < 0.6:
                buf[rng.randrange(len(buf))] = rng.randrange(256)
            elif kind < 0.8:
                del buf[rng.randrange(len(buf)):]
            else:
                buf += bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))
            if not buf:
                break
        ep.handle_frame(plane, memoryview(buf))
    # every frame either dropped by a reason, or accepted (only probe requests can be)
    assert ep.counters.dropped_malformed + ep.counters.received >= n
    assert set(ep.counters.dropped) <= {"truncated", "not_ipv6", "not_udp", "not_roce",
                                        "bad_length", "bad_opcode", "bad_icrc", "foreign_addr",
                                        "malformed", "not_for_us", "wrong_plane", "unknown_qp",
                                        "stale_probe", "foreign_peer"}
    ep.close()


def test_run_once_reads_injected_frames_and_logs_port_changes(tmp_path):
    log = tmp_path / "ev.jsonl"
    cfg = EndpointConfig.from_dict({"host": 1, "fabric": SPEC.to_dict(), "event_log": str(log),
                                    "base_rtt_ns": 1_000_000})
    ports = {p: FakePort(p) for p in range(SPEC.planes)}
    ep = Endpoint(cfg, ports=ports)
    for plane, f in valid_frames():
        ports[plane].inject(f)
    import os
    os.write(ports[0]._w, b"x")
    os.write(ports[1]._w, b"x")
    ep.run_once(0.001)
    assert ep.counters.dropped["unknown_qp"] == 6
    ports[1].up = False
    import time
    time.sleep(0.005)
    ep.run_once(0.001)
    ep.close()
    text = log.read_text()
    assert '"event":"port","plane":1,"up":false' in text
    assert '"event":"counters"' in text and '"dropped_malformed":8' in text


def test_a_roce_qp_takes_a_sack_without_error_and_sends_what_it_frees():
    # RoCE's receiver has no reverse EVs: a SACK must not raise (it did, AttributeError on
    # every SACK, which also skipped collecting what the SACK let the sender send)
    ep, ports = make_endpoint(0)
    qp = ep.create_qp(0x40, 1, 0x41, transport="roce", base_rtt_ns=1_000_000)
    sack = Sack(dest_qp=0x40, cum_psn=0, path_ev=make_ev(0, 0, 5))
    qp.on_sack(sack, 0, ep.clock())
    assert ep.counters.dropped.get("rx_error", 0) == 0
    ep.close()
