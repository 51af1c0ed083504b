"""Profile the MRC endpoint's data path without a fabric: two Endpoints in one process, their
NIC ports joined in memory (each frame sent on a plane is handed to the peer's receive path),
one WRITE h0 -> h2. Prints CPU per frame and per MiB, and with --profile a cProfile table
(`--profile FILE` also writes it for snakeviz / pstats).

    .venv/bin/python scripts/profile_endpoints.py --size-mib 16 --mtu 9000 [--profile out.prof]
    .venv/bin/python scripts/profile_endpoints.py --idle-qps 13 --idle-turns   # loop cost per QP
    MRCLAB_PURE_PYTHON=1 .venv/bin/python scripts/profile_endpoints.py ...   # interpreted core

No sockets and no switches: what it measures is the endpoints' own Python and codec work per
frame, which is what the compiled core and the per-packet changes act on."""
from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if "--zlib" in sys.argv:
    sys.modules["isal"] = None      # the codec falls back to zlib's CRC-32 (lever attribution)

from model.topology import FabricSpec  # noqa: E402
from traffic import compiled  # noqa: E402
from traffic.nic.endpoint import Endpoint  # noqa: E402
from traffic.nic.endpoint_support import EndpointConfig  # noqa: E402


class MemoryPort:
    """A NIC port whose sent frames land in the peer's inbox; drained like a ring port."""

    def __init__(self, plane: int):
        self.plane = plane
        self.inbox: collections.deque = collections.deque()
        self.peer: MemoryPort | None = None
        # poll() needs a descriptor: readable (one byte) while the inbox holds frames
        self._r, self._w = os.pipe()

    def fileno(self) -> int:
        return self._r

    def send(self, frame) -> bool:
        peer = self.peer
        if not peer.inbox:
            os.write(peer._w, b"x")
        peer.inbox.append(frame)
        return True

    def drain(self, handle, limit: int) -> int:
        inbox, done = self.inbox, 0
        while inbox and done < limit:
            handle(inbox.popleft())
            done += 1
        if done and not inbox:
            os.read(self._r, 1)
        return done

    def is_up(self) -> bool:
        return True

    def close(self) -> None:
        os.close(self._r)
        os.close(self._w)


def joined_endpoints(spec: FabricSpec, workdir: str, max_payload: int | None):
    a = {p: MemoryPort(p) for p in range(spec.planes)}
    b = {p: MemoryPort(p) for p in range(spec.planes)}
    for p in range(spec.planes):
        a[p].peer, b[p].peer = b[p], a[p]
    eps = []
    for host, ports in ((0, a), (2, b)):
        cfg = {"host": host, "fabric": spec.to_dict(), "seed": host + 1,
               "event_log": os.path.join(workdir, f"h{host}.jsonl")}
        if max_payload:
            cfg["max_payload"] = max_payload
        eps.append(Endpoint(EndpointConfig.from_dict(cfg), ports=ports))
    return eps


def prepare(a: Endpoint, b: Endpoint, size: int, rkey: int):
    """Region, data and QPs of one transfer (not part of what is measured)."""
    b.register_mr(size, rkey=rkey)
    qpn = 0x100 + rkey
    a.create_qp(qpn, 2, qpn + 1, base_rtt_ns=2_000_000)
    b.create_qp(qpn + 1, 0, qpn, base_rtt_ns=2_000_000)
    return qpn, os.urandom(size)


def transfer(a: Endpoint, b: Endpoint, qpn: int, data, rkey: int) -> int:
    """Run both loops until the WRITE completes; returns the loop turns (both endpoints)."""
    qb = b.qps[qpn + 1]
    a.post_write(qpn, data, 0, rkey, imm=1)
    deadline = time.monotonic() + 600
    turns = 0
    while not qb.recv_completions:
        if time.monotonic() > deadline:
            raise RuntimeError("transfer did not finish in 600 s")
        a.run_once(0)
        b.run_once(0)
        turns += 2
    return turns


def idle_turn_cost(ep: Endpoint, turns: int = 2000, rounds: int = 7) -> float:
    """CPU seconds of one run_once with no frame and no timer due; the best of `rounds` (a
    loaded machine only ever adds to it)."""
    best = float("inf")
    for _ in range(rounds):
        cpu0 = time.process_time()
        for _ in range(turns):
            ep.run_once(0)
        best = min(best, (time.process_time() - cpu0) / turns)
    print(f"idle loop turn: {best * 1e6:.1f} us CPU with {len(ep.qps)} QPs")
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=16)
    parser.add_argument("--mtu", type=int, default=9000)
    parser.add_argument("--max-payload", type=int, default=None,
                        help="payload per packet (default: what the MTU holds)")
    parser.add_argument("--zlib", action="store_true",
                        help="the ICRC with zlib's CRC-32 instead of ISA-L's")
    parser.add_argument("--idle-qps", type=int, default=0,
                        help="extra QP pairs between the two hosts that never carry data (a "
                             "collective opens QPs to every peer; a ring uses two of them)")
    parser.add_argument("--idle-turns", action="store_true",
                        help="also print the CPU of one loop turn with nothing to do (best of "
                             "7 x 2000 turns): what the QPs cost the loop while they are idle")
    parser.add_argument("--profile", nargs="?", const="-", default=None, metavar="FILE")
    args = parser.parse_args(argv)
    spec = FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2, mtu=args.mtu,
                      host_link_mbit=10_000, fabric_link_mbit=10_000)
    with tempfile.TemporaryDirectory(prefix="mrcprof-") as tmp:
        a, b = joined_endpoints(spec, tmp, args.max_payload)
        transfer(a, b, *prepare(a, b, 1 << 20, rkey=1), rkey=1)     # warm-up: templates, caches
        for i in range(args.idle_qps):
            qpn = 0x1000 + 2 * i
            a.create_qp(qpn, 2, qpn + 1, base_rtt_ns=2_000_000)
            b.create_qp(qpn + 1, 0, qpn, base_rtt_ns=2_000_000)
        if args.idle_turns:
            idle_turn_cost(a)
        sent0 = a.counters.sent
        size = args.size_mib << 20
        qpn, data = prepare(a, b, size, rkey=2)
        prof = None
        if args.profile:
            import cProfile
            prof = cProfile.Profile()
            prof.enable()
        cpu0 = time.process_time()
        turns = transfer(a, b, qpn, data, rkey=2)
        cpu = time.process_time() - cpu0
        if prof is not None:
            prof.disable()
        frames = a.counters.sent - sent0
        print(f"core: {compiled.status()}; payload {a.max_payload} B; {frames} data frames; "
              f"CPU {cpu * 1e3 / args.size_mib:.2f} ms/MiB, {cpu * 1e6 / frames:.1f} us/frame, "
              f"{cpu * 1e6 / turns:.1f} us/loop turn; {len(a.qps)} QPs per endpoint "
              f"(both endpoints, no sockets)")
        if prof is not None:
            import pstats
            if args.profile != "-":
                prof.dump_stats(args.profile)
            pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        a.close()
        b.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
