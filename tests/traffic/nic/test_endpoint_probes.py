"""The endpoint's per-hop self-probes (traffic/nic/endpoint_probes.py): what goes on the wire and
what an answer is. The container is written out by hand from the uSID layout of
model/topology.py: locator fcbb:bb00, T0 0x1000 | plane << 8 | group, T1 0x2000 | plane << 8 |
spine, downlink 0x3000 | local index."""
import ipaddress

from model.topology import FabricSpec
from tests.helpers.endpoint_fakes import FakePort
from traffic.core.codec import Codec
from traffic.core.messages import Probe
from traffic.core.path_prober import HOP_T0_ENTROPY, HOP_T1_ENTROPY
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import EndpointConfig

SPEC = FabricSpec()            # h3 is group 1, local 1


def endpoint(tmp_path, routing="srv6"):
    ports = {p: FakePort(p) for p in range(SPEC.planes)}
    cfg = EndpointConfig.from_dict({
        "host": 3, "fabric": SPEC.to_dict(), "routing": routing, "seed": 1,
        "event_log": str(tmp_path / "h3.jsonl"), "path_probe_interval_ms": 10})
    return Endpoint(cfg, ports=ports), ports


def outer_dst(frame) -> str:
    return str(ipaddress.IPv6Address(bytes(frame[14 + 24:14 + 40])))


def test_hop_probes_turn_at_the_t0_and_every_t1_and_count_when_they_come_back(tmp_path):
    ep, ports = endpoint(tmp_path)
    try:
        ep.prober.set_peers([], 0)
        ep._pump_prober(10 ** 9)
        ep._flush_tx(10 ** 9)
        codec = Codec(ep.topo)
        sent = {p: [codec.decode(f) for f in port.sent] for p, port in ports.items()}
        dsts = {p: sorted(outer_dst(f) for f in port.sent) for p, port in ports.items()}
        # plane 1: T0 t0p1g1 = 0x1101; turn at it (slot 2 = 0), at t1p1s0 (0x2100), t1p1s1 (0x2101)
        assert dsts[1] == sorted(["fcbb:bb00:1101:0:1101:3001::", "fcbb:bb00:1101:2100:1101:3001::",
                                  "fcbb:bb00:1101:2101:1101:3001::"])
        for plane, decoded in sent.items():
            assert {m.ev & 0xFFFF for m, _ in decoded} == {HOP_T0_ENTROPY, HOP_T1_ENTROPY}
            for msg, meta in decoded:
                assert (meta.src_host, meta.dst_host) == (3, 3) and not msg.response
        # the fabric turns them back: each one answers itself
        for plane, port in ports.items():
            for frame in port.sent:
                ep.handle_frame(plane, frame, 10 ** 9 + 1000)
        ep.prober.expire(2 * 10 ** 9)
        assert ep.prober.stats() == {
            f"h3>h3/p{p}/{turn}": {"sent": 1, "lost": 0}
            for p in (0, 1) for turn in ("t0", "s0", "s1")}
    finally:
        ep.close()


def test_a_self_addressed_answer_or_a_foreign_probe_qp_is_a_stale_probe(tmp_path):
    ep, ports = endpoint(tmp_path)
    try:
        codec = ep.codec
        stray = Probe(ev=(0 << 28) | HOP_T0_ENTROPY, seq=5, timestamp=0, response=True,
                      src_qp=3, path_ev=HOP_T0_ENTROPY)
        ep.handle_frame(0, codec.hop_encoder(3, 0, 0).encode(stray), 1)
        assert ep.counters.dropped.get("stale_probe") == 1
        assert ports[0].sent == []          # never answered as a peer's probe would be
    finally:
        ep.close()


def test_no_hop_probes_without_source_routing(tmp_path):
    ep, _ = endpoint(tmp_path, routing="ecmp")
    try:
        assert not ep.prober.hop_probes
    finally:
        ep.close()
