"""InputPrefetcher: iteration i's arrays come back from get(i); i + 1 is computed in the
background before anyone asks for it; out-of-order asks and failures behave."""
import threading

import pytest

from traffic.workload.iteration_inputs import InputPrefetcher


class Recorder:
    def __init__(self, fail_at=None):
        self.calls = []
        self.threads = []
        self.fail_at = fail_at
        self.started = {}

    def __call__(self, it):
        self.calls.append(it)
        self.threads.append(threading.current_thread().name)
        self.started.setdefault(it, threading.Event()).set()
        if it == self.fail_at:
            raise ValueError(f"bad iteration {it}")
        return ("inputs", it)


def test_each_iteration_once_in_order_and_the_next_one_ahead():
    rec = Recorder()
    with InputPrefetcher(rec, 2, 5) as pre:
        assert pre.get(2) == ("inputs", 2)
        # iteration 3 is computed without being asked for
        assert rec.started.setdefault(3, threading.Event()).wait(5)
        assert pre.get(3) == ("inputs", 3)
        assert pre.get(4) == ("inputs", 4)
    assert rec.calls == [2, 3, 4]           # nothing past stop, nothing twice
    assert all(name.startswith("iteration-inputs") for name in rec.threads)


def test_an_iteration_out_of_order_is_computed_on_the_spot():
    rec = Recorder()
    with InputPrefetcher(rec, 0, 10) as pre:
        assert pre.get(0) == ("inputs", 0)
        assert pre.get(7) == ("inputs", 7)
        assert pre.get(8) == ("inputs", 8)
    assert rec.calls.count(7) == 1 and 8 in rec.calls


def test_a_failure_is_raised_by_the_get_that_needs_it():
    rec = Recorder(fail_at=1)
    with InputPrefetcher(rec, 0, 3) as pre:
        assert pre.get(0) == ("inputs", 0)
        with pytest.raises(ValueError, match="bad iteration 1"):
            pre.get(1)


def test_empty_range_computes_nothing():
    rec = Recorder()
    with InputPrefetcher(rec, 4, 4) as pre:
        pass
    assert rec.calls == []
