"""traffic/workload/mrc_comm.py over in-memory wires: 4 ranks, each with its own Endpoint (real codec,
reliability, loop) in its own thread, joined by a fake switch that delivers frames by their
destination address and can black-hole one (plane, spine) path between the groups."""
import pytest

from model.events import Event
from model.topology import FabricSpec, ev_plane, ev_spine
from tests.helpers.endpoint_fakes import FakeSwitch
from tests.helpers.rank_threads import run_ranks
from traffic.workload import collectives
from traffic.workload.comm import CommError
from traffic.workload.mrc_comm import _SendRing, _Fragment, create
from traffic.workload.worker_config import WorkerConfig

SPEC = FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2)


def run_world(tmp_path, transport, world, body, qps=2, blackhole=None, extra=None):
    switch = FakeSwitch(SPEC)
    switch.blackhole = blackhole
    config = {"transport": transport, "collective": "sendrecv", "message_bytes": 4,
              "iterations": 1,
              "world_size": world, "hosts": [f"h{i}" for i in range(world)], "qps_per_peer": qps,
              "fabric": SPEC.to_dict(), "routing": "srv6", "log_dir": str(tmp_path),
              # threads share one GIL: timers from a measured ~0.1 ms RTT would fire on
              # scheduling delays alone, hence a fixed base RTT
              "mrc": {"endpoint": {"port_rate_mbit": 400.0, "seed": 7, "base_rtt_ns": 3_000_000},
                      "ring_bytes": 1 << 20, "fragment_bytes": 64 << 10, "connect_timeout_s": 20,
                      **(extra or {})}}
    config = WorkerConfig.from_dict(config)
    results, errors = {}, []

    def rank_main(rank):
        ports = {p: switch.port(rank, p) for p in range(SPEC.planes)}
        comm = None
        try:
            comm = create(transport, rank, config, ports=ports)
            results[rank] = body(comm)
        except Exception as e:  # noqa: BLE001 - reported by the test thread
            errors.append((rank, e))
        finally:
            if comm is not None:
                comm.close()

    run_ranks(world, rank_main, 120, errors)
    return results, errors, switch


@pytest.mark.parametrize("transport", ["mrc", "roce"])
def test_ring_allreduce_four_ranks_verified(tmp_path, transport):
    n = 20_000

    def body(comm):
        return [collectives.run_and_verify(comm, "allreduce", n, it, qps=2, timeout_s=30)
                for it in range(2)]

    results, errors, _ = run_world(tmp_path, transport, 4, body)
    assert not errors, errors
    assert all(ok for r in results.values() for ok, _ in r), results
    assert len(results) == 4


def test_ring_allreduce_with_a_black_holed_path_retires_its_evs(tmp_path):
    n = 20_000

    def body(comm):
        out = [collectives.run_and_verify(comm, "allreduce", n, it, qps=2, timeout_s=60)
               for it in range(1)]
        return out, comm.stats()

    results, errors, switch = run_world(tmp_path, "mrc", 4, body, blackhole=(0, 1))
    assert not errors, errors
    assert all(ok for r, _ in results.values() for ok, _ in r)
    assert switch.dropped > 0
    import json
    bad = []
    for h in range(4):
        for line in (tmp_path / f"endpoint-h{h}.jsonl").read_text().splitlines():
            e = json.loads(line)
            if e["event"] == Event.EV_STATE and e["new"] == "ASSUMED_BAD":
                bad.append(e)
    assert any(ev_plane(e["ev"]) == 0 and ev_spine(e["ev"]) == 1 for e in bad)
    assert sum(s["retransmits"] for _, s in results.values()) > 0


def test_messages_larger_than_the_ring_and_unexpected_ones_arrive_intact(tmp_path):
    import numpy as np
    big = np.arange(700_000, dtype=np.float32)      # 2.8 MB > 1 MiB ring: fragmented + waits

    def body(comm):
        peer = 1 - comm.rank
        if comm.rank == 0:
            hs = [comm.isend(peer, big, tag=5), comm.isend(peer, b"", tag=6),
                  comm.isend(peer, b"abc", tag=7)]
            comm.wait(hs, 60)
            r = comm.irecv(peer, 4, tag=9)
            comm.wait([r], 30)
            return bytes(r.data)
        r7 = comm.irecv(peer, 3, tag=7)
        comm.wait([r7], 60)                          # tags 5 and 6 arrive unexpected first
        r5, r6 = comm.irecv(peer, big.nbytes, tag=5), comm.irecv(peer, 0, tag=6)
        comm.wait([r5, r6], 30)
        comm.wait([comm.isend(peer, b"done", tag=9)], 30)
        assert bytes(r7.data) == b"abc" and len(r6.data) == 0
        return np.frombuffer(r5.data, dtype=np.float32)

    results, errors, _ = run_world(tmp_path, "mrc", 2, body, qps=1)
    assert not errors, errors
    assert results[0] == b"done"
    assert np.array_equal(results[1], big)


def test_length_mismatch_is_a_comm_error(tmp_path):
    def body(comm):
        peer = 1 - comm.rank
        if comm.rank == 0:
            comm.wait([comm.isend(peer, b"12345678", tag=1)], 30)
            return None
        r = comm.irecv(peer, 4, tag=1)
        with pytest.raises(CommError, match="expected 4"):
            comm.wait([r], 30)
        return "raised"

    results, errors, _ = run_world(tmp_path, "mrc", 2, body, qps=1)
    assert not errors, errors
    assert results[1] == "raised"


def test_send_ring_never_overlaps_outstanding_fragments():
    ring = _SendRing(100)
    a, b, c = _Fragment(None, None, 40), _Fragment(None, None, 40), _Fragment(None, None, 40)
    for f in (a, b):
        assert ring.fits(f.size)
        ring.take(f)
    assert (a.offset, b.offset) == (0, 40)
    assert not ring.fits(c.size)               # wraps to 0, where a still is
    a.done = True
    ring.release_done()
    assert ring.fits(c.size)
    ring.take(c)
    assert c.offset == 0


def test_a_roce_qp_in_error_fails_the_wait_at_once(tmp_path):
    """Rank 1 closes once rank 0 is connected; rank 0's RoCE QP (ACK timeout 20 ms,
    retry_cnt 1) gets no ACK and errors at its 2nd timeout, 40 ms after the send: wait() raises
    QPFailed then, not after its own 30 s timeout."""
    import threading
    import time

    from traffic.workload.comm import QPFailed
    connected, gone = threading.Event(), threading.Event()

    def body(comm):
        if comm.rank == 1:
            while not connected.is_set():           # answer rank 0's READY probes until then
                comm.ep.run_once(0.005)
            comm.close()                            # idempotent: the runner closes it again
            gone.set()
            return None
        connected.set()
        # rank 1 must be gone before the send, however slowly a loaded machine runs its thread;
        # meanwhile rank 0 keeps answering, or rank 1's own set-up may wait on it for ever
        deadline = time.monotonic() + 30
        while not gone.is_set():
            assert time.monotonic() < deadline, "rank 1 did not close within 30 s"
            comm.ep.run_once(0.005)
        start = time.monotonic()
        with pytest.raises(QPFailed, match=r"QP error: rank 0 \(roce\).*after 1 retries"):
            comm.wait([comm.isend(1, b"1234", tag=1)], 30)
        return time.monotonic() - start

    results, errors, _ = run_world(tmp_path, "roce", 2, body, qps=1, extra={
        "linger_s": 0.0, "qp": {"roce_ack_timeout_ns": 20_000_000, "roce_retry_limit": 1}})
    assert not errors, errors
    assert 0.04 <= results[0] < 5.0


def test_close_lingers_until_the_runner_releases_every_rank(tmp_path):
    """After its last iteration a rank keeps answering its peers (a peer whose last ACKs were
    lost retransmits) until the runner says every rank is done (comm.RELEASED, the worker's
    SIGUSR1), not merely for a fixed moment: with a 30 s bound and the release 0.5 s after the
    ranks finished, the ranks close after the release and long before the bound."""
    import threading
    import time

    from traffic.workload.comm import RELEASED

    timer = threading.Timer(0.5, RELEASED.set)
    try:
        start = time.monotonic()
        timer.start()
        results, errors, _ = run_world(tmp_path, "mrc", 2, lambda comm: True,
                                       extra={"linger_s": 30.0})
        took = time.monotonic() - start
    finally:
        timer.cancel()
        RELEASED.clear()
    assert not errors and results == {0: True, 1: True}
    assert 0.5 <= took < 10.0
