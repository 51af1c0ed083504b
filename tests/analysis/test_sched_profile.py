"""The lateness profile's arithmetic (analysis/sched_profile.py) on made-up /proc texts. The
layouts are the kernel's (Documentation/scheduler/sched-stats.rst: schedstat is on-CPU ns,
run-queue wait ns, timeslices; proc(5): status' *_ctxt_switches lines); every expected figure
is worked out by hand in the comments."""
import pytest

from analysis.sched_profile import (SchedFormatError, SchedSample, TaskStat, class_totals,
                                    describe, parse_ctxt_switches, parse_schedstat,
                                    profile_between, profile_in_window, task_stat)

STATUS = ("Name:\tpython3\nState:\tS (sleeping)\nThreads:\t3\n"
          "voluntary_ctxt_switches:\t{v}\nnonvoluntary_ctxt_switches:\t{n}\n")


def _task(on, wait, slices, v, n):
    return task_stat(f"{on} {wait} {slices}\n", STATUS.format(v=v, n=n))


def test_parse_schedstat_and_status():
    assert parse_schedstat("26251213410 8362466967 29774\n") == (26251213410, 8362466967, 29774)
    assert parse_ctxt_switches(STATUS.format(v=5515, n=24259)) == (5515, 24259)


@pytest.mark.parametrize("text", ["", "1 2", "1 2 3 4", "1 x 3"])
def test_a_malformed_schedstat_is_named(text):
    with pytest.raises(SchedFormatError, match="schedstat"):
        parse_schedstat(text)


def test_a_status_without_the_switch_counts_is_named():
    with pytest.raises(SchedFormatError, match="nonvoluntary_ctxt_switches"):
        parse_ctxt_switches("Name:\tx\nvoluntary_ctxt_switches:\t3\n")


def test_two_samples_of_two_classes_by_hand():
    # endpoint loop: two threads of one class; switch: one task
    start = {(10, 10): ("loop", _task(1_000_000, 500_000, 10, 8, 2)),
             (10, 11): ("loop", _task(2_000_000, 0, 5, 5, 0)),
             (20, 20): ("switch", _task(0, 0, 0, 0, 0))}
    end = {(10, 10): ("loop", _task(301_000_000, 400_500_000, 1010, 808, 202)),
           (10, 11): ("loop", _task(102_000_000, 100_000_000, 205, 205, 0)),
           (20, 20): ("switch", _task(200_000_000, 50_000_000, 100, 100, 0))}
    a = class_totals(start, 1_000_000_000)
    b = class_totals(end, 3_000_000_000)            # 2 s later
    p = profile_between(a, b)
    assert p["window_s"] == 2.0
    loop = p["classes"]["loop"]
    # on-CPU: (300 + 100) ms in 2 s = 0.2 cores; wait: (400 + 100) ms / 2 s = 0.25
    assert loop["cores"] == 0.2 and loop["wait_cores"] == 0.25
    # wake-ups: 800 + 200 voluntary switches in 2 s = 500/s; wait per wake-up 500 ms / 1000
    assert loop["wakeups_per_s"] == 500.0 and loop["wait_per_wakeup_us"] == 500.0
    assert loop["preemptions_per_s"] == 100.0                       # 200 in 2 s
    # 1200 timeslices: wait 500 ms / 1200 = 416.7 us; run 400 ms / 1200 = 333.3 us
    assert loop["wait_per_slice_us"] == 416.7 and loop["run_per_slice_us"] == 333.3
    assert loop["bound"] == "cpu" and loop["tasks"] == 2
    switch = p["classes"]["switch"]
    # 100 slices: wait 500 us each, run 2000 us each: its own work dominates
    assert switch["wait_per_slice_us"] == 500.0 and switch["run_per_slice_us"] == 2000.0
    assert switch["bound"] == "work" and switch["cores"] == 0.1


def test_an_exited_task_keeps_its_last_reading_and_a_new_one_counts_from_zero():
    last = {(1, 1): ("w", _task(100, 10, 1, 1, 0))}
    a = class_totals(last, 0, classes=("w", "idle"))
    # task 1 exited after sample a: the reader keeps its last reading, so it adds nothing
    last[(2, 2)] = ("w", _task(300, 30_000, 3, 3, 0))   # born after sample a
    b = class_totals(last, 10**9, classes=("w", "idle"))
    w = profile_between(a, b)["classes"]["w"]
    assert w["wakeups_per_s"] == 3.0 and w["wait_per_wakeup_us"] == 10.0   # 30 us / 3
    assert profile_between(a, b)["classes"]["idle"]["bound"] == "idle"


def test_window_picks_the_samples_around_it():
    s = 10**9
    # the class used a quarter of a core up to 1 s, then three quarters
    used = {0: 0, s: s // 4, 2 * s: s // 4 + 3 * s // 4, 3 * s: s // 4 + 6 * s // 4}
    samples = [SchedSample(t, {"c": TaskStat(on_cpu_ns=u, slices=1 + t // s)})
               for t, u in used.items()]
    # start 1.5 s -> the sample at 1 s; end 2.5 s -> the one at 3 s: 1.5 s of CPU in 2 s
    p = profile_in_window(samples, 3 * s // 2, 5 * s // 2)
    assert p["window_s"] == 2.0 and p["classes"]["c"]["cores"] == 0.75
    # a start before every sample takes the first; an end after every sample the last
    assert profile_in_window(samples, -1, 10 * s)["window_s"] == 3.0
    assert profile_in_window(samples[:1], 0, 10) is None
    assert profile_in_window(samples, 20, 10) is None


def test_a_sample_before_the_first_is_refused():
    with pytest.raises(ValueError, match="later"):
        profile_between(SchedSample(5), SchedSample(5))


def test_describe_names_each_busy_class_and_the_setting():
    a = class_totals({1: ("loop", _task(0, 0, 0, 0, 0)), 2: ("idle", _task(0, 0, 0, 0, 0))}, 0)
    b = class_totals({1: ("loop", _task(10**8, 2 * 10**8, 100, 100, 0)),
                      2: ("idle", _task(0, 0, 0, 0, 0))}, 10**9)
    line = describe("mrc", profile_between(a, b), "hifi")
    # 200 ms of wait over 100 timeslices = 2000 us each; 200 ms in 1 s
    assert line == "mrc: run-queue wait (scheduling hifi): loop 2000 us/slice, 200 ms/s (cpu)"
