"""Verification of a collective's result (traffic/workload/collectives.py: expected_results and verify)
catches one wrong element wherever it sits: the first, the last, and either side of every
chunk and segment boundary, where an off-by-one in the ring's chunking or a lost last packet
of a segment would put it. A lost last packet must never pass: the element it carried is
either missing (a short result), left as the buffer held it (zero) or off by a little."""
import numpy as np
import pytest

from tests.helpers.rank_threads import run_hub_world
from traffic.workload import collectives as C
from traffic.workload.comm import InMemoryComm

WORLD, QPS = 4, 2
N = WORLD * QPS * 5 + 3       # 43: chunks of 11, 11, 11, 10, each split in 2 segments unevenly
ITERATION = 5
VICTIM = (3, 2)               # incast: a victim flow 3 -> 2 besides the senders


def boundaries(length: int) -> list[int]:
    """First and last index of the result, and either side of each chunk (world) and segment
    (qps per chunk) boundary: every place the ring's split can end a packet."""
    idx = {0, length - 1}
    for a, b in C.chunk_bounds(length, WORLD):
        for sa, sb in C.chunk_bounds(b - a, QPS):
            idx.update({a + sa, a + sb - 1, min(a + sb, length - 1)})
    for a, b in C.chunk_bounds(length, QPS):
        idx.update({a, b - 1})
    return sorted(i for i in idx if 0 <= i < length)


def correct_results(collective):
    """Every rank's (results, expected) of one real in-memory run."""
    victim = VICTIM if collective == "incast" else None

    def body(comm):
        expected = C.expected_results(collective, comm.rank, WORLD, N, ITERATION, victim=victim)
        buf = C.make_input(comm.rank, N, ITERATION, WORLD)
        results = C.run_collective(comm, collective, buf, ITERATION, qps=QPS, timeout_s=5,
                                   victim=victim)
        return results, expected

    return run_hub_world(WORLD, body, comm=lambda hub, rank: hub.comm(rank, QPS))


@pytest.mark.parametrize("collective", C.COLLECTIVES)
def test_one_wrong_element_fails_at_every_boundary_and_a_short_or_absent_result_fails(collective):
    checked = 0
    for rank, (results, expected) in enumerate(correct_results(collective)):
        assert C.verify(collective, rank, ITERATION, results, expected) == (True, "ok")
        for what, got in results.items():
            for i in boundaries(len(got)):
                for wrong in (0.0, float(got[i]) + 1.0, float(got[i]) - 1.0):
                    bad = {**results, what: got.copy()}
                    bad[what][i] = wrong
                    ok, msg = C.verify(collective, rank, ITERATION, bad, expected)
                    assert not ok, f"{collective} rank {rank} {what}[{i}] = {wrong} verified"
                    assert f"first at index {i}:" in msg and "1 of" in msg, msg
                    checked += 1
            short = {**results, what: got[:-1]}
            assert not C.verify(collective, rank, ITERATION, short, expected)[0]
            absent = {k: v for k, v in results.items() if k != what}
            ok, msg = C.verify(collective, rank, ITERATION, absent, expected)
            assert not ok and what in msg
    assert checked > 0          # every collective leaves some rank a result to check


class LastElementLost(InMemoryComm):
    """Rank 1's every message arrives with its last element never written (as zero): what a
    receiver holds when the last packet of a segment is lost and the wait still returned."""

    def isend(self, peer, data, tag=0, *, qp=None):
        arr = np.array(data, dtype=C.DTYPE, copy=True)
        if self.rank == 1 and len(arr):
            arr[-1] = 0.0
        return super().isend(peer, arr, tag, qp=qp)


@pytest.mark.parametrize("collective", C.COLLECTIVES)
def test_a_lost_last_element_of_every_segment_never_verifies(collective):
    victim = VICTIM if collective == "incast" else None
    verdicts = run_hub_world(
        WORLD, lambda comm: C.run_and_verify(comm, collective, N, ITERATION, qps=QPS,
                                             timeout_s=5, victim=victim),
        comm=lambda hub, rank: LastElementLost(hub, rank, QPS))
    failed = [msg for ok, msg in verdicts if not ok]
    assert failed, f"{collective}: rank 1's lost last elements verified on every rank"
    assert all("mismatch" in msg for msg in failed)
