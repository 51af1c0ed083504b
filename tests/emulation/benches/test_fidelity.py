"""`mrclab bench fidelity`'s pure pieces: the time scale both runs share, the busy processes it
starts and stops by PID, the median it reports. (The bench itself runs two fabric runs.)"""
import os

import pytest

from emulation.benches import fidelity as B
from model.argtypes import UsageError

SCENARIO = """name = "x"
[fabric]
planes = 2
time_scale = "auto"
[short]
time_scale = 0.3
"""


def test_time_scale_read_and_pinned():
    assert B.scenario_time_scale(SCENARIO) == "auto"
    assert B.scenario_time_scale('name = "x"\n[fabric]\nplanes = 2\n') == 1
    pinned = B.pin_time_scale(SCENARIO, 3)
    assert B.scenario_time_scale(pinned) == 3
    assert "[short]\ntime_scale = 0.3" in pinned          # the short table's own key is kept
    with pytest.raises(UsageError, match="not valid TOML"):
        B.scenario_time_scale("[fabric")


def test_busy_processes_are_started_and_stopped_by_pid():
    procs = B.start_busy(2)
    pids = [p.pid for p in procs]
    assert all(os.path.exists(f"/proc/{pid}") for pid in pids)
    B.stop_busy(procs)
    assert all(p.returncode is not None for p in procs)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in pids)


def test_median_iteration():
    # median of 10, 30, 20 (and a missing 0) is 20
    assert B.median_iteration_ms({"iteration_times_ms": [10.0, 30.0, 0, 20.0]}) == 20.0
    assert B.median_iteration_ms({}) is None


def test_unreadable_scenario_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="cannot read scenario"):
        B.fidelity_bench(tmp_path / "missing.toml")
