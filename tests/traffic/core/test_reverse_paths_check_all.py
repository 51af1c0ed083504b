"""Reverse-path probing when ACKs go missing (traffic/core/reverse_paths.py, traffic/core/receiver.py):
"probe every reverse EV" at most once per probe timeout; probes of one such burst do not judge
each other (a timeout counts against its EV only once a probe sent LATER was answered); and the
endpoint loop (traffic/nic/endpoint.py, its kept deadlines) serves a requested check at once.

Times by hand: base RTT 1000 ns, probe timeout 4 base RTTs = 4000 ns, reverse probe period
100 base RTTs (so the round robin stays out of the way), 2 planes x 2 reverse EVs."""
from __future__ import annotations

import random

import pytest

from model.topology import FabricSpec, Topology, make_ev
from tests.helpers.endpoint_fakes import FakePort
from traffic.core.clock import FakeClock
from traffic.core.codec import Codec
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import EndpointConfig
from traffic.core.evs import PathInfo
from traffic.core.messages import DataPacket, Opcode, Probe
from traffic.core.qp_config import MRCConfig
from traffic.core.reverse_paths import ReversePaths

pytestmark = pytest.mark.core

RTT = 1000
TIMEOUT = 4 * RTT


def reverse_paths() -> ReversePaths:
    cfg = MRCConfig(base_rtt_ns=RTT, probe_timeout_rtts=4.0, reverse_probe_rtts=100.0,
                    reverse_evs_per_plane=2, reverse_probe_fail_limit=1)
    return ReversePaths(0x33, cfg, PathInfo((0, 1), 4), random.Random(3), {0: True, 1: True},
                        lambda event: None)


def in_use(rp):
    return sorted(r.ev for p in rp.evs for r in rp.evs[p])


def answer(probe: Probe) -> Probe:
    return Probe(ev=probe.ev, seq=probe.seq, timestamp=probe.timestamp, response=True,
                 src_qp=probe.src_qp, path_ev=probe.path_ev)


def probes(out):
    return [m for m, _ in out if isinstance(m, Probe)]


def settled(rp, t):
    """Past the round robin's first probe: it is sent at t and answered at once."""
    for p in probes(rp.poll(t, True)):
        rp.on_probe_response(answer(p), t)


def test_probe_every_reverse_ev_at_most_once_per_probe_timeout():
    rp = reverse_paths()
    settled(rp, 0)
    t = 1000
    rp.ack_went_missing(t)
    burst = probes(rp.poll(t, True))
    assert sorted(p.ev for p in burst) == in_use(rp)         # all four at once
    for p in burst:
        rp.on_probe_response(answer(p), t + 100)
    rp.ack_went_missing(t + TIMEOUT - 1)                     # within the timeout: no new burst
    assert probes(rp.poll(t + TIMEOUT - 1, True)) == []
    rp.ack_went_missing(t + TIMEOUT)                         # one probe timeout later: again
    assert sorted(p.ev for p in probes(rp.poll(t + TIMEOUT, True))) == in_use(rp)


def test_a_request_inside_the_limit_does_not_postpone_the_next_one():
    # requests at 1000 (burst), 4999 (refused) and 5000: the limit counts from the burst at
    # 1000, not from the refused request
    rp = reverse_paths()
    settled(rp, 0)
    rp.ack_went_missing(1000)
    for p in probes(rp.poll(1000, True)):
        rp.on_probe_response(answer(p), 1100)
    rp.ack_went_missing(1000 + TIMEOUT - 1)
    rp.poll(1000 + TIMEOUT - 1, True)
    rp.ack_went_missing(1000 + TIMEOUT)
    assert len(probes(rp.poll(1000 + TIMEOUT, True))) == 4


def test_probes_of_one_burst_do_not_judge_each_other():
    """All four probes of a burst time out (the reverse paths are slow); three answers then
    come late, the fourth EV's never does. Those answers are to probes sent at the same time
    as the fourth's: no evidence that the peer was alive after it left. Only the answer to a
    probe sent later judges it (fail limit 1: retired then)."""
    rp = reverse_paths()
    settled(rp, 0)
    t = 1000
    rp.ack_went_missing(t)
    burst = probes(rp.poll(t, True))
    dead = burst[0].ev
    rp.poll(t + TIMEOUT, True)                               # every probe of the burst expired
    for p in burst[1:]:
        rp.on_probe_response(answer(p), t + TIMEOUT + 500)   # late, but the paths work
    assert dead in in_use(rp) and dead not in rp.retired
    # a probe sent later (the next request's burst, 4000 ns on) is answered: the dead EV's
    # timed-out probe was lost on its own path
    rp.ack_went_missing(t + TIMEOUT + 1000)
    later = [p for p in probes(rp.poll(t + TIMEOUT + 1000, True)) if p.ev != dead]
    rp.on_probe_response(answer(later[0]), t + TIMEOUT + 1200)
    assert dead not in in_use(rp) and dead in rp.retired


# ---------------------------------------------------------------- through the endpoint loop

MS = 1_000_000
SPEC = FabricSpec()


def data_frame(codec, psn, ev, retransmit=False):
    """A one-packet WRITE from host 2's QP 0x200 to host 0's QP 0x100, on plane 0."""
    pkt = DataPacket(dest_qp=0x100, psn=psn, opcode=Opcode.WRITE_ONLY, msn=psn, va=0,
                     rkey=0x42, dma_len=64, payload=b"d" * 64, timestamp=1, ack_req=True,
                     retransmit=retransmit, ev=ev)
    return codec.encoder(2, 0, 0, "srv6").encode(pkt, ev=ev)


def test_the_endpoint_loop_sends_the_requested_probes_in_the_turn_the_duplicate_arrives(tmp_path):
    """A resent packet the receiver already has means one of its ACKs went missing: in that
    same loop turn the endpoint must probe every reverse EV not already being probed, not wait
    for the round robin's next turn (8 base RTTs = 16 ms later) as its kept deadline would."""
    import os
    clock = FakeClock(1 * MS)
    cfg = EndpointConfig.from_dict({"host": 0, "fabric": SPEC.to_dict(), "seed": 1,
                                    "event_log": str(tmp_path / "h0.jsonl")})
    ports = {p: FakePort(p) for p in range(SPEC.planes)}
    ep = Endpoint(cfg, ports=ports, clock=clock)
    codec = Codec(Topology(SPEC))
    ep.register_mr(bytearray(64), rkey=0x42, va=0)
    qp = ep.create_qp(0x100, 2, 0x200, base_rtt_ns=2 * MS)
    rp = qp.receiver.reverse_paths
    ev = make_ev(0, 0, 7)

    def arrive_and_turn(frame, t):
        ports[0].inject(frame)
        os.write(ports[0]._w, b"x")
        mark = {p: len(port.sent) for p, port in ports.items()}
        clock.advance_to(t)
        ep.run_once(0)
        return [codec.decode(f)[0] for p, port in ports.items() for f in port.sent[mark[p]:]]

    first = arrive_and_turn(data_frame(codec, 0, ev), 2 * MS)
    rr = [m.ev for m in first if isinstance(m, Probe)]
    assert len(rr) == 1                                     # the round robin's first probe
    sent = arrive_and_turn(data_frame(codec, 0, ev, retransmit=True), 3 * MS)
    burst = sorted(m.ev for m in sent if isinstance(m, Probe))
    assert burst == sorted(e for e in in_use(rp) if e not in rr)
    assert len(burst) == 3
    ep.close()
