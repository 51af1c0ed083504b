"""emulation/run/run_progress.py's progress bar: the wall time left at the median iteration so far
(the log follower itself is tested with the run's summaries, tests/emulation/run/test_run_summary*.py)."""
from emulation.run import run_progress
from emulation.run.run_progress import Progress, seconds_left


def test_the_time_left_is_what_remains_at_the_median_iteration():
    # durations 2, 2 and 16 s (a stall): median 2 s; 56 of 60 left -> 112 s
    assert seconds_left([2.0, 2.0, 16.0], 4, 60) == 112.0


def test_no_estimate_before_two_iterations_are_timed_nor_once_all_are_done():
    assert seconds_left([], 1, 60) is None
    assert seconds_left([3.0], 2, 60) is None
    assert seconds_left([3.0, 5.0], 3, 60) == 228.0       # median 4 s, 57 left
    assert seconds_left([3.0, 5.0], 60, 60) is None


def test_the_bar_times_each_iteration_and_a_stall_does_not_inflate_the_estimate(monkeypatch,
                                                                                 capsys):
    clock = iter([0.0, 10.0, 14.0, 30.0, 36.0])
    monkeypatch.setattr(run_progress.time, "monotonic", lambda: next(clock))
    bar = Progress("mrc", 60)              # started at t = 0
    bar.tty = False
    bar.update(1, 0, 2)                    # t = 10: the first iteration seen, nothing timed yet
    bar.update(3, 0, 2)                    # t = 14: two in 4 s (not printed: < 5 s since last)
    bar.update(4, 1, 2)                    # t = 30: one in 16 s, a stall
    bar.update(4, 1, 2)                    # t = 36: nothing new
    assert bar.durations == [2.0, 2.0, 16.0]
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].endswith("1/60 iterations, faults 0/2,  10.0 s")
    # t = 30: median 2 s, 56 left
    assert lines[1].endswith("4/60 iterations, faults 1/2,  30.0 s, about 112 s left")
    assert lines[2].endswith("4/60 iterations, faults 1/2,  36.0 s, about 112 s left")
