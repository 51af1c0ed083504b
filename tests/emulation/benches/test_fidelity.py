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
fault_time_factor = 0.3
fabric_time_scale = 1
"""


def test_time_scale_read_and_pinned():
    assert B.scenario_time_scale(SCENARIO) == "auto"
    default = 'name = "x"\n[fabric]\nplanes = 2\n'
    assert B.scenario_time_scale(default) == "auto"           # the key's default
    pinned = B.pin_time_scale(SCENARIO, 3)
    assert B.scenario_time_scale(pinned) == 3
    assert "[short]\nfault_time_factor = 0.3" in pinned    # the short table's own keys are kept
    assert B.scenario_time_scale(B.pin_time_scale(default, 3)) == 3
    assert B.scenario_time_scale(B.pin_time_scale('name = "x"\n', 3)) == 3
    with pytest.raises(UsageError, match="not valid TOML"):
        B.scenario_time_scale("[fabric")


def test_the_bench_runs_the_short_version_at_the_fabric_time_scale():
    """The test suite pins the short versions' scale ([short] fabric_time_scale); the bench
    measures the calibrated one, so it drops that pin."""
    unpinned = B.unpin_short(SCENARIO)
    assert "fabric_time_scale" not in unpinned
    assert unpinned.endswith("[short]\nfault_time_factor = 0.3\n")


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
