"""emulation/run/run_progress.py's progress bar: the wall time left at the pace so far (the log
follower itself is tested with the run's summaries, tests/emulation/run/test_run_summary*.py)."""
from emulation.run import run_progress
from emulation.run.run_progress import Progress, seconds_left


def test_the_time_left_is_the_pace_since_the_first_iteration_times_what_remains():
    # first seen 1 done at t = 10 s; at t = 30 s 5 of 60 are done: 4 iterations in 20 s,
    # 55 left at 5 s each = 275 s
    assert seconds_left((1, 10.0), 5, 60, 30.0) == 275.0


def test_no_estimate_before_two_iterations_since_the_first_nor_once_all_are_done():
    assert seconds_left(None, 0, 60, 5.0) is None
    assert seconds_left((1, 10.0), 2, 60, 20.0) is None      # one since the first: too few
    assert seconds_left((1, 10.0), 3, 60, 20.0) == 285.0     # two in 10 s, 57 left
    assert seconds_left((1, 10.0), 60, 60, 99.0) is None


def test_the_bar_says_how_long_is_left_once_it_can_tell(monkeypatch, capsys):
    clock = iter([0.0, 10.0, 30.0])
    monkeypatch.setattr(run_progress.time, "monotonic", lambda: next(clock))
    bar = Progress("mrc", 60)              # started at t = 0
    bar.tty = False
    bar.update(1, 0, 2)                    # t = 10: the first iteration seen, no estimate yet
    bar.update(5, 1, 2)                    # t = 30: 5 done, 4 since t = 10
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].endswith("1/60 iterations, faults 0/2,  10.0 s")
    assert lines[1].endswith("5/60 iterations, faults 1/2,  30.0 s, about 275 s left")
