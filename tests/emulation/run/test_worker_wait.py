"""How the runner waits for its workers (emulation/run/worker_wait.py), with fake processes: a QP
error stops the other workers at once instead of leaving them to time out, and workers that
linger after their last iteration are released once every rank is done."""
import signal
import time
from pathlib import Path

import pytest

from emulation.config import scenario as S
from emulation.run import runner, worker_wait
from tests.helpers.synthetic_run import TCP_RUN
from traffic.workload.worker_config import EXIT_QP_ERROR, EXIT_TRANSPORT


class FakeProc:
    """A worker that exits with `code` after `after_s`, or (code None) runs until signalled."""

    def __init__(self, code=None, after_s=0.0):
        self.code, self.end = code, time.monotonic() + after_s
        self.returncode = None
        self.signals = []

    def poll(self):
        if self.returncode is None and self.code is not None and time.monotonic() >= self.end:
            self.returncode = self.code
        return self.returncode

    def terminate(self):
        self.signals.append("TERM")
        self.returncode = -15

    def kill(self):
        self.signals.append("KILL")
        self.returncode = -9

    def send_signal(self, signum):
        """SIGUSR1 releases a lingering worker: it exits 0 (traffic/workload/worker.py)."""
        assert signum == signal.SIGUSR1
        self.signals.append("USR1")
        self.returncode = 0


class FakeTail:
    """Workers' logs: `finished[i]` once worker i logged phase done."""

    def __init__(self, finished=None):
        self.finished = finished

    def poll(self):
        pass

    def finished_ranks(self):
        return list(self.finished) if self.finished is not None else [False] * 64

    def min_done(self):
        return 0


class FakeScheduler:
    pending = ()

    def planned_iterations(self):
        return 30


def wait(procs, timeout_s=60, finished=None):
    scn = S.parse(TCP_RUN.replace("iterations = 30", f"iterations = 30\ntimeout_s = {timeout_s}"))
    state = {"error": None}
    start = time.monotonic()
    worker_wait.wait_workers(scn, "roce", procs, FakeTail(finished), FakeScheduler(), state)
    return time.monotonic() - start, state


def test_a_qp_error_stops_the_other_workers_at_once_and_is_no_run_error():
    procs = [FakeProc(EXIT_QP_ERROR, after_s=0.1), FakeProc(), FakeProc(), FakeProc()]
    took, state = wait(procs)
    assert took < 2.0                                   # not the collective's 60 s timeout
    assert [p.signals for p in procs] == [[], ["TERM"], ["TERM"], ["TERM"]]
    assert state["error"] is None
    assert state["exit_codes"] == {"h0": EXIT_QP_ERROR, "h1": -15, "h2": -15, "h3": -15}


def test_any_other_failure_still_leaves_the_peers_their_timeout():
    """A transport error that is not a QP's (a lost connection): the peers get the collective's
    timeout (here 1 s) + 5 s to fail by themselves; they exit on their own in 0.5 s."""
    procs = [FakeProc(EXIT_TRANSPORT, after_s=0.1), FakeProc(EXIT_TRANSPORT, after_s=0.6)]
    took, state = wait(procs, timeout_s=1)
    assert 0.5 <= took < 2.0
    assert [p.signals for p in procs] == [[], []] and state["error"] is None


def test_a_roce_worker_outwaits_the_qps_own_retries():
    """NCCL's RoCE (NCCL_IB_TIMEOUT 20, NCCL_IB_RETRY_CNT 7) retries one packet for
    8 x 4.096 us x 2^20 = 34.36 s before its QP fails; a worker that gave up after the
    collective's 20 s would call a recovering QP stuck."""
    scn = S.parse(TCP_RUN.replace("iterations = 30", "iterations = 30\ntimeout_s = 20"))
    assert worker_wait.wait_timeout_s(scn, "roce") == pytest.approx(8 * 4.096e-6 * 2**20
                                                               + worker_wait.WAIT_SLACK_S)
    assert worker_wait.wait_timeout_s(scn, "tcp") == 20
    assert worker_wait.wait_timeout_s(scn, "mrc") == 20
    # a short RoCE budget (4 x 67 ms) leaves the collective's limit in force
    short = S.parse(TCP_RUN.replace("iterations = 30", "iterations = 30\ntimeout_s = 20")
                    + "[mrc.qp]\nroce_ack_timeout = 14\nroce_retry_limit = 3\n")
    assert worker_wait.wait_timeout_s(short, "roce") == 20
    # one host's longer timeout counts: 2 x 4.096 us x 2^22 = 34.36 s
    one_host = S.parse(TCP_RUN.replace("iterations = 30", "iterations = 30\ntimeout_s = 20")
                       + "[mrc.qp]\nroce_retry_limit = 1\nroce_ack_timeout = 14\n"
                       + "[mrc.host_qp.h1]\nroce_ack_timeout = 22\n")
    assert worker_wait.wait_timeout_s(one_host, "roce") == pytest.approx(
        2 * 4.096e-6 * 2**22 + worker_wait.WAIT_SLACK_S)


def test_lingering_workers_are_released_once_every_rank_is_done():
    """Two workers done and lingering (answering peers), one still in its last iteration: no
    release until that one is done too; then every live one is told to close (SIGUSR1), and a
    worker that already exited is not signalled."""
    procs = [FakeProc(0, after_s=0.0), FakeProc(), FakeProc()]
    finished = [True, True, False]
    tail = FakeTail(finished)
    scn = S.parse(TCP_RUN)
    state = {"error": None}

    def finish_last():
        time.sleep(0.4)
        finished[2] = True

    import threading
    threading.Thread(target=finish_last).start()
    start = time.monotonic()
    worker_wait.wait_workers(scn, "mrc", procs, tail, FakeScheduler(), state)
    took = time.monotonic() - start
    assert 0.35 <= took < 2.0                            # released when the last one finished
    assert [p.signals for p in procs] == [[], ["USR1"], ["USR1"]]
    assert state["exit_codes"] == {"h0": 0, "h1": 0, "h2": 0} and state["error"] is None


def test_a_qp_error_releases_the_workers_already_done_and_stops_the_rest():
    procs = [FakeProc(EXIT_QP_ERROR, after_s=0.1), FakeProc(), FakeProc()]
    took, state = wait(procs, finished=[False, True, False])
    assert took < 2.0
    assert [p.signals for p in procs] == [[], ["USR1"], ["TERM"]]
    assert state["exit_codes"] == {"h0": EXIT_QP_ERROR, "h1": 0, "h2": -15}


def test_the_worker_config_lingers_one_wait_unless_the_scenario_bounds_it():
    scn = S.parse(TCP_RUN.replace("iterations = 30", "iterations = 30\ntimeout_s = 20"))
    assert runner.worker_config(scn, "mrc", Path("/tmp")).mrc.linger_s == 20
    bounded = S.parse(TCP_RUN.replace("iterations = 30", "iterations = 30\ntimeout_s = 20")
                      + "[mrc]\nlinger_s = 0.5\n")
    assert runner.worker_config(bounded, "mrc", Path("/tmp")).mrc.linger_s == 0.5
