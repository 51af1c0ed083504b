"""Collectives over the in-memory transport: exact results for world sizes 2..8, lengths not
divisible by the world size, several QPs per peer."""

import numpy as np
import pytest

from tests.helpers.rank_threads import run_hub_world
from traffic.workload import collectives as C
from traffic.workload.comm import CommError, CommTimeout, InMemoryHub, create_communicator


def run_world(world, fn, qps=1, timeout=20):
    return run_hub_world(world, fn, comm=lambda hub, rank: hub.comm(rank, qps), timeout_s=timeout)


@pytest.mark.parametrize("world", range(2, 9))
@pytest.mark.parametrize("n", [1, 7, 64, 1001])
def test_allreduce_exact(world, n):
    inputs = [np.random.default_rng(r).integers(-50, 50, n).astype(np.float32) for r in range(world)]
    expect = np.sum(np.array(inputs, dtype=np.int64), axis=0).astype(np.float32)
    out = run_world(world, lambda c: C.allreduce(c, inputs[c.rank].copy(), timeout_s=5))
    for r in range(world):
        np.testing.assert_array_equal(out[r], expect)


@pytest.mark.parametrize("world", [2, 3, 5, 8])
@pytest.mark.parametrize("qps", [1, 2, 3])
@pytest.mark.parametrize("collective", C.COLLECTIVES)
def test_run_and_verify_every_collective(world, qps, collective):
    if collective == "bisection" and world % 2:
        pytest.skip("bisection pairs the two halves: even world sizes only")
    n = 4099  # prime: never divisible by the world size or the QP count
    victim = (1, 0) if world == 2 else ((world - 1, 1) if collective == "incast" else None)
    if collective == "incast" and world == 2:
        victim = None

    def body(c):
        return [C.run_and_verify(c, collective, n, it, qps=qps, timeout_s=5, target=0,
                                 victim=victim) for it in range(2)]

    for rank_results in run_world(world, body, qps=qps):
        for ok, msg in rank_results:
            assert ok, msg


def test_reduce_scatter_and_allgather_layout():
    world, n = 3, 10
    bounds = C.chunk_bounds(n, world)
    assert bounds == [(0, 4), (4, 7), (7, 10)]
    inputs = [np.arange(n, dtype=np.float32) * (r + 1) for r in range(world)]
    out = run_world(world, lambda c: C.reduce_scatter(c, inputs[c.rank].copy()).copy())
    for r, (a, b) in enumerate(bounds):
        np.testing.assert_array_equal(out[r], np.arange(n, dtype=np.float32)[a:b] * 6)


def test_alltoall_blocks_come_from_the_right_ranks():
    world, n = 4, 9
    out = run_world(world, lambda c: C.alltoall(c, np.full(n, c.rank + 1, np.float32) * 10 +
                                                np.arange(n, dtype=np.float32)))
    bounds = C.chunk_bounds(n, world)
    for r in range(world):
        a, b = bounds[r]
        expect = np.concatenate([np.arange(n, dtype=np.float32)[a:b] + (i + 1) * 10
                                 for i in range(world)])
        np.testing.assert_array_equal(out[r], expect)


def test_verification_catches_a_corrupted_result(monkeypatch):
    real = C.allreduce

    def corrupt(comm, buf, **kw):
        real(comm, buf, **kw)
        if comm.rank == 1:
            buf[5] += 1
        return buf

    monkeypatch.setattr(C, "allreduce", corrupt)
    results = run_world(3, lambda c: C.run_and_verify(c, "allreduce", 50, 0, timeout_s=5))
    assert results[0][0] and results[2][0]
    ok, msg = results[1]
    assert not ok and "index 5" in msg and "rank 1" in msg


def test_inputs_make_float32_sums_exact():
    world, n = 8, 1000
    exact = sum(C.make_input(r, n, 3, world).astype(np.int64) for r in range(world))
    assert np.array_equal(C.expected_sum(world, n, 3).astype(np.int64), exact)
    assert 0 < exact.min() and exact.max() <= 1 << 24   # float32 holds every integer up to 2^24


def test_wait_times_out_naming_the_pending_receive():
    hub = InMemoryHub(2)
    c = hub.comm(0)
    h = c.irecv(1, 16, tag=42)
    with pytest.raises(CommTimeout, match="tag=42"):
        c.wait([h], timeout_s=0.05)


def test_length_mismatch_is_an_error():
    hub = InMemoryHub(2)
    a, b = hub.comm(0), hub.comm(1)
    a.isend(1, b"12345678", tag=1)
    h = b.irecv(0, 4, tag=1)
    with pytest.raises(CommError, match="8 bytes, receiver expected 4"):
        b.wait([h], timeout_s=1)


def test_bad_arguments_are_rejected():
    c = InMemoryHub(2).comm(0, qps_per_peer=2)
    with pytest.raises(ValueError, match="bad peer"):
        c.isend(0, b"x")
    with pytest.raises(ValueError, match="qp 2"):
        c.isend(1, b"x", qp=2)
    with pytest.raises(ValueError, match="float32"):
        C.allreduce(c, np.zeros(4, np.float64))


def test_factory_names_unknown_and_missing_transports():
    with pytest.raises(ValueError, match="unknown transport 'udp'"):
        create_communicator("udp", 0, {})
    try:
        import traffic.workload.mrc_comm  # noqa: F401
    except ModuleNotFoundError:
        with pytest.raises(RuntimeError, match="traffic.workload.mrc_comm"):
            create_communicator("mrc", 0, {})
