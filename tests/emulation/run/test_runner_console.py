"""What `mrclab run` prints after the transports ran (emulation/run/runner.py _run_transports):
each transport's fidelity verdict once, with its time scale, the CPU's load read through the
verdict, and, when the verdict is not "ok", the command that gets a valid run. The transports'
summaries are canned (run_transport replaced): no fabric."""
from __future__ import annotations

from emulation.config import scenario as S
from emulation.run import runner
from tests.helpers.synthetic_run import TCP_RUN

CPU = {"cores": 2, "window_s": 5.0, "busy_fraction": 0.96, "busy_cores": 1.92,
       "cores_by_role": {"workers": 1.1, "switches": 0.8}, "saturated": True}


def canned(verdict, transport):
    violations = [] if verdict == "ok" else [
        {"invariant": "timer_lateness", "ratio": 3.1}, {"invariant": "worker_lateness",
                                                        "ratio": 2.4}]
    return {"transport": transport, "verified": True, "faults_ok": True, "time_scale": 1.0,
            "recovery_ms": [410.0, 0.0], "recovery_void": [None, None], "cpu": CPU,
            "fidelity": {"verdict": verdict, "violations": violations}}


def console(tmp_path, monkeypatch, capsys, verdicts):
    monkeypatch.setenv("MRCLAB_RESULTS_DIR", str(tmp_path.parent))   # the run is `latest`
    monkeypatch.setattr(runner, "run_transport",
                        lambda scn, transport, tdir: canned(verdicts[transport], transport))
    scn = S.parse(TCP_RUN)
    code, _ = runner._run_transports(scn, list(verdicts), tmp_path, source="experiments/x.toml",
                                     auto=False)
    return code, capsys.readouterr().out


def flat(text: str) -> str:
    """The console's words with its wrapping undone."""
    return " ".join(text.split())


def test_each_verdict_once_with_the_way_to_a_valid_run(tmp_path, monkeypatch, capsys):
    code, printed = console(tmp_path, monkeypatch, capsys, {"mrc": "invalid", "roce": "ok"})
    assert code == 0
    assert max(len(line) for line in printed.splitlines()[-6:]) <= 100
    out = flat(printed)
    assert out.count("fidelity invalid at time_scale 1") == 1
    # the takeaway leads the statement: each fault's recovery, then the verdict
    assert "mrc: fault 1: recovered in 410 ms; fault 2: recovered in 0 ms; fidelity invalid" in out
    assert "timer_lateness 3.1x, worker_lateness 2.4x" in out
    assert out.count("For a valid run:") == 1 and "`mrclab calibrate experiments/x.toml`" in out
    # the CPU meter never contradicts the verdict: saturated cores under "ok" measured the fabric
    assert out.count("fidelity ok at time_scale 1") == 1
    assert "CPU-bound" not in out
    roce = out[out.index("roce: fault 1"):]
    assert "cores saturated, yet every fidelity invariant held" in roce[:roce.index("run directory")]


def test_a_voided_recovery_reads_void_in_the_table(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runner, "run_transport", lambda scn, transport, tdir: dict(
        canned("invalid", transport), recovery_void=["a stall inside its recovery window", None]))
    runner._run_transports(S.parse(TCP_RUN), ["mrc"], tmp_path)
    out = flat(capsys.readouterr().out)
    assert "410 void, 0" in out and "recovery of fault 1 void" in out


def test_the_console_fits_100_columns_and_says_each_violation_once(tmp_path, monkeypatch, capsys):
    code, printed = console(tmp_path, monkeypatch, capsys, {"mrc": "invalid", "roce": "ok",
                                                            "tcp": "ok"})
    lines = printed.splitlines()
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    assert flat(printed).count("timer_lateness") == 1
    header = lines[0].split("  ")
    # no transport has a trimming counter: no column of dashes
    assert "marked" not in lines[0] and "busbw Mbit/s" not in lines[0]   # no times: dropped
    assert header[0] == "transport" and "recovery ms" in lines[0]
    assert lines[-1].startswith("next: `mrclab analyze ")


def test_wide_adds_the_other_columns_and_json_prints_the_summary(tmp_path, monkeypatch, capsys):
    import json
    monkeypatch.setattr(runner, "run_transport", lambda scn, transport, tdir: dict(
        canned("ok", transport), iteration_times_ms=[100.0, 300.0], retransmissions=4,
        marked=3))
    runner._run_transports(S.parse(TCP_RUN), ["mrc"], tmp_path, wide=True)
    wide = capsys.readouterr().out.splitlines()[0]
    assert "p99 iter ms" in wide and "retx" in wide and "marked" in wide
    (tmp_path / "j").mkdir()
    runner._run_transports(S.parse(TCP_RUN), ["mrc"], tmp_path / "j", as_json=True)
    out = capsys.readouterr()
    top = json.loads(out.out)                       # stdout: nothing but summary.json
    assert top["transports"]["mrc"]["median_iteration_ms"] == 200.0
    assert top == json.loads((tmp_path / "j" / "summary.json").read_text())
    assert "fidelity ok at time_scale 1" in flat(out.err)


PROFILE = {"window_s": 2.0, "classes": {
    "endpoint_loops": {"wait_per_slice_us": 850.0, "wait_cores": 0.21, "bound": "cpu"},
    "ovs_vswitchd": {"wait_per_slice_us": 120.0, "wait_cores": 0.05, "bound": "work"},
    "controller": {"wait_per_slice_us": 0.0, "wait_cores": 0.0, "bound": "idle"}}}


def test_wide_adds_where_the_wake_ups_waited(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runner, "run_transport", lambda scn, transport, tdir: dict(
        canned("ok", transport), sched_profile=PROFILE, scheduling={"scheduling": "hifi"}))
    runner._run_transports(S.parse(TCP_RUN), ["mrc"], tmp_path)
    assert "run-queue wait" not in capsys.readouterr().out
    (tmp_path / "w").mkdir()
    runner._run_transports(S.parse(TCP_RUN), ["mrc"], tmp_path / "w", wide=True)
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("mrc: run-queue wait"))
    rest = [line for line in lines[first + 1:] if line.startswith("    ")]
    assert max(len(line) for line in [lines[first], *rest]) <= 100
    # 0.21 cores of waiting is 210 ms of wait per second; the idle controller is left out
    assert ("mrc: run-queue wait (scheduling hifi): endpoint_loops 850 us/slice, 210 ms/s "
            "(cpu); ovs_vswitchd 120 us/slice, 50 ms/s (work)") in flat(printed)
    assert "controller 0 us/slice" not in flat(printed)
