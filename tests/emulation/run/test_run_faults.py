"""The fault scheduler names the end of the traffic once its last entry is applied
([collective] iterations_after_faults, model/traffic_end.py), and only then."""
import time

from emulation.config import scenario as S
from emulation.run import run_faults
from model import traffic_end
from tests.helpers.scenario_texts import fabric_table

SCENARIO = """
name = "t"
""" + fabric_table(link_mbit=1) + """[collective]
kind = "allreduce"
message_bytes = 1048576
iterations = 40
iterations_after_faults = 3
timeout_s = 30
[[faults]]
at_iteration = 2
action = "link_down"
a = "t0p0g0"
b = "t1p0s1"
[[faults]]
at_iteration = 5
action = "link_up"
a = "t0p0g0"
b = "t1p0s1"
"""


class _Tail:
    """The workers' logs as the scheduler reads them: how many timed iterations the furthest
    rank completed, set by the test."""
    def __init__(self):
        self.timed_start_ns = 0
        self.done = 0

    def poll(self):
        pass

    def max_done(self):
        return self.done


class _Controller:
    """The controller's answer to every POST /fault (the real one needs a fabric)."""
    def __init__(self):
        self.commands = []

    def fault(self, command):
        self.commands.append(command)
        return {"ok": True, "t_ns": time.monotonic_ns()}

    def fault_batch(self, commands):
        self.commands += commands
        return {"ok": True, "t_ns": time.monotonic_ns()}


def _until(condition, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _scheduler(text, tmp_path):
    sched = run_faults.FaultScheduler(S.parse(text), _Tail(), 8787,
                                      tmp_path / "faults-applied.jsonl")
    sched.client = _Controller()
    return sched


def test_the_end_is_named_once_the_last_entry_is_applied(tmp_path):
    sched = _scheduler(SCENARIO, tmp_path)
    sched.start()
    try:
        sched.tail.done = 2
        _until(lambda: len(sched.client.commands) == 1)
        time.sleep(0.1)
        assert traffic_end.read(tmp_path) is None          # one entry still to come
        assert sched.planned_iterations() == 40
        sched.tail.done = 5                                # rank in iteration 5: link_up due
        _until(lambda: traffic_end.read(tmp_path) is not None)
    finally:
        sched.stop()
    # iteration 5 in progress, then 3 more (6, 7, 8): 9 timed iterations in all
    assert traffic_end.read(tmp_path) == 9
    assert sched.planned_iterations() == 9


def _every_entry_due(sched, done):
    """Start the scheduler with the furthest rank `done` iterations in; wait until it ends."""
    sched.tail.done = done
    sched.start()
    try:
        _until(lambda: not sched.is_alive())
    finally:
        sched.stop()


def test_without_the_key_no_end_is_named(tmp_path):
    sched = _scheduler(SCENARIO.replace("iterations_after_faults = 3\n", ""), tmp_path)
    _every_entry_due(sched, 5)
    assert len(sched.client.commands) == 2
    assert traffic_end.read(tmp_path) is None
    assert sched.planned_iterations() == 40


def test_an_end_past_the_scenarios_count_is_its_count(tmp_path):
    sched = _scheduler(SCENARIO.replace("at_iteration = 5", "at_iteration = 38"), tmp_path)
    _every_entry_due(sched, 38)
    assert traffic_end.read(tmp_path) == 40
