"""The worker process end to end over TCP on 127.0.0.1: events, verification, exit codes."""

from model.events import Event
from tests.helpers.workers import events, start_workers


def test_workers_run_verify_and_log(tmp_path):
    procs = start_workers(tmp_path, 3)
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    for r in range(3):
        evs = events(tmp_path / "logs" / f"worker-h{r}.jsonl")
        assert all(e["host"] == f"h{r}" and isinstance(e["t_ns"], int) for e in evs)
        its = [e for e in evs if e["event"] == Event.ITERATION]
        assert [e["iter"] for e in its] == list(range(5))
        assert all(e["verified"] and e["end_ns"] >= e["start_ns"] and e["transport"] == "tcp"
                   for e in its)
        goodput = [e for e in evs if e["event"] == Event.GOODPUT]
        assert goodput and goodput[-1]["rx_bytes"] >= 6 * 2 * 2 * 40_000 // 3 - 24
        assert [e["phase"] for e in evs if e["event"] == Event.PHASE][-1] == "done"


def test_bad_config_exits_4_with_a_clear_message(tmp_path):
    procs = start_workers(tmp_path, 2, collective="broadcastx")
    for p in procs:
        _, err = p.communicate(timeout=30)
        assert p.returncode == 4 and "collective must be one of" in err and "'broadcastx'" in err


def test_dead_peer_makes_the_worker_fail_not_hang(tmp_path):
    procs = start_workers(tmp_path, 2, iterations=100000, message_bytes=4000)
    import time
    time.sleep(1.5)
    procs[0].kill()
    _, err = procs[1].communicate(timeout=30)
    procs[0].communicate()
    assert procs[1].returncode == 2 and "TRANSPORT ERROR" in err


def test_a_qp_error_fails_the_collective_at_once_with_its_own_exit_code(tmp_path, monkeypatch):
    """A communicator whose QP went to error (QPFailed on the first wait): the worker logs the
    error with qp_error, exits EXIT_QP_ERROR (5) and runs no further iteration."""
    from traffic.workload import worker
    from traffic.workload.comm import Communicator, Handle, QPFailed
    from traffic.workload.worker_config import EXIT_QP_ERROR, WorkerConfig

    class QPInError(Communicator):
        waits = 0

        def isend(self, peer, data, tag=0, *, qp=None):
            return Handle("send", peer, tag, 0, 0)

        def irecv(self, peer, nbytes, tag=0, *, qp=None):
            return Handle("recv", peer, tag, nbytes, 0)

        def wait(self, handles, timeout_s=None):
            QPInError.waits += 1
            raise QPFailed("QP error: rank 0 (roce) QP 0 to rank 1: ACK timeout: PSN 7 "
                           "unacknowledged after 7 retries")

        def test(self, handle):
            return False

    monkeypatch.setattr(worker, "create_communicator",
                        lambda transport, rank, config: QPInError(rank, config.world_size))
    config = WorkerConfig(transport="roce", world_size=2, collective="sendrecv",
                          message_bytes=4, iterations=5, log_dir=str(tmp_path))
    assert worker.run(config, 0) == EXIT_QP_ERROR == 5
    assert QPInError.waits == 1
    errors = [e for e in events(tmp_path / "worker-h0.jsonl") if e["event"] == Event.ERROR]
    assert len(errors) == 1 and errors[0]["qp_error"] is True
    assert errors[0]["reason"].startswith("QP error: rank 0 (roce)")
    assert not [e for e in events(tmp_path / "worker-h0.jsonl") if e["event"] == Event.ITERATION]


def test_a_late_release_never_kills_an_exiting_worker(tmp_path):
    """The runner releases lingering workers (SIGUSR1) once every log says "done"; a worker
    that logged it may already be exiting. Signalled again and again from the moment it logged
    "done" until it is gone, every worker still exits 0 (not -10, SIGUSR1's default action)."""
    import signal
    import time

    procs = start_workers(tmp_path, 2)
    logs = [tmp_path / "logs" / f"worker-h{r}.jsonl" for r in range(2)]
    deadline = time.monotonic() + 60
    signalled = [0, 0]
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        for r, (p, log) in enumerate(zip(procs, logs)):
            if p.poll() is None and log.exists() and b'"phase":"done"' in log.read_bytes():
                try:
                    p.send_signal(signal.SIGUSR1)
                    signalled[r] += 1
                except ProcessLookupError:
                    pass
        time.sleep(0.0002)
    assert [p.wait(timeout=10) for p in procs] == [0, 0]
    assert all(signalled)


def test_the_worker_hands_the_gil_over_within_a_fraction_of_an_emulated_rtt(tmp_path, monkeypatch):
    """The collective runs with a GIL switch interval of at most 0.5 ms: the fidelity monitor
    allows half a base RTT of lateness, 3.4 ms of wall time for a 0.85 ms RTT at k = 8, and
    CPython's default interval (5 ms) alone would exceed it whenever the endpoint is busy."""
    import sys

    import json

    from traffic.workload import worker

    seen = []
    monkeypatch.setattr(worker, "run", lambda config, rank: seen.append(sys.getswitchinterval()) or 0)
    (tmp_path / "worker.json").write_text(json.dumps({
        "transport": "tcp", "world_size": 2, "hosts": ["h0", "h1"], "collective": "allreduce",
        "message_bytes": 4, "iterations": 1, "log_dir": str(tmp_path),
        "tcp": {"endpoints": [[["127.0.0.1", 20001]], [["127.0.0.1", 20002]]]}}))
    before = sys.getswitchinterval()
    try:
        assert worker.main(["--config", str(tmp_path / "worker.json"), "--rank", "0"]) == 0
    finally:
        sys.setswitchinterval(before)
    assert seen and seen[0] <= 0.0005 < 0.005 == before


def test_the_goodput_sampler_names_its_os_thread_for_the_scheduler(tmp_path):
    """The fabric's scheduling finds the sampler by its OS name (model/threads.py)."""
    import pathlib
    import threading

    from model.threads import SAMPLER_THREAD_NAME
    from traffic.workload.worker import GoodputSampler

    class Comm:
        def stats(self):
            return dict(rx_bytes=0, tx_bytes=0, rx_packets=0, tx_packets=0, retransmits=0)

    class Log:
        def emit(self, *args, **kw):
            pass

    sampler = GoodputSampler(Comm(), Log(), 0.01)
    sampler.start()
    try:
        for _ in range(100):
            if sampler.native_id is not None:
                comm = pathlib.Path(f"/proc/self/task/{sampler.native_id}/comm").read_text()
                if comm.strip() == SAMPLER_THREAD_NAME:
                    break
            threading.Event().wait(0.01)
        assert comm.strip() == SAMPLER_THREAD_NAME
    finally:
        sampler.stop()


def test_every_rank_stops_at_the_iteration_the_runner_names(tmp_path):
    """The runner's named end (model/traffic_end.py) written while the ranks run: each rank
    stops at that timed iteration, every result verified, exit 0, none waiting for a peer."""
    import time
    from model import traffic_end
    procs = start_workers(tmp_path, 3, iterations=100000, message_bytes=4000)
    logs = [tmp_path / "logs" / f"worker-h{r}.jsonl" for r in range(3)]

    def done(path):
        return sum(e["event"] == Event.ITERATION for e in events(path)) if path.exists() else 0
    deadline = time.monotonic() + 60
    while min(done(p) for p in logs) < 3:
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs)
        time.sleep(0.05)
    named = traffic_end.stop_iteration(max(done(p) for p in logs), after=20, iterations=100000)
    traffic_end.write(tmp_path / "logs", named, "test")
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    for path in logs:
        its = [e for e in events(path) if e["event"] == Event.ITERATION]
        assert [e["iter"] for e in its] == list(range(named)) and all(e["verified"] for e in its)
