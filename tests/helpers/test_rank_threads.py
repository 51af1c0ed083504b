"""The thread harness of the collective tests must report a hang and a failing rank, or a broken
collective could pass by never finishing."""
import threading

import pytest

from tests.helpers.rank_threads import run_hub_world, run_ranks


def test_a_rank_that_does_not_finish_is_reported():
    release = threading.Event()
    try:
        with pytest.raises(AssertionError, match=r"rank\(s\) \[1\] hung"):
            run_ranks(2, lambda rank: rank == 1 and release.wait(5), timeout_s=0.05)
    finally:
        release.set()


def test_a_failing_rank_is_raised_and_does_not_leave_its_peer_waiting():
    def fn(comm):
        if comm.rank == 0:
            raise ValueError("rank 0 broke")
        handle = comm.irecv(0, 4)            # never sent: only the hub's failure ends the wait
        comm.wait([handle], timeout_s=10)

    with pytest.raises(ValueError, match="rank 0 broke"):
        run_hub_world(2, fn, timeout_s=5)


def test_results_come_back_in_rank_order():
    assert run_hub_world(3, lambda comm: comm.rank * 10) == [0, 10, 20]
