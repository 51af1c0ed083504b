"""The runner's summary from worker logs and applied faults (no fabric needed)."""
import json

from emulation.run.run_progress import LogTail
from emulation.run.run_summary import summarize
from emulation.run.runner import worker_config
from model.events import Event, Phase
from tests.helpers.scenario_texts import link_fault
from tests.helpers.synthetic_run import MS, TCP_RUN, parse_run, write_worker_logs

T0 = 10_000 * MS
TEXT = TCP_RUN + link_fault("link_down", "t0p0g0", "t1p0s0", at_s=1.0)


def write_logs(tdir, iterations=30):
    """4 hosts, 1 MB/s each for 3 s from T0 (however many iterations), none during [1000,
    1400) ms."""
    write_worker_logs(tdir, T0, iterations=iterations, deliver_ms=3000)
    return T0


def test_summary_reports_iterations_faults_and_recovery(tmp_path):
    scn = parse_run(TEXT)
    t0 = write_logs(tmp_path)
    applied = [{"entry": 0, "when": "at_s=1.0", "t_ns": t0 + 1000 * MS, "ok": True,
                "command": scn.faults[0].commands[0]}]
    (tmp_path / "faults-applied.jsonl").write_text(json.dumps(applied[0]) + "\n")
    (tmp_path / "worker.json").write_text(json.dumps(worker_config(scn, "tcp", tmp_path).to_dict()))
    state = {"partial": False, "exit_codes": {f"h{i}": 0 for i in range(4)}, "applied": applied}
    s = summarize(scn, "tcp", tmp_path, state)
    assert s["verified"] is True and s["iterations_completed"] == 30
    assert len(s["iteration_times_ms"]) == 30 and abs(s["iteration_times_ms"][0] - 100) < 0.01
    assert s["fault_times_ns"] == [t0 + 1000 * MS]
    assert abs(s["baseline_goodput_bps"] - 4e6) < 1e4
    # the ring all-reduce crosses group 0's four uplinks once each way: with one down, the
    # three left carry more than the hosts' NIC ports, the collective's tightest cut, so the
    # whole rate is still allowed (analysis/recovery.py)
    assert s["faults"][0]["capacity_fraction"] == 1.0
    # back at 1400 ms, whose sample credits the 10 ms before it: a 100 ms window from 1380 ms
    # holds the samples 1390 .. 1480, 9 of 10 delivering = 90% of the baseline: 380 ms
    assert 375 <= s["recovery_ms"][0] <= 385
    assert (tmp_path / "goodput.csv").exists() and (tmp_path / "iterations.csv").exists()


def test_partial_or_failed_runs_are_not_verified(tmp_path):
    scn = parse_run(TEXT)
    write_logs(tmp_path, iterations=12)
    s = summarize(scn, "tcp", tmp_path, {"partial": True, "exit_codes": {}, "applied": []})
    assert s["verified"] is False and s["partial"] is True and s["iterations_completed"] == 12
    write_logs(tmp_path)
    s = summarize(scn, "tcp", tmp_path, {"partial": False, "applied": [],
                                         "exit_codes": {"h0": 3, "h1": 0, "h2": 0, "h3": 0}})
    assert s["verified"] is False


def test_log_tail_reads_only_complete_lines(tmp_path):
    path = tmp_path / "worker-h0.jsonl"
    tail = LogTail([path])
    tail.poll()
    assert tail.max_done() == 0 and tail.timed_start_ns is None
    with open(path, "w") as f:
        f.write(json.dumps({"t_ns": 5, "event": Event.PHASE, "phase": Phase.WARMUP_DONE}) + "\n")
        f.write('{"t_ns": 7, "event": "iteration", "iter": 0')
        f.flush()
        tail.poll()
        assert tail.timed_start_ns == 5 and tail.max_done() == 0
        f.write(', "verified": true}\n')
    tail.poll()
    assert tail.max_done() == 1


def test_a_qp_error_is_the_transports_outcome_with_where_and_when(tmp_path):
    """h1's worker logged a QP error 1.25 s after the timed iterations started (12 of 30 done):
    the summary names the failure, its host and its time (1250 ms after T0, by hand), and
    says so among the problems; it is not a run error."""
    scn = parse_run(TEXT)
    write_logs(tmp_path, iterations=12)
    with open(tmp_path / "worker-h1.jsonl", "a") as f:
        f.write(json.dumps({"t_ns": T0 + 1250 * MS, "host": "h1", "event": Event.ERROR,
                            "reason": "QP error: rank 1 (roce) QP 0 to rank 2: ACK timeout",
                            "qp_error": True}) + "\n")
    with open(tmp_path / "worker-h2.jsonl", "a") as f:       # a later, ordinary error
        f.write(json.dumps({"t_ns": T0 + 1300 * MS, "host": "h2", "event": Event.ERROR,
                            "reason": "wait timed out"}) + "\n")
    s = summarize(scn, "tcp", tmp_path, {"partial": False, "applied": [],
                                         "exit_codes": {"h0": 143, "h1": 5, "h2": 143,
                                                        "h3": 143}})
    failure = s["transport_failure"]
    assert failure["host"] == "h1" and failure["reason"].startswith("QP error: rank 1")
    assert failure["t_ns"] == T0 + 1250 * MS and failure["after_timed_start_ms"] == 1250.0
    assert s["error"] is None and s["verified"] is False
    said = [p for p in s["problems"] if p.startswith("the transport failed")]
    assert said and "h1's QP error" in said[0] and "1.250 s after the timed" in said[0]
    assert "after 12 timed iterations" in said[0]


def test_no_qp_error_no_transport_failure(tmp_path):
    scn = parse_run(TEXT)
    write_logs(tmp_path)
    s = summarize(scn, "tcp", tmp_path, {"partial": False, "applied": [],
                                         "exit_codes": {f"h{i}": 0 for i in range(4)}})
    assert s["transport_failure"] is None
    assert not any(p.startswith("the transport failed") for p in s["problems"])
