"""A host's NIC port is one wire: every QP on it paces against one token bucket, and SACKs
leave ahead of the data waiting for that wire. Fake ports and a fake clock (no sockets)."""
from model.topology import FabricSpec, Topology
from tests.helpers.endpoint_fakes import FakePort, arrive, data_frame
from traffic.core.clock import FakeClock
from traffic.core.codec import Codec
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import EndpointConfig
from traffic.core.messages import DataPacket, Opcode, Sack

SPEC = FabricSpec()
MS = 1_000_000
TIMERS = {"rto_ns": 40 * MS, "ack_delay_ns": 3 * MS}


def endpoint(tmp_path, clock):
    cfg = EndpointConfig.from_dict({"host": 0, "fabric": SPEC.to_dict(), "seed": 1,
                                    "event_log": str(tmp_path / "h0.jsonl")})
    ports = {p: FakePort(p) for p in range(SPEC.planes)}
    return Endpoint(cfg, ports=ports, clock=clock), ports, cfg


def data_frames_per_plane(ep, ports, codec):
    """Data frames handed to each port or waiting in the endpoint's queue for it."""
    out = {}
    for plane, port in ports.items():
        frames = list(port.sent) + list(ep.txq[plane])
        out[plane] = sum(isinstance(codec.decode(f)[0], DataPacket) for f in frames)
    return out


def test_two_qps_on_a_port_share_its_burst(tmp_path):
    """Each QP alone may send pacing_burst_packets frames per plane at once; two QPs of one
    host to the same peer together no more than that (not twice: the NIC has one wire)."""
    clock = FakeClock(1 * MS)
    ep, ports, cfg = endpoint(tmp_path, clock)
    codec = Codec(Topology(SPEC))
    for k in range(2):
        ep.create_qp(0x100 + k, 2, 0x200 + k, base_rtt_ns=2 * MS, qp_overrides=TIMERS)
        ep.post_write(0x100 + k, bytes(64 * 1024), 0, 0x42)
    clock.advance_to(2 * MS)
    ep.run_once(0)
    per_plane = data_frames_per_plane(ep, ports, codec)
    assert per_plane == {p: cfg.pacing_burst_packets for p in ports}, per_plane
    ep.close()


def test_a_sack_leaves_ahead_of_data_waiting_for_the_wire(tmp_path):
    """Plane 0's wire is busy (the port pacer owes tokens) and data waits for it; a data packet
    that asks for an ACK arrives: its SACK goes out in the same turn, the data still waits."""
    clock = FakeClock(1 * MS)
    ep, ports, _ = endpoint(tmp_path, clock)
    codec = Codec(Topology(SPEC))
    ep.register_mr(bytearray(640), rkey=0x42, va=0)
    ep.create_qp(0x100, 2, 0x200, base_rtt_ns=2 * MS, qp_overrides=TIMERS)
    ep.pacers[0].tokens = -10 * 9000.0             # ~10 jumbo frames owed on plane 0
    ep.post_write(0x100, bytes(32 * 1024), 0, 0x42)
    clock.advance_to(2 * MS)
    ep.run_once(0)
    assert ep.txq[0], "data should be waiting for plane 0's wire"
    waiting = len(ep.txq[0])
    sent_before = len(ports[0].sent)
    frame = data_frame(codec, psn=0, opcode=Opcode.WRITE_ONLY, ev=(0 << 28) | 0x10001)
    arrive(ports[0], frame)
    ep.run_once(0)
    new = [codec.decode(f)[0] for f in ports[0].sent[sent_before:]]
    assert [m for m in new if isinstance(m, Sack)] and not any(
        isinstance(m, DataPacket) for m in new), new
    assert len(ep.txq[0]) == waiting
    ep.close()
