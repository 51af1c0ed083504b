"""The endpoint's delay line: every received frame waits out its path's one-way propagation
delay (model/propagation.py) before the endpoint acts on it, the loop wakes for it, the base
RTT the probes measure holds it both ways, and data crosses byte-exact through it."""
import random
import threading

import pytest

from model.topology import FabricSpec, Topology, make_ev
from tests.helpers.endpoint_fakes import FakePort, endpoints
from traffic.core.codec import Codec
from traffic.core.messages import Probe
from traffic.nic import endpoint as endpoint_mod
from traffic.nic import packet_io
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import EndpointConfig

pytestmark = pytest.mark.core

MS = 1_000_000
# 2 ms per host link, 3 ms per fabric link: host 1 is 4 ms from host 0 (same T0) and 10 ms from
# hosts 2 and 3 (two host links and two fabric links)
SPEC = FabricSpec(host_link_delay_ms=2.0, fabric_link_delay_ms=3.0)
CODEC = Codec(Topology(SPEC))
FAR = 10**18


class Clock:
    def __init__(self, t):
        self.t = t

    def __call__(self):
        return self.t


def probe_from(src: int, plane: int = 0, seq: int = 11) -> bytes:
    ev = make_ev(plane, 1, 4242)
    return CODEC.encoder(src, 1, plane, "srv6").encode(
        Probe(ev=ev, seq=seq, timestamp=99, src_qp=5, path_ev=ev))


def held_endpoint(t0):
    clock = Clock(t0)
    cfg = EndpointConfig.from_dict({"host": 1, "fabric": SPEC.to_dict(), "base_rtt_ns": MS})
    ports = {p: FakePort(p) for p in range(SPEC.planes)}
    ep = Endpoint(cfg, ports=ports, clock=clock)
    ep._next_goodput = ep._next_port_poll = FAR      # only the delay line wakes the loop
    return ep, ports, clock


def test_a_frame_is_acted_on_after_its_paths_one_way_delay():
    t0 = 5 * MS
    ep, ports, clock = held_endpoint(t0)
    ep.handle_frame(0, probe_from(0), now=t0)
    ep.handle_frame(0, probe_from(2, seq=12), now=t0)
    assert ep.delay_line.next_release() == t0 + 4 * MS
    assert ep._next_wakeup(t0) == t0 + 4 * MS            # the loop wakes for the release
    clock.t = t0 + 4 * MS - 1
    ep.run_once(0)
    assert ports[0].sent == []                           # not yet: 1 ns early
    clock.t = t0 + 4 * MS
    ep.run_once(0)
    assert [CODEC.decode(f)[0].seq for f in ports[0].sent] == [11]   # same T0: 4 ms
    assert ep._next_wakeup(clock.t) == t0 + 10 * MS
    clock.t = t0 + 10 * MS + 250_000                     # the loop woke 0.25 ms late
    ep.run_once(0)
    assert [CODEC.decode(f)[0].seq for f in ports[0].sent] == [11, 12]   # across groups: 10 ms
    assert ep.timer_lateness.samples == 2                # each release's lateness is counted
    ep.close()


def test_without_delay_nothing_is_held():
    ep = Endpoint(EndpointConfig.from_dict({"host": 1, "base_rtt_ns": MS}),
                  ports={p: FakePort(p) for p in range(2)}, clock=Clock(MS))
    assert ep.delay_line is None
    ep.handle_frame(0, probe_from(0), now=MS)
    ep._flush_tx(MS)
    assert len(ep.ports[0].sent) == 1
    ep.close()


def test_probes_measure_the_propagation_both_ways_and_a_write_crosses_byte_exact(tmp_path):
    """Hosts 0 and 2 across groups, 1 ms per host link and 1.5 ms per fabric link: 5 ms each
    way, so no probe can come back in under 10 ms. The wire ports reuse one receive buffer, as
    a ring reuses its slots: what the delay line holds must be its own copy."""
    spec = FabricSpec(host_link_delay_ms=1.0, fabric_link_delay_ms=1.5)
    a, b, _, _ = endpoints(tmp_path, spec=spec)
    rtt = {}
    peer = threading.Thread(target=lambda: b.run_until(lambda: "a" in rtt, 10))
    peer.start()
    rtt["a"] = a.measure_base_rtt(2)
    peer.join()
    assert 10 * MS <= rtt["a"] < 200 * MS
    qa = a.create_qp(0x100, 2, 0x200, base_rtt_ns=rtt["a"])
    qb = b.create_qp(0x200, 0, 0x100, base_rtt_ns=rtt["a"])
    dst = bytearray(200_000)
    b.register_mr(dst, rkey=0x42, va=0)
    data = random.Random(3).randbytes(200_000)
    a.post_write(0x100, data, 0, 0x42, imm=9)
    import time
    end = time.monotonic() + 30
    while not (qb.recv_completions and qa.send_completions):
        assert time.monotonic() < end, "transfer did not finish"
        a.run_once(0.0005)
        b.run_once(0.0005)
    assert bytes(dst) == data
    assert a.delay_line.held_max > 1 and b.delay_line.held_max > 1
    a.close()
    b.close()


def test_a_nic_port_gets_a_receive_buffer_for_the_bdp(monkeypatch):
    """50 ms per host link at 100 Mbit/s, MTU 1500: 1651 frames from each of 3 peers in 2 KiB
    ring slots (endpoint_support.rx_buffer_bytes), for the ring and for the plain socket."""
    opened = []

    class Recorder:
        def __init__(self, intf, plane, **kw):
            opened.append((type(self).__name__, kw))

    monkeypatch.setattr(packet_io, "RingPort", type("RingPort", (Recorder,), {}))
    monkeypatch.setattr(packet_io, "PacketPort", type("PacketPort", (Recorder,), {}))
    spec = FabricSpec(host_link_delay_ms=50.0).to_dict()
    for fast in (True, False):
        cfg = EndpointConfig.from_dict({"host": 0, "fabric": spec, "fast_path": fast})
        endpoint_mod.open_port(cfg, "h0-p0", 0)
    assert opened == [("RingPort", {"ring_bytes": 1651 * 3 * 2048}),
                      ("PacketPort", {"rcvbuf": 1651 * 3 * 2048})]


def test_with_no_answer_the_fallback_base_rtt_holds_the_propagation_both_ways():
    """Host 1 to host 0 (same T0): 4 ms each way on top of the 1 ms fallback."""
    cfg = EndpointConfig.from_dict({"host": 1, "fabric": SPEC.to_dict(),
                                    "default_base_rtt_ns": MS})
    ep = Endpoint(cfg, ports={p: FakePort(p) for p in range(SPEC.planes)})
    assert ep.measure_base_rtt(0, timeout_s=0.001) == MS + 8 * MS
    ep.close()
