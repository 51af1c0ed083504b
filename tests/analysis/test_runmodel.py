"""analysis.runmodel on hand-built transport directories: recovery inputs assembled once (baseline
from the timed start, evaluation ending with the traffic), and every scheduled fault that did not
take effect (refused, never sent, sent after the traffic) named with its reason.

The synthetic run: 4 hosts, each delivering 10,000 bytes every 10 ms (4e6 B/s together) from the
timed start t0 until 3000 ms, except during an outage [1000, 1400) ms; 2 s of warm-up before t0
deliver nothing; the workers keep sampling (flat) until 5000 ms. 30 iterations of 100 ms.
"""
import json

from analysis import runmodel
from model.events import ControllerLog, Event
from tests.helpers.synthetic_run import MS, T0, TEXT, parse_run, records, write_run


def test_recovery_inputs_start_at_the_timed_start_and_end_with_the_traffic(tmp_path):
    scn = parse_run()
    write_run(tmp_path, records(scn))
    model = runmodel.load_transport(tmp_path)
    # warm-up windows (2 s at 0 B/s) would make the median baseline 0 if counted
    assert abs(model.baseline_goodput_bps - 4e6) < 1
    assert model.windows == {"window_ms": 100.0, "hold_ms": 500.0}
    down, up = model.applied
    assert (down.t_ns, up.t_ns) == (T0 + 1000 * MS, T0 + 2700 * MS)
    # one of group 0's four uplinks down: the ring all-reduce crosses them once each way, so
    # the three left carry more than the hosts' NIC ports (its tightest cut): fraction 1.
    # Expected 0.9 x 4e6 = 3.6e6 B/s; the 100 ms window starting 380 ms after the fault holds
    # the 9 samples at 1400..1480 ms: 9 x 10,000 x 4 B / 0.1 s = 3.6e6 (at 370 ms: 8, 3.2e6).
    assert down.capacity_fraction == 1.0
    assert abs(down.recovery_ms - 380.0) < 1e-6
    # link_up at 2700 ms: full rate at once; its evaluation (and hold) ends with the traffic at
    # 3000 ms. Ending at the last sample (5000 ms, flat after 3000) would put windows over the
    # idle tail inside the 500 ms hold: "never".
    assert up.capacity_fraction == 1.0 and up.recovery_ms == 0.0


def test_every_fault_that_did_not_take_effect_is_named_with_its_reason(tmp_path):
    scn = parse_run()
    write_run(tmp_path, records(scn))
    model = runmodel.load_transport(tmp_path, faults_scheduled=len(scn.faults))
    status = {f.entry: f.status for f in model.faults}
    assert status == {0: "applied", 1: "applied", 2: "failed", 3: "after_traffic",
                      4: "not_reached", 5: "not_reached"}
    lines = [runmodel.describe_not_effective(f) for f in model.not_effective]
    assert len(lines) == 4
    assert "gray_loss_clear t0p0g0~t1p0s1" in lines[0] and "no gray_loss on" in lines[0]
    assert "link_down t0p1g0~t1p1s0 (at_s=3.5)" in lines[1] and "after the traffic" in lines[1]
    assert "0.50 s after" in lines[1]           # sent at 3500 ms, traffic ended at 3000 ms
    assert "link_down t0p1g0~t1p1s1 (at_s=9)" in lines[2] and "traffic ended" in lines[2]
    fields = model.summary_fields()
    assert fields["faults_ok"] is False
    assert fields["faults_scheduled"] == 6 and fields["faults_applied"] == 2
    assert [f["entry"] for f in fields["faults_failed"]] == [2]
    assert [f["entry"] for f in fields["faults_not_reached"]] == [3, 4, 5]
    # recovery is listed for the faults the traffic met: not the refused or the late ones
    assert fields["recovery_ms"] == [380.0, 0.0]
    assert fields["fault_times_ns"] == [T0 + 1000 * MS, T0 + 2700 * MS]


def test_an_entry_without_any_record_is_not_reached(tmp_path):
    scn = parse_run()
    write_run(tmp_path, records(scn)[:2])
    assert runmodel.load_transport(tmp_path).summary_fields()["faults_ok"] is True
    model = runmodel.load_transport(tmp_path, faults_scheduled=len(scn.faults))
    assert [f.entry for f in model.not_effective] == [2, 3, 4, 5]
    assert all(f.status == "not_reached" and "ended before" in f.reason for f in model.not_effective)


def test_cut_and_malformed_lines_are_reported_not_raised(tmp_path):
    scn = parse_run()
    write_run(tmp_path, records(scn)[:1])
    with open(tmp_path / "worker-h0.jsonl", "a") as f:
        f.write('[1, 2]\n{"t_ns": 5, "event": "iteration", "iter": "x"}\n{"t_ns": 7, "ev')
    model = runmodel.load_transport(tmp_path)
    assert len(model.iterations) == 30
    assert any("not a JSON object" in p for p in model.problems)
    assert any("without iter" in p for p in model.problems)
    assert any("not JSON" in p for p in model.problems)


def test_controller_log_is_the_fallback_when_the_runner_log_is_absent(tmp_path):
    scn = parse_run()
    write_run(tmp_path, [])
    (tmp_path / "faults-applied.jsonl").unlink()
    log = [{"t_ns": T0 + 1000 * MS, "action": "link_down", "a": "t0p0g0", "b": "t1p0s0"},
           {"t_ns": T0 + 1001 * MS, "action": ControllerLog.PORT_STATUS, "a": "t0p0g0",
            "b": "t1p0s0"}]
    (tmp_path / "faults.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    model = runmodel.load_transport(tmp_path)
    (fault,) = model.faults
    assert fault.status == "applied" and abs(fault.recovery_ms - 380.0) < 1e-6


def _edit_iterations(tdir, hosts, edit):
    """Rewrite the iteration records of worker-<host>.jsonl for each host with edit(record)."""
    for h in hosts:
        path = tdir / f"worker-{h}.jsonl"
        recs = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps(edit(r) if r.get("event") == Event.ITERATION else r)
                                + "\n" for r in recs))


def test_a_record_without_verified_does_not_count_as_verified(tmp_path):
    write_run(tmp_path, records(parse_run(TEXT)))
    assert runmodel.load_transport(tmp_path).records_verified        # the run as written
    _edit_iterations(tmp_path, ["h2"], lambda r: {k: v for k, v in r.items()
                                                  if not (k == "verified" and r["iter"] == 7)})
    model = runmodel.load_transport(tmp_path)
    assert not model.records_verified and not model.data_verified


def test_the_planned_indices_are_checked_not_their_count(tmp_path):
    # 30 planned; every rank logs 0..28 and 30: thirty complete iterations, but not 0..29
    write_run(tmp_path, records(parse_run(TEXT)))
    _edit_iterations(tmp_path, ["h0", "h1", "h2", "h3"],
                     lambda r: {**r, "iter": 30} if r["iter"] == 29 else r)
    model = runmodel.load_transport(tmp_path)
    assert model.iterations_planned == 30 and len(model.iterations) == 30
    assert not model.records_verified


def test_records_that_contradict_themselves_or_their_log_are_named_and_skipped(tmp_path):
    write_run(tmp_path, records(parse_run(TEXT)))
    _edit_iterations(tmp_path, ["h0"], lambda r: {**r, "end_ns": r["start_ns"] - 1}
                     if r["iter"] == 3 else {**r, "wrong": 5} if r["iter"] == 4 else r)
    (tmp_path / "worker-h1.jsonl").write_bytes((tmp_path / "worker-h2.jsonl").read_bytes())
    model = runmodel.load_transport(tmp_path)
    text = "\n".join(model.problems)
    assert "iteration 3 ends" in text and "before it starts" in text
    assert "iteration 4 says verified beside wrong = 5" in text
    assert "a record of host 'h2' in h1's log" in text
    assert not model.records_verified
    assert [it.index for it in model.iterations] == []     # h1 has no iteration of its own


def test_a_fault_after_the_last_iteration_of_a_failed_run_landed_in_the_unfinished_one(tmp_path):
    """The link_down at 3.5 s follows the last complete iteration (3.0 s). When the traffic
    ended, it came after it; when a worker failed with iterations still to run (its collective
    stuck), the traffic never ended and the fault met the iteration that never finished:
    applied, not after_traffic."""
    scn = parse_run()
    write_run(tmp_path, records(scn))
    log = tmp_path / "worker-h0.jsonl"
    log.write_text(log.read_text() + json.dumps(
        {"t_ns": T0 + 4000 * MS, "host": "h0", "event": Event.ERROR,
         "reason": "rank 0 (tcp): wait timed out after 20.0 s"}) + "\n")
    model = runmodel.load_transport(tmp_path, faults_scheduled=len(scn.faults))
    # every planned iteration (30) finished before the error: the traffic did end
    assert model.worker_errors and len(model.iterations) == model.iterations_planned == 30
    assert {f.entry: f.status for f in model.faults}[3] == "after_traffic"
    config = json.loads((tmp_path / "worker.json").read_text())
    (tmp_path / "worker.json").write_text(json.dumps({**config, "iterations": 31}))
    model = runmodel.load_transport(tmp_path, faults_scheduled=len(scn.faults))
    assert {f.entry: f.status for f in model.faults}[3] == "applied"


def test_the_end_named_after_the_last_fault_is_the_planned_count(tmp_path):
    # 30 iterations logged; a stop file naming 30 plans 30, one naming 31 plans 31 (and the
    # 30 logged then fall short of it); a broken one is named and worker.json's count stands
    from model import traffic_end
    write_run(tmp_path, records(parse_run(TEXT)))
    traffic_end.write(tmp_path, 30, "test")
    model = runmodel.load_transport(tmp_path)
    assert model.iterations_planned == 30 and model.records_verified
    traffic_end.write(tmp_path, 31, "test")
    model = runmodel.load_transport(tmp_path)
    assert model.iterations_planned == 31 and not model.records_verified
    (tmp_path / traffic_end.STOP_FILE).write_text('{"iterations": -2}')
    model = runmodel.load_transport(tmp_path)
    assert model.iterations_planned == 30
    assert any(traffic_end.STOP_FILE in p for p in model.problems), model.problems
