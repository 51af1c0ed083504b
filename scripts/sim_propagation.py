"""Random loss against the bandwidth-delay product, simulated: two real endpoints
(traffic/nic/endpoint.py: their QPs, codec, pacers and delay lines) on a fake clock, joined by a
simulated fabric of store-and-forward links, with no sockets and no Mininet. Simulated time does
not depend on the CPU, so the numbers are the protocol's, whatever else the machine runs.

The fabric is random-loss.toml's, or the demo's with --demo: 2 planes x 2 spines, the two hosts
under different T0s (the longest path: host link, T0-T1, T1-T0, host link), every link a FIFO
that stores a frame whole before forwarding it, plus SWITCH_NS per hop. The links'
propagation delay is not in the simulated fabric: the endpoints' delay lines add it, as on the
emulated fabric. Random loss drops each frame (data, SACK, NACK, probe) on each host link it
crosses with the given probability, in both directions.

Traffic: the ring all-reduce's steps between two neighbours, `qps` QPs sharing the endpoint's
per-plane pacer, each step one WRITE-with-IMM of `step_bytes` per QP, the next step once every
QP's WRITE completed. RoCE runs the same steps over its one ECMP path per QP.

    .venv/bin/python scripts/sim_propagation.py [--demo] [--seeds 6] [--steps 24]
"""
from __future__ import annotations

import argparse
import dataclasses
import heapq
import os
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model import propagation  # noqa: E402
from model.topology import FabricSpec, Topology, ev_spine, make_ev  # noqa: E402
from traffic.core.codec import Codec, DecodeError  # noqa: E402
from traffic.core.messages import DataPacket, PROBE_ID_MASK, Probe  # noqa: E402
from traffic.nic.endpoint import Endpoint  # noqa: E402
from traffic.nic.endpoint_probes import RTT_PROBE_QP  # noqa: E402
from traffic.nic.endpoint_support import EndpointConfig  # noqa: E402

SWITCH_NS = 11_000          # a switch's forwarding latency per hop
FAR = 10**18
RANDOM_LOSS = FabricSpec(host_link_mbit=30, fabric_link_mbit=30, host_link_delay_ms=6.5,
                         fabric_link_delay_ms=0.25)
DEMO = FabricSpec(mtu=9000)
A, B = 0, 2                 # hosts under different T0s


class Clock:
    def __init__(self, t: int):
        self.t = t

    def __call__(self) -> int:
        return self.t


class SimPort:
    """A NIC port whose frames go into the simulated fabric."""

    def __init__(self, fabric: "SimFabric", host: int, plane: int):
        self.fabric, self.host, self.plane = fabric, host, plane
        self._r, self._w = os.pipe()          # the endpoint's poller wants a file descriptor

    def fileno(self) -> int:
        return self._r

    def send(self, frame) -> bool:
        self.fabric.send(self.host, self.plane, bytes(frame))
        return True

    def is_up(self) -> bool:
        return True

    def close(self) -> None:
        os.close(self._r)
        os.close(self._w)


class SimFabric:
    def __init__(self, spec: FabricSpec, clock: Clock, loss: float, rng: random.Random):
        self.spec, self.clock, self.loss, self.rng = spec, clock, loss, rng
        self.codec = Codec(Topology(spec))
        self.busy: dict = {}
        self.queue: list = []
        self.seq = 0
        self.endpoints: dict[int, Endpoint] = {}
        self.lost_data = 0
        self.lost_other = 0

    def _links(self, src: int, dst: int, plane: int, spine: int) -> list:
        per = self.spec.hosts_per_group
        sg, dg = src // per, dst // per
        host, fab = self.spec.host_link_mbit, self.spec.fabric_link_mbit
        links = [(("up", src, plane), host, True)]
        if sg != dg:
            links += [(("t0t1", plane, sg, spine), fab, False),
                      (("t1t0", plane, spine, dg), fab, False)]
        return links + [(("down", dst, plane), host, True)]

    def send(self, src: int, plane: int, frame: bytes) -> None:
        try:
            msg, meta = self.codec.decode(frame)
        except DecodeError:
            return
        t = self.clock.t
        for key, mbit, lossy in self._links(src, meta.dst_host, plane, ev_spine(meta.ev)):
            if lossy and self.loss and self.rng.random() < self.loss:
                if isinstance(msg, DataPacket):
                    self.lost_data += 1
                else:
                    self.lost_other += 1
                return
            start = max(t, self.busy.get(key, 0))
            end = start + int((len(frame) + 4) * 8e3 / mbit)     # ns; + FCS
            self.busy[key] = end
            t = end + SWITCH_NS
        self.seq += 1
        heapq.heappush(self.queue, (t, self.seq, meta.dst_host, plane, frame))

    def deliver_due(self) -> bool:
        now, got = self.clock.t, False
        while self.queue and self.queue[0][0] <= now:
            _t, _s, dst, plane, frame = heapq.heappop(self.queue)
            self.endpoints[dst].handle_frame(plane, frame, now)
            got = True
        return got


def endpoint(fabric: SimFabric, host: int, routing: str, seed: int) -> Endpoint:
    cfg = EndpointConfig.from_dict({"host": host, "fabric": fabric.spec.to_dict(),
                                    "routing": routing, "seed": seed,
                                    "qp": {"trimming": True}})
    ports = {p: SimPort(fabric, host, p) for p in range(fabric.spec.planes)}
    ep = Endpoint(cfg, ports=ports, clock=fabric.clock)
    ep._next_goodput = ep._next_port_poll = FAR        # no logs, no port polls
    fabric.endpoints[host] = ep
    return ep


def run_until(fabric: SimFabric, done, limit_ns: int) -> None:
    clock, eps = fabric.clock, list(fabric.endpoints.values())
    while not done():
        if clock.t > limit_ns:
            raise RuntimeError(f"simulation passed {limit_ns / 1e9:g} s without finishing")
        now = clock.t
        for ep in eps:
            if ep.delay_line is not None:
                ep._release_delayed(now)
            ep._pump_qps(now)
            ep._flush_tx(now)
        if fabric.deliver_due():
            continue
        nxt = min([fabric.queue[0][0]] if fabric.queue else [FAR])
        for ep in eps:
            nxt = min(nxt, ep._next_wakeup(now))
        if nxt >= FAR:          # nothing will ever happen: done now, or never
            if done():
                return
            raise RuntimeError("the simulation has nothing left to do and is not done")
        clock.t = max(nxt, now + 1)


def probe_rtt(fabric: SimFabric, a: Endpoint, peer: int) -> int:
    """The min RTT of a probe per (plane, spine), as Endpoint.measure_base_rtt takes it."""
    samples = a.rtt_samples[peer]
    want = fabric.spec.planes * fabric.spec.spines
    for i in range(want):
        plane, spine = i % fabric.spec.planes, i // fabric.spec.planes
        ev = make_ev(plane, spine, 0x100 + i)
        a._rtt_probe_seq = (a._rtt_probe_seq + 1) & PROBE_ID_MASK
        a._rtt_probes[a._rtt_probe_seq] = fabric.clock.t
        a.send_message(Probe(ev=ev, seq=a._rtt_probe_seq, timestamp=fabric.clock.t,
                             src_qp=RTT_PROBE_QP, path_ev=ev), plane, peer)
    run_until(fabric, lambda: len(samples) >= want or fabric.clock.t > 10**10, FAR)
    return min(samples) if samples else 10**9


@dataclasses.dataclass
class Result:
    ms: float
    lost_data: int
    timeouts: int
    sack_gap: int
    nacks: int
    rto_ms: float
    reorder_ms: float


def one_run(spec: FabricSpec, transport: str, loss: float, seed: int, steps: int,
            step_bytes: int, qps: int, delayed: bool, overrides: dict | None = None) -> Result:
    if not delayed:
        spec = dataclasses.replace(spec, host_link_delay_ms=0.0, fabric_link_delay_ms=0.0)
    clock = Clock(10**9)
    fabric = SimFabric(spec, clock, 0.0, random.Random(seed))
    routing = "srv6" if transport == "mrc" else "ecmp"
    a, b = endpoint(fabric, A, routing, seed), endpoint(fabric, B, routing, seed + 100)
    rtt = probe_rtt(fabric, a, B)
    fabric.loss = loss                                # the loss starts with the traffic
    pairs = [(a.create_qp(0x100 + k, B, 0x200 + k, transport, rtt, overrides),
              b.create_qp(0x200 + k, A, 0x100 + k, transport, rtt, overrides))
             for k in range(qps)]
    dst = bytearray(step_bytes * qps)
    b.register_mr(dst, rkey=0x42, va=0)
    data = random.Random(seed).randbytes(step_bytes)
    start = clock.t
    for step in range(steps):
        for k, (qa, _qb) in enumerate(pairs):
            a.post_write(qa.qpn, data, k * step_bytes, 0x42, imm=step)
        run_until(fabric, lambda: all(len(qa.send_completions) > step for qa, _ in pairs),
                  start + 600 * 10**9)
    counters = [qa.sender.counters for qa, _ in pairs]
    rtt_est = getattr(pairs[0][0].sender, "rtt", None)     # MRC's estimator; RoCE has none
    rto = rtt_est.rto_base_ns() if rtt_est is not None else 0
    reorder = rtt_est.reorder_window_ns() if rtt_est is not None else 0
    for ep in (a, b):
        ep.close()
    return Result((clock.t - start) / 1e6, fabric.lost_data,
                  sum(c.get("timeouts", 0) for c in counters),
                  sum(c.get("sack_gap_losses", 0) for c in counters),
                  sum(c.get("nacks", 0) for c in counters), rto / 1e6, reorder / 1e6)


def row(spec, transport, delayed, args) -> dict:
    clean = [one_run(spec, transport, 0.0, s, args.steps, args.step_bytes, args.qps, delayed,
                     args.qp) for s in range(1, args.seeds + 1)]
    lossy = [one_run(spec, transport, args.loss, s, args.steps, args.step_bytes, args.qps,
                     delayed, args.qp) for s in range(1, args.seeds + 1)]
    used = spec if delayed else dataclasses.replace(spec, host_link_delay_ms=0.0,
                                                    fabric_link_delay_ms=0.0)
    clean_ms = statistics.mean(r.ms for r in clean)
    lossy_ms = statistics.mean(r.ms for r in lossy)
    return {"transport": transport, "bdp": propagation.bdp_packets(used), "clean_ms": clean_ms,
            "lossy_ms": lossy_ms, "slowdown": lossy_ms / clean_ms,
            "clean_timeouts": sum(r.timeouts for r in clean),
            "lost": sum(r.lost_data for r in lossy), "timeouts": sum(r.timeouts for r in lossy),
            "sack_gap": sum(r.sack_gap for r in lossy), "nacks": sum(r.nacks for r in lossy),
            "rto_ms": statistics.mean(r.rto_ms for r in lossy),
            "reorder_ms": statistics.mean(r.reorder_ms for r in lossy)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--demo", action="store_true", help="the demo's fabric (100 Mbit/s, "
                        "MTU 9000) with random-loss.toml's delays, instead of random-loss's")
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=24, help="ring steps (6 per iteration)")
    parser.add_argument("--step-bytes", type=int, default=1 << 20, help="per QP and step "
                        "(random-loss.toml: 8 MiB over 4 ranks and 2 QPs per peer)")
    parser.add_argument("--qps", type=int, default=2)
    parser.add_argument("--loss", type=float, default=0.01)
    parser.add_argument("--transports", default="mrc,roce")
    parser.add_argument("--delays", default="0,1", help="0: without the delay, 1: with it")
    parser.add_argument("--qp", action="append", default=[], metavar="KEY=VALUE",
                        help="a QP setting over the endpoint's (as [mrc.qp]), e.g. rto_rtts=4")
    args = parser.parse_args(argv)
    args.qp = {k: float(v) if "." in v else int(v)
               for k, v in (item.split("=", 1) for item in args.qp)}
    spec = (dataclasses.replace(DEMO, host_link_delay_ms=RANDOM_LOSS.host_link_delay_ms,
                                fabric_link_delay_ms=RANDOM_LOSS.fabric_link_delay_ms)
            if args.demo else RANDOM_LOSS)
    print("| transport | BDP pkts/plane | lossless ms | lossless timeouts | "
          f"{args.loss:.1%} loss ms | slowdown | data lost | timeouts | SACK-gap losses | "
          "NACKs | RTO ms | reorder window ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for transport in args.transports.split(","):
        for delayed in (d == "1" for d in args.delays.split(",")):
            r = row(spec, transport, delayed, args)
            print(f"| {r['transport']} | {r['bdp']:.1f} | {r['clean_ms']:.1f} | "
                  f"{r['clean_timeouts']} | {r['lossy_ms']:.1f} | x{r['slowdown']:.2f} | "
                  f"{r['lost']} | {r['timeouts']} | {r['sack_gap']} | {r['nacks']} | "
                  f"{r['rto_ms']:.1f} | {r['reorder_ms']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
