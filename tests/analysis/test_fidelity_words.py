"""The verdict as every output states it (analysis/fidelity_words.py): the console's one
statement per transport (the CPU's load read through the verdict, the next step when not ok),
the recovery cell, and the notebook's conclusion, which ranks recoveries only under "ok"."""
from types import SimpleNamespace

from analysis import cpu_usage
from analysis import fidelity_words as W
from analysis.runmodel import APPLIED, Fault

SATURATED = {"cores": 2, "busy_fraction": 0.97, "saturated": True,
             "cores_by_role": {"workers": 1.2, "switches": 0.7}}


def summary(verdict="ok", k=1.0, cpu=SATURATED, void=(), violations=()):
    return {"transport": "roce", "time_scale": k, "cpu": cpu, "recovery_void": list(void),
            "fidelity": {"verdict": verdict, "violations": list(violations)}}


def test_an_ok_verdict_over_saturated_cores_says_the_times_hold():
    text = W.transport_sentence(summary("ok", 4.0))
    assert text.startswith("roce: fidelity ok at time_scale 4; CPU 97% of 2 cores busy")
    assert "yet every fidelity invariant held: its times measure the fabric" in text
    assert "CPU-bound" not in text and "valid run" not in text
    # the meter's own line says the same
    assert "measure this machine" not in cpu_usage.describe("roce", SATURATED, "ok")


def test_a_bad_verdict_names_what_broke_and_the_command_for_a_valid_run():
    s = summary("invalid", 1.0, cpu={**SATURATED, "busy_fraction": 0.4, "saturated": False},
                violations=[{"invariant": "timer_lateness", "ratio": 3.15}],
                void=["a stall inside its recovery window: worker h1 ran 9 ms late", None])
    text = W.transport_sentence(s, "experiments/demo.toml", auto=False)
    assert text.startswith("roce: fidelity invalid at time_scale 1 (timer_lateness 3.15x); "
                           "recovery of fault 1 void")
    # not saturated, yet invalid: the verdict decides, not the busy share
    assert "CPU 40% of 2 cores busy; fidelity invalid: its times measure this machine's CPU" in text
    assert ("For a valid run: run `mrclab calibrate experiments/demo.toml` (it finds the "
            "smallest time scale this machine keeps up with), then set [fabric] time_scale = "
            "\"auto\" in the scenario, or a number above 1.") in text
    auto = W.transport_sentence(dict(s, time_scale=10.0), "experiments/demo.toml", auto=True)
    assert "the calibrated time_scale 10 did not hold for this run" in auto
    lines = W.transport_line(s, "experiments/demo.toml").splitlines()
    assert len(lines) > 1 and max(map(len, lines)) <= W.CONSOLE_COLUMNS
    assert all(line.startswith("    ") for line in lines[1:])


def test_a_summary_without_a_verdict_is_not_vouched_for():
    s = {"transport": "tcp"}
    assert W.verdict_of(s) == W.NOT_ASSESSED and W.time_scale_of(s) == 1.0
    assert "fidelity not assessed at time_scale 1" in W.transport_sentence(s)
    assert W.recovery_cell(410.0, None) == "410"
    assert W.recovery_cell(410.0, "stall") == "410 void"
    assert W.recovery_cell(None, "stall") == "never void"


def transport(verdict, recoveries, void=()):
    faults = [Fault(entry=i, when=f"at_s={i + 1}", status=APPLIED, action="link_down", a="t0",
                    b="t1", t_ns=(i + 1) * 10**9, recovery_ms=r) for i, r in enumerate(recoveries)]
    model = SimpleNamespace(iteration_times_ms=[100.0, 300.0], data_verified=True, faults=faults)
    return SimpleNamespace(summary={"verified": True, "time_scale": 2.0,
                                    "recovery_void": list(void),
                                    "fidelity": {"verdict": verdict}}, model=model)


def test_the_conclusion_ranks_recoveries_only_when_every_verdict_is_ok():
    run = SimpleNamespace(transports={"mrc": transport("ok", [30.0]),
                                      "roce": transport("ok", [2000.0])})
    text = W.conclusion_markdown(run)
    assert "**mrc**: fidelity ok at time_scale 2; 2 iterations, data verified" in text
    assert "median iteration 200 ms, slowest 300 ms" in text
    assert "After the first fault **mrc** came back first (30 ms), then roce 2000 ms." in text
    run.transports["roce"] = transport("invalid", [2000.0])
    text = W.conclusion_markdown(run)
    assert "came back first" not in text
    assert "No comparison of recovery times: the fidelity of roce is not \"ok\"" in text
    assert "a number above 2." in text


def test_a_void_recovery_is_shown_and_never_ranked():
    run = SimpleNamespace(transports={"mrc": transport("ok", [30.0], void=["stall"]),
                                      "roce": transport("ok", [2000.0])})
    text = W.conclusion_markdown(run)
    assert "link_down t0~t1: recovered in 30 ms (void: a stall inside its recovery window)" in text
    assert "After the first fault **roce** came back first (2000 ms)" in text
    assert "mrc: void (a stall inside the recovery window), not ranked" in text
