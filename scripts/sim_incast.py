"""A lossless incast through trimming queues, simulated: does a late packet get taken for a lost
one? Real endpoints (traffic/nic/endpoint.py: QPs, codec, pacers, delay lines) on a fake clock,
joined by scripts/sim_propagation.py's fabric of store-and-forward FIFO links, with the switch
egress ports (T0 uplink, T1 downlink, T0 last hop) doing what the emulated fabric's do: mark
ECN between the port's thresholds and trim a data frame above its trim threshold
(model/switchport.py default_port_config; the trimmed frame as emulation/network/vqueue.py
trim_frame makes it). Control frames (SACK, NACK, probes, trimmed headers) are served ahead of
queued data, as the priority leaf is; their own serialization does not delay the data.
Nothing is lost: every timeout and every SACK-gap loss is spurious, and so is every EV retired.

The fabric is incast.toml's (2 planes x 4 spines, 2 groups of 4 hosts, 30 Mbit/s, MTU 1500):
h2, h3, h5, h6, h7 each write `message_bytes` to h0 (one QP each) per iteration, the next
iteration once every WRITE completed. --delays adds random-loss.toml's propagation delays.

    .venv/bin/python scripts/sim_incast.py [--seeds 3] [--iterations 6] [--delays 0,1]
"""
from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sim_propagation as sim  # noqa: E402
from emulation.network.vqueue import set_traffic_class, trim_frame  # noqa: E402
from model import propagation  # noqa: E402
from model.events import Event  # noqa: E402
from model.switchport import default_port_config  # noqa: E402
from model.topology import FabricSpec, ev_spine  # noqa: E402
from model.wire import ECN_CE  # noqa: E402
from traffic.core.codec import DecodeError  # noqa: E402
from traffic.core.evs import ASSUMED_BAD  # noqa: E402
from traffic.core.messages import DataPacket  # noqa: E402

INCAST = FabricSpec(planes=2, groups=2, spines=4, hosts_per_group=4, host_link_mbit=30,
                    fabric_link_mbit=30)
TARGET, SENDERS = 0, (2, 3, 5, 6, 7)


class TrimFabric(sim.SimFabric):
    """sim.SimFabric whose switch ports mark and trim, with control frames served first."""

    def __init__(self, spec: FabricSpec, clock, rng: random.Random):
        super().__init__(spec, clock, 0.0, rng)
        self.ctl_busy: dict = {}
        self.ports: dict = {}
        self.trimmed = self.marked = 0
        self.max_wait_ns = 0            # the longest queueing a data frame met untrimmed

    def _port(self, mbit: float, last_hop: bool):
        key = (mbit, last_hop)
        if key not in self.ports:
            self.ports[key] = default_port_config(mbit, last_hop, mtu=self.spec.mtu)
        return self.ports[key]

    def send(self, src: int, plane: int, frame: bytes) -> None:
        try:
            msg, meta = self.codec.decode(frame)
        except DecodeError:
            return
        t, waited = self.clock.t, 0
        data = isinstance(msg, DataPacket) and not meta.trimmed
        links = self._links(src, meta.dst_host, plane, ev_spine(meta.ev))
        for i, (key, mbit, _host_link) in enumerate(links):
            if data and i > 0:          # a switch egress port (the host's own is paced)
                frame, data = self._police(frame, key, mbit, i == len(links) - 1, t)
            ser = int((len(frame) + 4) * 8e3 / mbit)
            busy = self.busy if data else self.ctl_busy
            start = max(t, busy.get(key, 0))
            busy[key] = start + ser
            if data:
                waited += start - t
            t = start + ser + sim.SWITCH_NS
        if data:
            self.max_wait_ns = max(self.max_wait_ns, waited)
        self.seq += 1
        sim.heapq.heappush(self.queue, (t, self.seq, meta.dst_host, plane, frame))

    def _police(self, frame: bytes, key, mbit: float, last_hop: bool, t: int):
        """(frame, still data): trimmed above the trim threshold, CE-marked with a probability
        rising from ecn_min to ecn_max (as vqueue.mark_threshold)."""
        cfg = self._port(mbit, last_hop)
        backlog = max(0, self.busy.get(key, 0) - t) * mbit / 8e3        # bytes queued ahead
        if cfg.trim and backlog > cfg.trim_bytes:
            self.trimmed += 1
            return trim_frame(frame, last_hop), False
        if backlog > cfg.ecn_min_bytes:
            p = min(1.0, (backlog - cfg.ecn_min_bytes) / (cfg.ecn_max_bytes - cfg.ecn_min_bytes))
            if self.rng.random() < p:
                self.marked += 1
                frame = set_traffic_class(frame, ecn=ECN_CE)
        return frame, True


def count_retirements(ep) -> list:
    """Forward EVs the endpoint's QPs retire (ASSUMED_BAD), counted off its event log."""
    retired, emit = [], ep.log.emit

    def counting(event, t_ns=None, **fields):
        if (event == Event.EV_STATE and fields.get("new") == ASSUMED_BAD
                and fields.get("direction") != "reverse"):
            retired.append(t_ns)
        emit(event, t_ns=t_ns, **fields)
    ep.log.emit = counting
    return retired


def one_run(spec: FabricSpec, seed: int, iterations: int, message_bytes: int,
            overrides: dict) -> dict:
    clock = sim.Clock(10**9)
    fabric = TrimFabric(spec, clock, random.Random(seed))
    eps = {h: sim.endpoint(fabric, h, "srv6", seed + h) for h in (TARGET, *SENDERS)}
    retired = [count_retirements(ep) for ep in eps.values()]
    rtts = {h: sim.probe_rtt(fabric, eps[h], TARGET) for h in SENDERS}
    dst = bytearray(message_bytes * len(SENDERS))
    eps[TARGET].register_mr(dst, rkey=0x42, va=0)
    qps = {}
    for k, h in enumerate(SENDERS):
        qps[h] = eps[h].create_qp(0x100 + k, TARGET, 0x200 + k, "mrc", rtts[h], overrides)
        eps[TARGET].create_qp(0x200 + k, h, 0x100 + k, "mrc", rtts[h], overrides)
    data = random.Random(seed).randbytes(message_bytes)
    start = clock.t
    for it in range(iterations):
        for k, h in enumerate(SENDERS):
            eps[h].post_write(qps[h].qpn, data, k * message_bytes, 0x42, imm=it)
        sim.run_until(fabric, lambda: all(len(q.send_completions) > it for q in qps.values()),
                      start + 600 * 10**9)
    counters = [q.sender.counters for q in qps.values()]
    rx = [q.receiver.counters for q in eps[TARGET].qps.values()]
    first = qps[SENDERS[0]].sender
    out = {"ms": (clock.t - start) / 1e6, "trimmed": fabric.trimmed, "marked": fabric.marked,
           "max_wait_ms": fabric.max_wait_ns / 1e6,
           "timeouts": sum(c.get("timeouts", 0) for c in counters),
           "sack_gap": sum(c.get("sack_gap_losses", 0) for c in counters),
           "nacks": sum(c.get("nacks", 0) for c in counters),
           "duplicates": sum(c.get("duplicates", 0) for c in rx),
           "retired": sum(len(r) for r in retired),
           "rto_ms": first.rto_base_ns() / 1e6, "reorder_ms": first.reorder_window_ns() / 1e6}
    for ep in eps.values():
        ep.close()
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--message-bytes", type=int, default=256 << 10, help="per sender")
    parser.add_argument("--delays", default="0,1", help="0: without, 1: random-loss's delays")
    parser.add_argument("--qp", action="append", default=[], metavar="KEY=VALUE",
                        help="a QP setting over the endpoint's (as [mrc.qp])")
    args = parser.parse_args(argv)
    overrides = {k: float(v) if "." in v else int(v)
                 for k, v in (item.split("=", 1) for item in args.qp)}
    print("| BDP pkts/plane | seeds | ms per run | trimmed | CE marked | longest untrimmed "
          "queueing ms | timeouts | SACK-gap losses | duplicates at h0 | EVs retired | NACKs | "
          "RTO ms | reorder window ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for delayed in (d == "1" for d in args.delays.split(",")):
        spec = (dataclasses.replace(INCAST, host_link_delay_ms=sim.RANDOM_LOSS.host_link_delay_ms,
                                    fabric_link_delay_ms=sim.RANDOM_LOSS.fabric_link_delay_ms)
                if delayed else INCAST)
        runs = [one_run(spec, s, args.iterations, args.message_bytes, overrides)
                for s in range(1, args.seeds + 1)]

        def total(key):
            return sum(r[key] for r in runs)
        print(f"| {propagation.bdp_packets(spec):.1f} | {args.seeds} | "
              f"{statistics.mean(r['ms'] for r in runs):.1f} | {total('trimmed')} | "
              f"{total('marked')} | {max(r['max_wait_ms'] for r in runs):.2f} | "
              f"{total('timeouts')} | {total('sack_gap')} | {total('duplicates')} | "
              f"{total('retired')} | {total('nacks')} | "
              f"{statistics.mean(r['rto_ms'] for r in runs):.1f} | "
              f"{statistics.mean(r['reorder_ms'] for r in runs):.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
