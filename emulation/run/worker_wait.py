"""Waiting for a run's workers: how long one wait() may last (wait_timeout_s), and the runner's
wait for every worker (wait_workers): a QP error stops the others at once, and workers that
keep answering their peers after their last iteration are released once every rank is done.

Apart from emulation/run/runner.py because it is the one place that decides when a worker's
life ends, beside the runner's setting up and summing up of a run.
"""
from __future__ import annotations

import dataclasses
import signal
import time

from emulation.config.scenario import Scenario
from emulation.config.scenario_faults import longest_run_s
from emulation.run.run_progress import Progress
from traffic.core.qp_config import MRCConfig
from traffic.workload.worker_config import EXIT_QP_ERROR, MRCSettings


def wait_timeout_s(scn: Scenario, transport: str) -> float:
    """A worker's limit on one wait(), in the wall world of `scn`: the collective's timeout_s,
    but never shorter than the time the transport itself keeps retrying one packet before its
    QP fails (RoCE: retry_cnt + 1 ACK timeouts, 8 x 4.29 s as NCCL sets it). A transport still
    recovering by its own rules is not stuck; its QP error, not the worker's patience, ends it."""
    wait = float(scn.collective.timeout_s)
    if transport != "roce":
        return wait
    mrc = MRCSettings.from_dict(scn.mrc or {})
    roce_keys = ("roce_ack_timeout", "roce_ack_timeout_ns", "roce_retry_limit")
    for table in [mrc.qp, *mrc.host_qp.values()]:
        merged = {**mrc.qp, **table}
        qp = MRCConfig(**{k: merged[k] for k in roce_keys if k in merged})
        wait = max(wait, (qp.roce_retry_limit + 1) * qp.roce_ack_interval_ns / 1e9 + WAIT_SLACK_S)
    return wait


# Beyond the transport's own give-up time, how long a worker still waits: the QP error's
# completion reaches the worker within one endpoint poll, well inside this.
WAIT_SLACK_S = 5.0


# After a QP error stops the other workers (SIGTERM: they close their logs and sockets), how
# long they get before they are killed.
STOP_GRACE_S = 5.0


def wait_workers(scn, transport, procs, tail, scheduler, state, send_signal=None) -> None:
    """Wait for every worker. A worker that exits on a QP error (EXIT_QP_ERROR) failed the
    job as an RDMA job fails on an error completion: the others are stopped at once rather
    than left to time out waiting for it (the collective's timeout_s); that is the transport's
    outcome (summary "transport_failure"), not an error of the run. Once every worker is done
    or gone, the ones still answering their peers (traffic/workload/comm.py RELEASED) are
    told to close (SIGUSR1); a worker already done is released, never stopped.
    send_signal(proc, signum): how a worker is signalled (the fabric's: a worker on another
    server through its tie); by default proc.send_signal."""
    send_signal = send_signal or (lambda proc, signum: proc.send_signal(signum))
    coll = scn.collective
    wait_s = wait_timeout_s(scn, transport)
    deadline = time.monotonic() + longest_run_s(dataclasses.replace(coll, timeout_s=wait_s))
    progress = Progress(transport, coll.iterations)
    total_faults = len(scn.faults)
    first_failure = stopped = released = None
    try:
        while True:
            tail.poll()
            codes, finished = [p.poll() for p in procs], tail.finished_ranks()
            progress.total = scheduler.planned_iterations()
            progress.update(tail.min_done(), total_faults - len(scheduler.pending), total_faults)
            if all(c is not None for c in codes):
                break
            now = time.monotonic()
            if first_failure is None and any(c not in (None, 0) for c in codes):
                first_failure = now
            if not released and all(c is not None or f for c, f in zip(codes, finished)):
                released = True
                for p in procs:
                    if p.poll() is None:
                        send_signal(p, signal.SIGUSR1)
            if stopped is None and EXIT_QP_ERROR in codes:
                stopped = now
                for p, done in zip(procs, finished):
                    if p.poll() is None:
                        if done:
                            send_signal(p, signal.SIGUSR1)
                        else:
                            p.terminate()
            # a failed worker makes its peers fail by timeout; do not wait longer than that
            grace = STOP_GRACE_S if stopped else wait_s + 5
            if now > deadline or (first_failure and now - first_failure > grace):
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                if not stopped:
                    state["error"] = "workers killed: " + (
                        "overall deadline passed" if now > deadline
                        else "peers did not exit after a worker failed")
            time.sleep(0.05)
    finally:
        progress.finish()
    tail.poll()
    state["exit_codes"] = {f"h{i}": p.returncode for i, p in enumerate(procs)}
