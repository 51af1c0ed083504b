"""The two traffic patterns of the paper's ECN and victim experiments, over the in-memory
transport: bisection (first half of the ranks -> second half, nothing else) and the incast
whose victim hosts carry the victim flow and nothing else (victim_only)."""
import threading

import numpy as np
import pytest

from tests.helpers.rank_threads import run_hub_world
from traffic.workload import collectives as C


def run_world(world, fn, timeout=20):
    """fn(comm) on every rank in threads; returns (results, sent) where sent lists every
    isend as (src, dst, bytes)."""
    sent, lock = [], threading.Lock()

    def recording(hub, rank):
        comm = hub.comm(rank)
        real_isend = comm.isend

        def isend(peer, data, tag=0, *, qp=None):
            with lock:
                sent.append((rank, peer, np.asarray(data).nbytes))
            return real_isend(peer, data, tag, qp=qp)
        comm.isend = isend
        return comm

    return run_hub_world(world, fn, comm=recording, timeout_s=timeout), sent


def flows(sent, min_bytes=5):
    """{(src, dst): bytes} of the data messages (the incast's 4-byte releases left out)."""
    out = {}
    for src, dst, nbytes in sent:
        if nbytes >= min_bytes:
            out[(src, dst)] = out.get((src, dst), 0) + nbytes
    return out


def test_bisection_pairs_the_halves_and_nothing_else():
    n = 1000
    results, sent = run_world(4, lambda c: C.run_and_verify(c, "bisection", n, 3, timeout_s=5))
    assert all(ok for ok, _ in results), results
    assert flows(sent) == {(0, 2): 4 * n, (1, 3): 4 * n}


@pytest.mark.parametrize("world", [2, 6])
def test_bisection_receiver_holds_its_partners_input(world):
    n = 257
    got, _ = run_world(world, lambda c: C.run_collective(c, "bisection",
                                                          C.make_input(c.rank, n, 0, world), 0,
                                                          timeout_s=5))
    half = world // 2
    for r in range(half, world):
        np.testing.assert_array_equal(got[r]["received"], C.make_input(r - half, n, 0, world))
    assert all(got[r] == {} for r in range(half))


def test_bisection_refuses_an_odd_world():
    with pytest.raises(ValueError, match="even number of ranks"):
        C.bisection_peer(0, 3)


def test_bisection_bytes_moved_is_the_message_on_senders_only():
    assert [C.bytes_moved("bisection", 10, 4, r) for r in range(4)] == [40, 40, 0, 0]


def test_victim_only_incast_leaves_the_victim_hosts_out_of_the_incast():
    """8 ranks, target 0, victim 4 -> 1: the incast senders are 2, 3, 5, 6, 7 (5 of them); the
    victim flow carries 5 messages, so 4 and 1 exchange nothing else."""
    n, world = 300, 8
    results, sent = run_world(world, lambda c: C.run_and_verify(
        c, "incast", n, 2, timeout_s=5, target=0, victim=(4, 1), victim_only=True))
    assert all(ok for ok, _ in results), results
    size = 4 * n
    expect = {(s, 0): size for s in (2, 3, 5, 6, 7)}
    expect[(4, 1)] = 5 * size
    assert flows(sent) == expect


def test_without_victim_only_the_victim_hosts_also_send_to_the_target():
    n, world = 300, 8
    results, sent = run_world(world, lambda c: C.run_and_verify(
        c, "incast", n, 2, timeout_s=5, target=0, victim=(4, 1)))
    assert all(ok for ok, _ in results), results
    expect = {(s, 0): 4 * n for s in range(1, 8)}
    expect[(4, 1)] = 4 * n
    assert flows(sent) == expect


def test_victim_only_target_sum_and_victim_payload_are_exact():
    n, world = 101, 5
    got, _ = run_world(world, lambda c: C.run_collective(
        c, "incast", C.make_input(c.rank, n, 4, world), 4, timeout_s=5, target=0, victim=(3, 2),
        victim_only=True))
    senders = [1, 4]
    np.testing.assert_array_equal(got[0]["incast sum"],
                                  sum(C.make_input(r, n, 4, world).astype(np.int64)
                                      for r in senders).astype(np.float32))
    np.testing.assert_array_equal(got[2]["victim payload"],
                                  np.concatenate([C.make_input(3, n, 4, world)] * 2))


def test_victim_only_bytes_moved():
    # 8 ranks, target 0, victim 4 -> 1, 10 floats: 5 senders send 40 B each, the victim 5 x 40
    moved = [C.bytes_moved("incast", 10, 8, r, 0, (4, 1), True) for r in range(8)]
    assert moved == [0, 0, 40, 40, 200, 40, 40, 40]


def test_victim_only_refuses_the_target_as_victim_source():
    with pytest.raises(ValueError, match="victim source"):
        run_world(4, lambda c: C.incast(c, np.zeros(4, np.float32), target=0, victim=(0, 1),
                                         victim_only=True, timeout_s=2))


def test_bytes_received_is_what_the_peers_send_each_rank():
    # 10 floats = 40 B. Incast, 8 ranks, target 0, victim 4 -> 1 with victim_only: the target
    # takes 5 senders x 40 B, the victim's destination its 5 copies; a plain victim flow
    # carries one copy and every rank but the target sends to it (7 x 40 B).
    got = [C.bytes_received("incast", 10, 8, r, 0, (4, 1), True) for r in range(8)]
    assert got == [200, 200, 0, 0, 0, 0, 0, 0]
    got = [C.bytes_received("incast", 10, 8, r, 0, (4, 1), False) for r in range(8)]
    assert got == [280, 40, 0, 0, 0, 0, 0, 0]
    # bisection: the second half receives the message; a ring receives what it sends
    assert [C.bytes_received("bisection", 10, 4, r) for r in range(4)] == [0, 0, 40, 40]
    assert C.bytes_received("allreduce", 10, 4, 2) == 2 * 3 * 40 // 4 == 60
    assert C.bytes_received("alltoall", 10, 4, 1) == 3 * 40 // 4 == 30
