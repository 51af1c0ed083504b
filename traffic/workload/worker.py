"""One collective worker per host: `python -m traffic.workload.worker --config FILE --rank N`.

Runs inside the host's network namespace (the runner starts it with fab.popen_in_host). Builds
the communicator of the configured transport, runs warm-up then timed iterations of the
collective (fewer when the runner names an earlier end: model/traffic_end.py) on float32
buffers with real reduction, checks every result against the exact expected value, and
writes JSONL events ({"t_ns", "host", "event", ...}), one flushed line at a time, so a crashed
or interrupted run keeps everything up to the failure.

Config: worker.json, one file for all ranks (the rank comes from --rank); its keys and their
meaning are the fields of traffic/worker_config.WorkerConfig.
Events: phase {phase: connecting|connected|warmup_done|done}, iteration {iter, start_ns, end_ns
(the collective alone, not input set-up or verification), bytes (payload this rank sent),
nccl_size_bytes (NCCL's S, algbw = S / t), verified, wrong (elements that failed
verification)}, goodput, counters, error {reason, qp_error}. Exit codes
(traffic/workload/worker_config.py): 0 ok, 2 transport error, 3 result mismatch, 4 bad config,
5 a QP in error (the collective failed at once, as NCCL's does on an error completion).
"""
from __future__ import annotations

import argparse
import ctypes
import signal
import sys
import threading
import time
from pathlib import Path

from model import traffic_end
from model.events import Event, Phase
from model.threads import SAMPLER_THREAD_NAME, THREAD_NAME_MAX
from traffic.workload import collectives
from traffic.workload.comm import RELEASED, CommError, QPFailed, create_communicator
from traffic.nic.endpoint_support import EventLog
from traffic.workload.iteration_inputs import InputPrefetcher
from traffic.workload.worker_config import (EXIT_CONFIG, EXIT_MISMATCH, EXIT_OK, EXIT_QP_ERROR,
                                            EXIT_TRANSPORT, WorkerConfig, WorkerConfigError)

# The worker's threads (the collective and its endpoint, the goodput sampler, the input
# prefetcher) share one GIL, and a thread that waits for it gets it only after the holder's
# switch interval. CPython's 5 ms default is more wall time than the fidelity monitor's half
# base RTT at the time scales runs use (an emulated 0.85 ms RTT at k = 8 allows 3.4 ms), so a
# busy endpoint would hold the sampler, and the prefetcher the endpoint, past that bound. A
# waiting thread is handed the GIL within this much wall time instead; it costs a switch only
# while a second thread is runnable.
GIL_SWITCH_INTERVAL_S = 0.0005
PR_SET_NAME = 15                   # prctl(2)


def name_this_thread(name: str) -> bool:
    """Give the calling thread its OS name (Linux prctl PR_SET_NAME; CPython 3.11 names only
    its own Thread objects); False where it cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_NAME, name.encode()[:THREAD_NAME_MAX], 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


class GoodputSampler(threading.Thread):
    """Cumulative counters every interval (goodput events every goodput_interval_ms, 10 ms by default)."""

    def __init__(self, comm, log: EventLog, interval_s: float):
        super().__init__(daemon=True, name="goodput")
        self.comm, self.log, self.interval_s = comm, log, interval_s
        self.stop_event = threading.Event()

    def sample(self) -> None:
        s = self.comm.stats()
        self.log.emit(Event.GOODPUT, rx_bytes=s["rx_bytes"], tx_bytes=s["tx_bytes"],
                       rx_packets=s["rx_packets"], tx_packets=s["tx_packets"],
                       retransmits=s["retransmits"])

    def run(self) -> None:
        name_this_thread(SAMPLER_THREAD_NAME)
        next_t = time.monotonic()
        while not self.stop_event.is_set():
            self.sample()
            next_t += self.interval_s
            self.stop_event.wait(max(0.0, next_t - time.monotonic()))

    def stop(self) -> None:
        self.stop_event.set()
        self.join(2)
        self.sample()


def load_config(path: str, rank: int) -> WorkerConfig:
    """worker.json, validated, for `rank` (a WorkerConfigError names what is wrong)."""
    config = WorkerConfig.load(path)
    config.host(rank)
    return config


def run(config: WorkerConfig, rank: int) -> int:
    host = config.host(rank)
    log = EventLog(Path(config.log_dir) / f"worker-{host}.jsonl", host)
    transport = config.transport
    kind = config.collective
    n = config.message_bytes // 4
    iterations, warmup = config.iterations, config.warmup
    qps = config.qps_per_peer
    timeout_s = config.timeout_s
    victim = tuple(config.victim) if config.victim is not None else None
    world = config.world_size
    target = config.incast_target
    victim_only = config.victim_only
    kw = dict(qps=qps, timeout_s=timeout_s, target=target, victim=victim, victim_only=victim_only)
    sent_per_iter = collectives.bytes_moved(kind, n, world, rank, target, victim, victim_only)
    nccl_size = collectives.nccl_size_bytes(kind, n)
    comm = sampler = prefetch = None

    def inputs(it: int):
        return (collectives.make_input(rank, n, it, world),
                collectives.expected_results(kind, rank, world, n, it, target=target,
                                             victim=victim, victim_only=victim_only))
    try:
        log.emit(Event.PHASE, phase=Phase.CONNECTING, transport=transport, rank=rank)
        comm = create_communicator(transport, rank, config)
        log.emit(Event.PHASE, phase=Phase.CONNECTED)
        sampler = GoodputSampler(comm, log, config.goodput_interval_ms / 1000)
        sampler.start()
        # Inputs and expected results are computed outside the timed span (with W ranks the
        # expected sum hashes W buffers), one iteration ahead in a thread
        # (traffic/workload/iteration_inputs.py), not between iterations.
        prefetch = InputPrefetcher(inputs, warmup, warmup + iterations)
        for i in range(warmup):
            ok, msg = collectives.run_and_verify(comm, kind, n, i, **kw)
            if not ok:
                return _mismatch(log, f"warm-up: {msg}")
        log.emit(Event.PHASE, phase=Phase.WARMUP_DONE)
        named_end = traffic_end.StopWatch(config.log_dir)
        for i in range(iterations):
            if named_end.stops_at(i):
                break
            it = warmup + i
            buf, expected = prefetch.get(it)
            start = time.monotonic_ns()
            results = collectives.run_collective(comm, kind, buf, it, **kw)
            end = time.monotonic_ns()
            ok, msg = collectives.verify(kind, rank, it, results, expected)
            wrong = 0 if ok else collectives.wrong_elements(results, expected)
            # bytes: payload this rank sent; nccl_size_bytes: NCCL's S (algbw = S / t);
            # wrong: elements that failed verification (nccl-tests' #wrong)
            log.emit(Event.ITERATION, collective=kind, transport=transport, iter=i, start_ns=start,
                      end_ns=end, bytes=sent_per_iter, nccl_size_bytes=nccl_size, verified=ok,
                      wrong=wrong)
            if not ok:
                return _mismatch(log, msg)
        sampler.stop()
        log.emit(Event.COUNTERS, **comm.stats())
        log.emit(Event.PHASE, phase=Phase.DONE)
        return EXIT_OK
    except QPFailed as exc:
        log.emit(Event.ERROR, reason=str(exc), qp_error=True)
        print(f"[{host}] {transport}: the collective failed: {exc}", file=sys.stderr, flush=True)
        return EXIT_QP_ERROR
    except traffic_end.TrafficEndError as exc:
        log.emit(Event.ERROR, reason=str(exc))
        print(f"[{host}] {exc}", file=sys.stderr, flush=True)
        return EXIT_CONFIG
    except CommError as exc:
        log.emit(Event.ERROR, reason=str(exc))
        print(f"[{host}] TRANSPORT ERROR ({transport}): {exc}", file=sys.stderr, flush=True)
        return EXIT_TRANSPORT
    finally:
        if sampler is not None and sampler.is_alive():
            sampler.stop()
        if prefetch is not None:
            prefetch.close()
        if comm is not None:
            comm.close()
        log.close()


def _mismatch(log: EventLog, msg: str) -> int:
    log.emit(Event.ERROR, reason=f"result mismatch: {msg}")
    print(f"\n{'!' * 72}\n[{log.host}] COLLECTIVE RESULT MISMATCH: {msg}\n{'!' * 72}",
          file=sys.stderr, flush=True)
    return EXIT_MISMATCH


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m traffic.workload.worker", description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True, help="worker config JSON")
    parser.add_argument("--rank", required=True, type=int)
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config, args.rank)
    except WorkerConfigError as exc:
        print(f"worker: bad config: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    # SIGTERM from the runner: exit through the finally blocks (logs closed, sockets closed)
    signal.signal(signal.SIGTERM, lambda signum, frame: (RELEASED.set(), sys.exit(128 + signum)))
    # SIGUSR1 from the runner: every rank is done, the lingering endpoint may close
    signal.signal(signal.SIGUSR1, lambda signum, frame: RELEASED.set())
    try:
        return run(config, args.rank)
    finally:
        # A release that comes late (the runner saw "done" logged, not yet the exit) must not
        # kill the exiting process: Python gives a signal it handled back its default action,
        # for SIGUSR1 termination, while it shuts down, but leaves an ignored one ignored.
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)


if __name__ == "__main__":
    sys.exit(main())
