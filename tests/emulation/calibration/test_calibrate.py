"""emulation/calibration/calibrate.py without the fabric: the search over time scales against a machine
whose threshold is known, the verdict of a trial's summaries, the cache key and the CLI's cache
paths. (A trial on the fabric is the integration test's and `make bench`'s.)"""
import json
import os
import re

import pytest

from emulation.calibration import calibrate as C
from emulation.calibration import calibrate_cli
from emulation.config import scenario as S
from tests.helpers.scenario_texts import SMALL_FABRIC

SCN = 'name = "c"\n' + SMALL_FABRIC + '[collective]\nmessage_bytes = 4096\niterations = 4\n'


def machine(threshold):
    """measure(k) of a machine that keeps up from k >= threshold on; records what it ran."""
    ran = []

    def measure(k):
        ran.append(k)
        return C.Trial(k, "ok" if k >= threshold else "degraded", {"timer_lateness": k / 3})
    return measure, ran


def test_a_machine_that_keeps_up_at_one_needs_that_trial_and_its_confirmation():
    measure, ran = machine(1)
    assert C.search(measure) == (1.0, [C.Trial(1.0, "ok", {"timer_lateness": 1 / 3})] * 2)
    assert ran == [1.0, 1.0]


def test_doubling_then_bisecting_to_within_the_ratio():
    # threshold 3: 1, 2 fail, 4 passes; bisect 3 (passes), 2.5 (fails): 3 / 2.5 = 1.2 <= 1.25;
    # 3 passes again
    measure, ran = machine(3)
    k, trials = C.search(measure)
    assert k == 3.0
    assert ran == [1.0, 2.0, 4.0, 3.0, 2.5, 3.0]
    assert [t.verdict for t in trials] == ["degraded", "degraded", "ok", "ok", "degraded", "ok"]


def scripted(verdicts):
    """measure(k) whose n-th trial at k has verdict verdicts[k][n] ("ok" or not); records what
    it ran."""
    ran = []

    def measure(k):
        verdict = verdicts[k][sum(1 for r in ran if r == k)]
        ran.append(k)
        return C.Trial(k, verdict, {})
    return measure, ran


def test_a_lucky_pass_that_fails_its_confirmation_is_a_failure_and_the_search_goes_on_above():
    # 16 fails, 32 and 24 pass, 20 passes once and then fails: 20 is a failure, 24 the smallest
    # pass never refuted (24 / 20 = 1.2 <= 1.25, no bisection), and 24 passes again
    measure, ran = scripted({1.0: ["invalid"], 2.0: ["invalid"], 4.0: ["invalid"],
                             8.0: ["invalid"], 16.0: ["degraded"], 32.0: ["ok"],
                             24.0: ["ok", "ok"], 20.0: ["ok", "degraded"]})
    k, _ = C.search(measure)
    assert k == 24.0
    assert ran == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 24.0, 20.0, 20.0, 24.0]


def test_a_failed_confirmation_tries_one_ratio_step_above_before_the_ladder():
    # 4 passes at first; 3 fails (4 / 3 = 1.33 > 1.25), 3.5 fails (1.14); 4 fails its
    # confirmation and no pass above it stands: 4 x 1.25 = 5 passes (5 / 4 = 1.25, no
    # bisection) and passes again
    measure, ran = scripted({1.0: ["invalid"], 2.0: ["invalid"], 4.0: ["ok", "degraded"],
                             3.0: ["invalid"], 3.5: ["degraded"], 5.0: ["ok", "ok"]})
    assert C.search(measure)[0] == 5.0
    assert ran == [1.0, 2.0, 4.0, 3.0, 3.5, 4.0, 5.0, 5.0]


def test_when_the_step_above_a_failed_confirmation_fails_the_ladder_goes_on_above_it():
    # as above, but 5 fails too: the next rung 8 passes, bisect (5 + 8) / 2 = 6.5 (passes,
    # 6.5 / 5 = 1.3 > 1.25), 5.75 (fails, 6.5 / 5.75 = 1.13); 6.5 passes again
    measure, ran = scripted({1.0: ["invalid"], 2.0: ["invalid"], 4.0: ["ok", "degraded"],
                             3.0: ["invalid"], 3.5: ["degraded"], 5.0: ["degraded"],
                             8.0: ["ok"], 6.5: ["ok", "ok"], 5.75: ["degraded"]})
    assert C.search(measure)[0] == 6.5
    assert ran == [1.0, 2.0, 4.0, 3.0, 3.5, 4.0, 5.0, 8.0, 6.5, 5.75, 6.5]


def test_a_top_k_that_fails_its_confirmation_leaves_no_answer():
    measure, ran = scripted({1.0: ["invalid"], 2.0: ["degraded"], 4.0: ["ok", "degraded"],
                             3.0: ["degraded"], 3.5: ["degraded"]})
    assert C.search(measure, doubling=(1.0, 2.0, 4.0)) == (None, [
        C.Trial(1.0, "invalid", {}), C.Trial(2.0, "degraded", {}), C.Trial(4.0, "ok", {}),
        C.Trial(3.0, "degraded", {}), C.Trial(3.5, "degraded", {}),
        C.Trial(4.0, "degraded", {})])


def test_no_pass_up_to_the_largest_k_is_none():
    measure, ran = machine(100)
    assert C.search(measure)[0] is None
    assert ran == list(C.DOUBLING)


def test_verdict_is_ok_only_when_every_transport_is_and_margins_are_the_worst():
    ok = {"time_scale": 2.0, "fidelity": {"verdict": "ok", "margins": {"a": 0.5, "b": 3.0}}}
    bad = {"time_scale": 2.0, "fidelity": {"verdict": "degraded", "margins": {"a": 2.0}}}
    assert C.verdict_of([ok]) == C.Trial(2.0, "ok", {"a": 0.5, "b": 3.0})
    assert C.verdict_of([ok, bad]) == C.Trial(2.0, "degraded", {"a": 0.5, "b": 3.0})


def test_a_summary_without_fidelity_is_a_clear_error():
    with pytest.raises(C.CalibrationError, match="no fidelity verdict"):
        C.verdict_of([{"transport": "mrc"}])


def test_the_cache_key_follows_the_fabric_not_the_time_scale():
    base = S.parse(SCN)
    same = S.parse(SCN.replace("time_scale = 1", "time_scale = 4"))
    wider = S.parse(SCN.replace("planes = 2", "planes = 3"))
    assert C.cache_key(base, "mrc", "d")[0] == C.cache_key(same, "mrc", "d")[0]
    assert C.cache_key(base, "mrc", "d")[0] != C.cache_key(wider, "mrc", "d")[0]
    assert C.cache_key(base, "mrc", "d")[0] != C.cache_key(base, "mrc", "e")[0]   # code
    _, what = C.cache_key(base, "mrc", "d")
    assert {"host", "cpu", "fabric", "code"} <= set(what)


def test_calibrate_caches_and_resolve_reuses_it(tmp_path):
    scn = S.parse(SCN)
    measure, ran = machine(2)
    result = C.calibrate(scn, "mrc", tmp_path, measure=measure, log=lambda _: None)
    assert result["time_scale"] == 2.0 and result["margins"] == {"timer_lateness": 2 / 3}
    # 1 fails, 2 passes; 1.5 fails (2 / 1.5 = 1.33 > 1.25), 1.75 fails (2 / 1.75 = 1.14: done);
    # 2 passes again
    assert ran == [1.0, 2.0, 1.5, 1.75, 2.0]
    assert C.resolve(scn, "mrc", None, tmp_path, log=lambda _: None, measure=lambda k: pytest.fail(
        "ran a trial although the cache had the answer")) == 2.0


def test_resolve_calibrates_on_the_short_version_once_and_says_how_long_it_took(tmp_path):
    """The first "auto" run on a machine calibrates with the trial scenario it is given (the
    runner passes the [short] version), one progress line per trial and the total time; the
    second reads the cache and runs nothing."""
    full = S.parse(SCN + "[short]\niterations = 2\n")
    short = S.parse(SCN + "[short]\niterations = 2\n", short=True)
    ran = []

    def run_transport(scn, transport, tdir):
        ran.append((scn.collective.iterations, scn.time_scale, transport))
        verdict = "ok" if scn.time_scale >= 2 else "invalid"
        return {"time_scale": scn.time_scale, "fidelity": {"verdict": verdict, "margins": {}}}

    lines = []
    assert C.resolve(full, "mrc", run_transport, tmp_path, log=lines.append, trial=short) == 2.0
    assert ran == [(2, 1.0, "mrc"), (2, 2.0, "mrc"), (2, 1.5, "mrc"), (2, 1.75, "mrc"),
                   (2, 2.0, "mrc")]
    assert "calibrating once" in lines[0]
    assert [line.startswith("mrclab calibrate: mrc at time_scale ")
            for line in lines[1:-1]] == [True] * 5
    assert re.fullmatch(r"mrclab run: mrc: time_scale auto = 2 \(calibrated in \d+ s over 5 "
                        r"short runs, cached in .*\)", lines[-1]), lines[-1]
    lines.clear()
    assert C.resolve(full, "mrc", lambda *a: pytest.fail("ran a trial with the answer cached"),
                     tmp_path, log=lines.append, trial=short) == 2.0
    assert len(lines) == 1 and "mrc: time_scale auto = 2 (calibrated on this machine" in lines[0]


def test_each_transport_is_calibrated_on_its_own_and_cached_apart(tmp_path):
    """A machine on which MRC keeps up from k = 8 and TCP from k = 1: each transport's trials
    run that transport, each gets its own k and cache entry, and a cached answer for one does
    not answer for the other."""
    scn = S.parse(SCN)
    ran = []

    def run_transport(trial, transport, tdir):
        ran.append((transport, trial.time_scale))
        verdict = "ok" if trial.time_scale >= {"mrc": 8, "tcp": 1}[transport] else "invalid"
        return {"time_scale": trial.time_scale, "fidelity": {"verdict": verdict, "margins": {}}}

    assert C.resolve(scn, "mrc", run_transport, tmp_path, log=lambda _: None) == 8.0
    assert {t for t, _ in ran} == {"mrc"}
    ran.clear()
    assert C.resolve(scn, "tcp", run_transport, tmp_path, log=lambda _: None) == 1.0
    assert ran == [("tcp", 1.0), ("tcp", 1.0)]          # the ladder's bottom and its confirmation
    assert (C.cached(scn, "mrc", tmp_path)["time_scale"],
            C.cached(scn, "tcp", tmp_path)["time_scale"]) == (8.0, 1.0)
    assert C.cached(scn, "roce", tmp_path) is None


def test_calibrate_without_a_pass_says_what_to_do(tmp_path):
    measure, _ = machine(1000)
    with pytest.raises(C.CalibrationError, match="set \\[fabric\\] time_scale by hand"):
        C.calibrate(S.parse(SCN), "mrc", tmp_path, measure=measure, log=lambda _: None)
    assert not list(tmp_path.iterdir())     # nothing cached


def test_cli_cached_reports_a_miss_and_prints_a_hit_as_json(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text(SCN)
    cache = tmp_path / "cache"
    assert calibrate_cli.main([str(path), "--cached", "--transport", "mrc",
                               "--cache-dir", str(cache)]) == C.EXIT_NO_PASS
    assert "no calibration of c's fabric for mrc" in capsys.readouterr().err
    measure, _ = machine(4)
    C.calibrate(S.parse(SCN), "mrc", cache, measure=measure, log=lambda _: None)
    assert calibrate_cli.main([str(path), "--cached", "--json", "--transport", "mrc",
                               "--cache-dir", str(cache)]) == 0
    out = json.loads(capsys.readouterr().out)["transports"]["mrc"]
    assert out["time_scale"] == 4.0 and out["margins"] == {"timer_lateness": 4 / 3}
    # every transport of the scenario by default: roce has no calibration yet
    assert calibrate_cli.main([str(path), "--cached", "--cache-dir", str(cache)]) == C.EXIT_NO_PASS
    assert "for roce" in capsys.readouterr().err
    assert calibrate_cli.main([str(path), "--cached", "--transport", "quic",
                               "--cache-dir", str(cache)]) == 2
    assert "--transport quic: c runs mrc, roce, tcp (or all)" in capsys.readouterr().err


def test_cli_bad_scenario_is_named(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(SCN.replace("time_scale = 1", "time_scale = 0.5"))
    assert calibrate_cli.main([str(path), "--cached"]) == 2
    assert "time_scale: must be between 1 and 1000, got 0.5" in capsys.readouterr().err


def test_bench_timescale_is_registered_and_names_a_bad_scenario(tmp_path, capsys):
    from emulation import cli, cli_bench
    path = tmp_path / "bad.toml"
    path.write_text(SCN.replace("time_scale = 1", 'time_scale = "fast"'))
    assert "timescale" in cli_bench.BENCHES
    assert cli.main(["bench", "timescale", "--scenario", str(path)]) == cli.EXIT_USAGE
    assert "time_scale: must be a number >= 1 or \"auto\", got 'fast'" in capsys.readouterr().err


def test_max_scale_stops_the_doubling(tmp_path):
    measure, ran = machine(16)
    with pytest.raises(C.CalibrationError, match="no time scale up to 4 kept"):
        C.calibrate(S.parse(SCN), "mrc", tmp_path, measure=measure, log=lambda _: None,
                    max_scale=4)
    assert ran == [1.0, 2.0, 4.0]


@pytest.mark.parametrize("value", ["0.5", "nan", "x"])
def test_max_scale_below_one_or_not_a_number_is_a_usage_error(value, tmp_path, capsys):
    from emulation import cli
    with pytest.raises(SystemExit) as exit_:
        cli.main(["calibrate", str(tmp_path / "x.toml"), "--max-scale", value])
    assert exit_.value.code == 2
    assert "--max-scale" in capsys.readouterr().err


def test_the_trials_run_the_short_version_under_the_runs_cache_key():
    """The short version's iterations with the run's captures (a tcpdump per host port loads
    the machine as the run will); its [fabric] is the run's, scheduling included, so the cache
    key is the same; a run without captures has a key of its own."""
    text = (SCN.replace("time_scale = 1", "time_scale = 1\nscheduling = \"hifi\"")
            + "[options]\ncapture = true\n[short]\niterations = 2\ncapture = false\n")
    full, short = S.parse(text), S.parse(text, short=True)
    trial = C.trial_of(full, short)
    assert trial.capture is True and trial.collective.iterations == 2
    assert trial.scheduling == "hifi"
    assert C.trial_of(full, None) is full
    assert C.cache_key(trial, "mrc", "d")[0] == C.cache_key(full, "mrc", "d")[0]
    uncaptured = S.parse(text.replace("[options]\ncapture = true", "[options]\ncapture = false"))
    assert C.cache_key(uncaptured, "mrc", "d")[0] != C.cache_key(full, "mrc", "d")[0]


def summary(transport, k, verdict, invariant="worker_lateness", ratio=None):
    violations = [] if verdict == "ok" else [{"invariant": invariant}]
    if ratio is not None:
        violations[0]["ratio"] = ratio
    return {"transport": transport, "time_scale": k,
            "fidelity": {"verdict": verdict, "violations": violations}}


def test_a_full_run_that_did_not_hold_raises_the_cached_k_by_one_bisection_step(tmp_path):
    scn = S.parse(SCN)
    measure, _ = machine(8)                  # doubling: 1, 2, 4 fail, 8 passes; 6, 7 fail
    assert C.calibrate(scn, "mrc", tmp_path, measure=measure,
                       log=lambda _: None)["time_scale"] == 8.0
    assert C.raise_after_run(scn, summary("mrc", 8.0, "ok"), None, tmp_path) is None
    assert C.cached(scn, "mrc", tmp_path)["time_scale"] == 8.0
    # 8 x 1.25 = 10
    raised = C.raise_after_run(scn, summary("mrc", 8.0, "degraded"), tmp_path / "run-1", tmp_path)
    assert raised == {"transport": "mrc", "from": 8.0, "to": 10.0, "worst_ratio": None}
    hit = C.cached(scn, "mrc", tmp_path)
    assert hit["time_scale"] == 10.0
    assert hit["raised"][0]["run"] == str(tmp_path / "run-1")
    # an invariant that is not one a CPU's wait breaks: no raise
    assert C.raise_after_run(scn, summary("mrc", 10.0, "degraded", "not_a_cpu_invariant"),
                             None, tmp_path) is None
    # summaries that are not what the runner writes say nothing
    for bad in ({"fidelity": "degraded"}, [], {"transport": "mrc", "time_scale": "x",
                                               "fidelity": {"verdict": "invalid"}}):
        assert C.raise_after_run(scn, bad, None, tmp_path) is None
    # a run at another k than the cache's (set by hand) says nothing about it
    assert C.raise_after_run(scn, summary("mrc", 8.0, "invalid"), None, tmp_path) is None
    # another transport's late run raises its own calibration, not this one (roce has none)
    assert C.raise_after_run(scn, summary("roce", 10.0, "invalid"), None, tmp_path) is None
    # 10 x 1.25 = 12.5: the next whole k, 13; a packet held beyond its queues waited for a CPU
    assert C.raise_after_run(scn, summary("mrc", 10.0, "invalid", "held_beyond_queue_bound"),
                             None, tmp_path)["to"] == 13.0
    assert C.resolve(scn, "mrc", None, tmp_path, log=lambda _: None,
                     measure=lambda k: pytest.fail("calibrated again")) == 13.0


def test_a_raise_that_did_not_shrink_the_lateness_is_not_followed_by_another(tmp_path):
    """Lateness from sharing the CPU is wall time: x1.25 in k cuts its ratio to an emulated RTT
    to 1/1.25 of what it was. A run at the raised k no less late than the run that raised it
    (1.37 against 1.22) keeps k where it is, says why, and records it; one that shrank
    (1.22 against 1.71) raises again."""
    scn = S.parse(SCN)
    C.calibrate(scn, "mrc", tmp_path, measure=machine(8)[0], log=lambda _: None)
    # 8 -> 10 on 1.71; 10 -> 13 on 1.22 (shrank); at 13, 1.37 did not shrink: stays 13
    assert C.raise_after_run(scn, summary("mrc", 8.0, "degraded", ratio=1.71), None,
                             tmp_path)["to"] == 10.0
    assert C.raise_after_run(scn, summary("mrc", 10.0, "degraded", ratio=1.22), None,
                             tmp_path)["to"] == 13.0
    stopped = C.raise_after_run(scn, summary("mrc", 13.0, "degraded", ratio=1.37),
                                tmp_path / "run-3", tmp_path)
    assert stopped == {"transport": "mrc", "from": 13.0, "to": 13.0, "worst_ratio": 1.37,
                       "previous_ratio": 1.22}
    hit = C.cached(scn, "mrc", tmp_path)
    assert hit["time_scale"] == 13.0 and [r["to"] for r in hit["raised"]] == [10.0, 13.0]
    assert hit["not_raised"]["run"] == str(tmp_path / "run-3")
    lines = []
    run = tmp_path / "run-4" / "mrc"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps(summary("mrc", 13.0, "invalid", ratio=2.5)))
    assert [r["to"] for r in C.learn_after_run(scn, run.parent, tmp_path,
                                               log=lines.append)] == [13.0]
    assert "did not shrink that lateness (1.22x before)" in lines[0]
    assert "stays at 13" in lines[0]


def test_the_raise_stops_at_the_searchs_largest_k(tmp_path):
    scn = S.parse(SCN)
    measure, _ = machine(C.DOUBLING[-1])
    C.calibrate(scn, "mrc", tmp_path, measure=measure, log=lambda _: None)
    top = C.DOUBLING[-1]
    assert C.raise_after_run(scn, summary("mrc", top, "invalid"), None, tmp_path) is None
    assert C.raise_after_run(S.parse(SCN), summary("mrc", 4.0, "invalid"), None,
                             tmp_path / "empty") is None


def test_after_a_run_its_transports_summaries_raise_the_cache_and_say_so(tmp_path):
    """learn_after_run reads the run directory the runner left: <transport>/summary.json."""
    scn = S.parse(SCN)
    cache = tmp_path / "cache"
    C.calibrate(scn, "mrc", cache, measure=machine(4)[0], log=lambda _: None)
    C.calibrate(scn, "tcp", cache, measure=machine(2)[0], log=lambda _: None)
    run = tmp_path / "run"
    for name, k, verdict in (("mrc", 4.0, "ok"), ("tcp", 2.0, "invalid")):
        (run / name).mkdir(parents=True)
        (run / name / "summary.json").write_text(json.dumps(summary(name, k, verdict)))
    (run / "roce").mkdir()
    (run / "roce" / "summary.json").write_text("{not json")
    lines = []
    # tcp's own k: 2 x 1.25 = 2.5 -> 3; mrc's stays
    assert C.learn_after_run(scn, run, cache, log=lines.append) == [
        {"transport": "tcp", "from": 2.0, "to": 3.0, "worst_ratio": None}]
    assert lines == ["mrclab run: the calibrated time_scale 2 did not hold for tcp; its "
                     "calibration on this fabric now says 3: the next run of it uses that"]
    assert (C.cached(scn, "mrc", cache)["time_scale"],
            C.cached(scn, "tcp", cache)["time_scale"]) == (4.0, 3.0)


def test_every_trial_on_the_fabric_has_a_directory_of_its_own(tmp_path):
    """A confirming trial at the same k must not run over the first one's logs (the workers
    would read as done at once and the first trial's files be judged again)."""
    dirs = []

    def run_transport(scn, transport, tdir):
        assert not tdir.exists()
        tdir.mkdir(parents=True)
        dirs.append(tdir.relative_to(tmp_path).as_posix())
        return {"time_scale": scn.time_scale, "fidelity": {"verdict": "ok", "margins": {}}}

    measure = C.measure_on_fabric(S.parse(SCN), "mrc", tmp_path, run_transport, log=lambda _: None)
    for k in (2.0, 2.0, 1.5, 2.0):
        measure(k)
    assert dirs == ["k2/mrc", "k2-2/mrc", "k1.5/mrc", "k2-3/mrc"]


def test_a_search_from_a_k_that_still_passes_steps_down_until_one_fails():
    # threshold 20, start 25: 25 passes, 25 / 1.25 = 20 passes, 16 fails (20 / 16 = 1.25: no
    # bisection); 20 passes again
    measure, ran = machine(20)
    assert C.search(measure, start=25.0)[0] == 20.0
    assert ran == [25.0, 20.0, 16.0, 20.0]


def test_a_search_from_a_k_that_no_longer_passes_doubles_on_above_it():
    # threshold 30, start 25 fails; the ladder's next rung 32 passes; bisect 28.5 (fails):
    # 32 / 28.5 = 1.12; 32 passes again
    measure, ran = machine(30)
    assert C.search(measure, start=25.0)[0] == 32.0
    assert ran == [25.0, 32.0, 28.5, 32.0]


def test_a_machine_faster_than_before_steps_down_to_the_ladders_bottom():
    # threshold 1, start 2: 2, 1.6, 1.28, 1.02 (1.024 rounded) pass, then the bottom 1
    # (0.816 is below it) passes and is confirmed
    measure, ran = machine(1)
    assert C.search(measure, start=2.0)[0] == 1.0
    assert ran == [2.0, 1.6, 1.28, 1.02, 1.0, 1.0]


def _cache_entry(cache, name, machine_facts, code, k, mtime):
    path = cache / f"{name}.json"
    path.write_text(json.dumps({"time_scale": k, "machine": {**machine_facts, "code": code}}))
    os.utime(path, (mtime, mtime))


def test_calibrate_starts_at_this_fabrics_newest_calibration_at_any_build(tmp_path):
    """The newest entry of the same machine and fabric, whatever its code, is where the search
    starts; another fabric's entry, an older one and a file that is not a calibration are not."""
    scn = S.parse(SCN)
    other = S.parse(SCN.replace("planes = 2", "planes = 3"))
    ours = C.machine_and_fabric(scn, "mrc")
    _cache_entry(tmp_path, "older", ours, "old1", 12.0, 1_000)
    _cache_entry(tmp_path, "newest", ours, "old2", 24.0, 2_000)
    _cache_entry(tmp_path, "wider", C.machine_and_fabric(other, "mrc"), "old3", 5.0, 3_000)
    (tmp_path / "broken.json").write_text("{not json")
    lines = []
    measure, ran = machine(20)
    result = C.calibrate(scn, "mrc", tmp_path, measure=measure, log=lines.append)
    # 24 passes, 24 / 1.25 = 19.2 fails (24 / 19.2 = 1.25), 24 passes again
    assert ran == [24.0, 19.2, 24.0]
    assert result["time_scale"] == 24.0 and result["started_at"] == 24.0
    assert lines == ["mrclab calibrate: mrc on this fabric needed time_scale 24 on this machine "
                     "before (code old2): the search starts at 24"]


def test_calibrate_from_scratch_ignores_the_previous_calibration(tmp_path):
    scn = S.parse(SCN)
    _cache_entry(tmp_path, "newest", C.machine_and_fabric(scn, "mrc"), "old", 24.0, 2_000)
    measure, ran = machine(2)
    assert C.calibrate(scn, "mrc", tmp_path, measure=measure, log=lambda _: None,
                       from_previous=False)["time_scale"] == 2.0
    assert ran[0] == 1.0


def test_the_cli_searches_from_scratch_when_asked():
    import argparse
    parser = argparse.ArgumentParser()
    calibrate_cli.add_arguments(parser)
    assert parser.parse_args(["x.toml", "--from-scratch"]).from_scratch is True
    assert parser.parse_args(["x.toml"]).from_scratch is False


def test_a_floor_is_never_tried_and_the_answer_stays_above_it():
    # 12.8 known not to hold; 16 passes; 16 / 12.8 = 1.25: no bisection; 16 passes again
    measure, ran = machine(10)
    assert C.search(measure, start=16.0, floor=12.8)[0] == 16.0
    assert ran == [16.0, 16.0]
    # no start: the ladder from the first rung above the floor; 4 / 3 = 1.33 -> 3.5 (1.17)
    measure, ran = machine(1)
    assert C.search(measure, floor=3.0)[0] == 3.5
    assert ran == [4.0, 3.5, 3.5]
    # a start at or below the floor is not tried: 16, then 14 (16 / 12 = 1.33), 14 again
    measure, ran = machine(1)
    assert C.search(measure, start=10.0, floor=12.0)[0] == 14.0
    assert ran == [16.0, 14.0, 14.0]


def test_above_a_floor_the_answer_is_at_least_one_step_up():
    # floor 3, least ceil(3 x 1.25) = 4: the rung 4 passes and, at the least allowed, is
    # confirmed; 3.5 (between the late full run and its raise) is never tried
    measure, ran = machine(1)
    assert C.search(measure, floor=3.0, least=4.0)[0] == 4.0
    assert ran == [4.0, 4.0]
    # from a start above it the bisection stops at the least: 8 passes, (4 + 8) / 2 = 6 passes,
    # (4 + 6) / 2 = 5 passes (5 / 4 = 1.25), 5 again; not 4.5 below the least
    measure, ran = machine(1)
    assert C.search(measure, start=8.0, floor=4.0, least=5.0)[0] == 5.0
    assert ran == [8.0, 6.0, 5.0, 5.0]
    # and clamps a midpoint below it: floor 4, least 7 -> 8, then max(7, 6) = 7, 7 again
    measure, ran = machine(1)
    assert C.search(measure, start=8.0, floor=4.0, least=7.0)[0] == 7.0
    assert ran == [8.0, 7.0, 7.0]
    assert [C.least_above(f) for f in (None, 3.0, 3.5, 10.0, 60.0)] == [None, 4.0, 5.0, 13.0,
                                                                        64.0]


def run_record(k, held):
    return {"k": k, "held": held}


def test_the_floor_is_the_largest_late_k_no_later_run_held_at_or_below():
    assert C.floor_of([]) is None
    assert C.floor_of([run_record(16.0, False), run_record(20.0, True)]) == 16.0
    # a later build held at 12.8: the late 16 no longer says anything
    assert C.floor_of([run_record(16.0, False), run_record(12.8, True)]) is None
    # held at 14 lifts the late 16, not the late 12.8 below it
    assert C.floor_of([run_record(12.8, False), run_record(16.0, False),
                       run_record(14.0, True)]) == 12.8
    # records that are not records are left out, as a hand-edited cache file may hold
    assert C.full_runs_of({"full_runs": [{"k": "x", "held": False}, {"k": 3, "held": 1},
                                         run_record(5.0, False), 7]}) == [run_record(5.0, False)]
    assert C.full_runs_of({"full_runs": "no"}) == []
    # an entry from before the record: its raises were late runs at their "from"
    assert C.full_runs_of({"raised": [{"from": 16.0, "to": 20.0}, "x"]}) == [
        run_record(16.0, False)]


def test_a_full_run_that_did_not_hold_keeps_the_next_builds_search_above_its_k(tmp_path):
    """Short trials pass from k = 8 on this pretend machine, full runs only from 12: the full
    run at the calibrated 10 is late and raises k to 13 (ceil(12.5)); a held run at 13 is
    recorded too. The next build (another code) starts at 13 and, with 10 a known failure,
    answers 13 (one step above it, where the raise put it) instead of stepping down to what the
    short trials alone would give, or bisecting to 11.5, where a full run would be late."""
    scn = S.parse(SCN)
    C.calibrate(scn, "mrc", tmp_path, measure=machine(10)[0], log=lambda _: None)
    assert C.raise_after_run(scn, summary("mrc", 10.0, "degraded"), None, tmp_path)["to"] == 13.0
    assert C.raise_after_run(scn, summary("mrc", 13.0, "ok"), None, tmp_path) is None
    hit = C.cached(scn, "mrc", tmp_path)
    assert [(r["k"], r["held"]) for r in hit["full_runs"]] == [(10.0, False), (13.0, True)]
    # the same entry as another build's: its file written under another code's key
    (tmp_path / "older.json").write_text(json.dumps({**hit, "machine": {**hit["machine"],
                                                                        "code": "older"}}))
    (tmp_path / f"{hit['key']}.json").unlink()
    lines = []
    measure, ran = machine(8)
    result = C.calibrate(scn, "mrc", tmp_path, measure=measure, log=lines.append)
    # 13 passes, the least allowed: 13 again
    assert ran == [13.0, 13.0] and result["time_scale"] == 13.0
    assert result["floor"] == 10.0 and result["least"] == 13.0
    assert len(result["full_runs"]) == 2
    assert "did not hold at time_scale 10, where its short trials had" in lines[1]
    # without the previous calibration (--from-scratch) the floor goes with it
    assert C.calibrate(scn, "mrc", tmp_path, measure=machine(8)[0], log=lambda _: None,
                       from_previous=False)["time_scale"] == 8.0


def test_a_trial_too_short_for_the_workers_lateness_is_run_again_long_enough(tmp_path):
    """4 iterations of 50 ms of emulated time: 20 goodput samples of 10 ms, where the check
    needs 100; sized for twice that, 2 x 100 x 10 ms = 2 s, the trials run 4 x 2 / 0.2 = 40
    iterations: at once at the same k, and from then on."""
    scn = S.parse(SCN)
    ran = []

    def run_transport(trial, transport, tdir):
        n = trial.collective.iterations
        ran.append((trial.time_scale, n))
        fidelity = {"verdict": "ok" if trial.time_scale >= 2 else "degraded", "margins": {}}
        if n < 40:              # too few samples: the check did not vote
            fidelity["unmeasured"] = {"worker_lateness": "no worker logged 100+ goodput samples"}
        return {"fidelity": fidelity, "time_scale": trial.time_scale,
                "timed_start_ns": 10**9, "traffic_end_ns": 10**9 + n * 50 * 10**6}

    said = []
    measure = C.measure_on_fabric(scn, "mrc", tmp_path, run_transport, log=said.append)
    assert measure(1.0).verdict == "degraded"
    assert measure(2.0).verdict == "ok"
    assert ran == [(1.0, 4), (1.0, 40), (2.0, 40)]
    assert "the trials run 40 iterations from here" in said[0]


def test_a_trial_that_measured_the_workers_lateness_keeps_its_iterations():
    summary = {"fidelity": {"unmeasured": {"recovery_window_stalls": "no fault"}},
               "timed_start_ns": 0, "traffic_end_ns": 10**8}
    assert C.iterations_for_samples(summary, 6, 10.0) is None
    unmeasured = {"fidelity": {"unmeasured": {"worker_lateness": "too few"}}}
    assert C.iterations_for_samples(unmeasured, 6, 10.0) is None       # no duration: no guess
    # 6 iterations in 3 s, yet unmeasured (a worker's samples outside the timed window): at
    # least one more iteration
    assert C.iterations_for_samples({**unmeasured, "timed_start_ns": 0,
                                     "traffic_end_ns": 3 * 10**9}, 6, 10.0) == 7


def test_a_trial_that_more_iterations_do_not_lengthen_is_extended_once_only(tmp_path):
    """A schedule whose traffic stops a few iterations after its last fault lasts as long with
    40 iterations as with 4: the trial is run again once, then the search goes on with its 4."""
    scn = S.parse(SCN)
    ran = []

    def run_transport(trial, transport, tdir):
        ran.append(trial.collective.iterations)
        return {"fidelity": {"verdict": "ok", "margins": {},
                             "unmeasured": {"worker_lateness": "too few samples"}},
                "time_scale": trial.time_scale, "timed_start_ns": 0,
                "traffic_end_ns": 200 * 10**6}

    said = []
    measure = C.measure_on_fabric(scn, "mrc", tmp_path, run_transport, log=said.append)
    measure(1.0)
    measure(2.0)
    assert ran == [4, 40, 4]
    assert "stays unjudged" in said[1]
