"""The runner's verdict when a scheduled fault never took effect: the summaries, the terminal
table and the exit code say so and name the fault (no fabric: worker logs written by hand, the
fault scheduler run against a port nobody listens on)."""
import json
import socket
import time

from emulation.run import run_faults, run_output, run_progress, run_summary, runner
from model.events import Event, Phase
from tests.helpers.scenario_texts import link_fault
from tests.helpers.synthetic_run import MS, T0, TEXT, parse_run, records, sent, write_run


def summary_of(tmp_path, recs):
    scn = write_run(tmp_path, recs)
    state = {"partial": False, "exit_codes": {f"h{i}": 0 for i in range(4)}}
    return scn, run_summary.summarize(scn, "tcp", tmp_path, state)


def test_a_refused_clear_and_a_late_fault_fail_the_run_with_their_names(tmp_path):
    scn, s = summary_of(tmp_path, records(parse_run()))
    assert s["verified"] is True and s["data_verified"] is True      # the data is fine ...
    assert s["faults_ok"] is False                                   # ... the schedule is not
    assert [f["entry"] for f in s["faults_failed"]] == [2]
    assert "no gray_loss on" in s["faults_failed"][0]["reason"]
    assert [f["entry"] for f in s["faults_not_reached"]] == [3, 4, 5]
    top = run_summary.top_summary(scn, tmp_path, [s], interrupted=False)
    assert top["exit_code"] == runner.EXIT_FAULT_NOT_EFFECTIVE == 3
    assert top["faults_ok"] is False and top["verified"] is True
    assert top["transports"]["tcp"]["faults_not_reached"] == s["faults_not_reached"]
    assert any("gray_loss_clear t0p0g0~t1p0s1" in p for p in top["problems"])
    table = run_output.comparison_table([s]).splitlines()
    assert table[0].split()[:4] == ["transport", "verified", "fidelity", "faults"]
    assert table[2].split()[:5] == ["tcp", "yes", s["fidelity"]["verdict"], "2/6", "!"]
    named = [line for line in table[3:] if line.startswith("tcp: fault #")]
    assert len(named) == 4 and all("did not take effect" in line for line in named)


def test_all_faults_applied_in_time_exit_zero(tmp_path):
    scn = parse_run()
    c = [e.commands[0] for e in scn.faults]
    recs = [sent(0, "at_s=1.0", 1000, c[0]), sent(1, "at_s=2.7", 2700, c[1])]
    scn2 = parse_run(TEXT.split("[[faults]]\nat_s = 2.8")[0])
    write_run(tmp_path, recs)
    s = run_summary.summarize(scn2, "tcp", tmp_path, {"partial": False,
                                                 "exit_codes": {f"h{i}": 0 for i in range(4)}})
    assert s["faults_ok"] is True and s["problems"] == [] and s["recovery_ms"] == [380.0, 0.0]
    top = run_summary.top_summary(scn2, tmp_path, [s], interrupted=False)
    assert top["exit_code"] == 0 and top["problems"] == []
    assert run_output.comparison_table([s]).splitlines()[2].split()[:4] == \
        ["tcp", "yes", s["fidelity"]["verdict"], "2/2"]


def test_not_verified_outranks_a_fault_that_did_not_take_effect(tmp_path):
    scn = write_run(tmp_path, records(parse_run()))
    s = run_summary.summarize(scn, "tcp", tmp_path, {"partial": False,
                                                "exit_codes": {"h0": 4, "h1": 0, "h2": 0, "h3": 0}})
    code, problems = run_summary.run_verdict([s], interrupted=False)
    assert code == runner.EXIT_NOT_VERIFIED
    assert "tcp: worker exit codes h0=4" in problems


def test_a_scheduler_that_dies_leaves_its_entries_named_as_not_reached(tmp_path):
    scn = parse_run()
    with socket.socket() as s:            # a port nobody listens on: the POST fails
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path / "worker-h0.jsonl"
    log.write_text(json.dumps({"t_ns": time.monotonic_ns() - 10**10, "event": Event.PHASE,
                               "phase": Phase.WARMUP_DONE}) + "\n")    # every at_s is due at once
    tail = run_progress.LogTail([log])
    sched = run_faults.FaultScheduler(scn, tail, port, tmp_path / "faults-applied.jsonl")
    sched.start()
    sched.join(10)
    assert not sched.is_alive() and sched.error and "fault scheduler failed" in sched.error
    assert sched.sent == set()           # died on the first POST, before any answer
    progress = run_faults.RunProgress(tail.timed_start_ns, time.monotonic_ns())
    recs = run_faults.unreached_records(scn, sched.sent, lambda i: run_faults.unreached_reason(
        {}, sched.error, progress, scn, i))
    assert [r["entry"] for r in recs] == [0, 1, 2, 3, 4, 5]
    assert all(r["reached"] is False and "scheduler died" in r["reason"] for r in recs)
    assert recs[2]["action"] == "gray_loss_clear" and recs[2]["when"] == "at_s=2.8"


def test_unreached_reason_names_why_the_run_never_reached_an_entry():
    scn = parse_run()
    at_start = run_faults.RunProgress(T0, T0)
    assert "the run stopped before it was due (boom)" in run_faults.unreached_reason(
        {"error": "boom"}, None, at_start, scn, 4)
    assert run_faults.unreached_reason({}, None, run_faults.RunProgress(None, T0), scn, 4) == \
        "the timed iterations never started"


def test_a_late_entry_says_when_it_was_due_and_when_the_traffic_ended():
    """Both on one clock, the emulated world's: TEXT's entry 4 is at_s = 9.0, entry 5
    at_iteration = 29; an after_s entry is due its after_s after the previous one was applied."""
    scn = parse_run()
    ran = run_faults.RunProgress(T0, T0 + 3200 * MS, done=28)
    late = run_faults.unreached_reason({}, None, ran, scn, 4)
    assert late == ("the traffic ended before it was due: it was due 9 s after the timed "
                    "iterations started, and the traffic ended 3.20 s after the timed iterations "
                    "started")
    assert run_faults.unreached_reason({}, None, ran, scn, 5) == (
        "the traffic ended before it was due: it was due when a rank started timed iteration "
        "29, and no rank got past 28")
    # at time scale 4 the same wall times are a quarter as long in the emulated world
    slow = run_faults.RunProgress(T0, T0 + 3200 * MS, k=4.0)
    assert "ended 0.80 s of emulated time after" in run_faults.unreached_reason(
        {}, None, slow, scn, 4)
    chained = parse_run(TEXT + link_fault("link_up", "t0p1g0", "t1p1s1", after_s=5.0))
    applied = run_faults.RunProgress(T0, T0 + 6500 * MS, applied_at={5: T0 + 1500 * MS})
    assert run_faults.unreached_reason({}, None, applied, scn=chained, index=6) == (
        "the traffic ended before it was due: it was due 5 s after the previous entry "
        "(at_iteration=29), which was applied 1.50 s after the timed iterations started, so at "
        "6.50 s, and the traffic ended 6.50 s after the timed iterations started")
    never = run_faults.RunProgress(T0, T0 + 6500 * MS)
    assert run_faults.unreached_reason({}, None, never, chained, 6) == (
        "it was due 5 s after the previous entry (at_iteration=29), which was never applied")
