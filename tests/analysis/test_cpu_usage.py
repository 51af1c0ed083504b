"""CPU accounting of a run: /proc parsing and the per-role arithmetic (analysis/cpu_usage.py).
Expected figures are worked out by hand from proc(5)'s layout; the sampler that reads /proc
during a run is tested in tests/emulation/run/test_cpu_meter.py."""
import pytest

from analysis.cpu_usage import (CpuSample, ProcFormatError, describe, parse_pid_stat,
                                parse_proc_stat, usage_between, usage_in_window)

PROC_STAT = """cpu  100 5 50 800 20 3 7 0 10 0
cpu0 50 2 25 400 10 1 3 0 5 0
cpu1 50 3 25 400 10 2 4 0 5 0
intr 12345 0 0
ctxt 999
"""


def test_proc_stat_total_leaves_guest_out_and_idle_counts_iowait():
    # total: user+nice+system+idle+iowait+irq+softirq+steal = 100+5+50+800+20+3+7+0
    assert parse_proc_stat(PROC_STAT) == (985, 820, 2, 0)


def test_proc_stat_steal_is_the_eighth_counter_and_zero_where_the_kernel_has_none():
    assert parse_proc_stat(PROC_STAT.replace("3 7 0 10 0\ncpu0", "3 7 15 10 0\ncpu0")) == \
        (1000, 820, 2, 15)
    assert parse_proc_stat("cpu  100 5 50 800 20 3 7\ncpu0 1\n") == (985, 820, 1, 0)


def test_pid_stat_reads_fields_14_and_15_after_a_command_name_with_parentheses():
    text = "1234 (py (x) y) S 1 2 3 4 5 6 7 8 9 10 250 30 0 0 20 0 1 0\n"
    assert parse_pid_stat(text) == 280


@pytest.mark.parametrize("text", ["", "intr 1 2\n", "cpu  1 2 x 4 5\n", "cpu  1 2 3\n"])
def test_bad_proc_stat_raises_naming_the_file(text):
    with pytest.raises(ProcFormatError, match="/proc/stat"):
        parse_proc_stat(text)


@pytest.mark.parametrize("text", ["1234 no-paren S 1", "1 (a) S 1 2 3"])
def test_bad_pid_stat_raises(text):
    with pytest.raises(ProcFormatError, match="/proc/<pid>/stat"):
        parse_pid_stat(text)


def test_usage_between_busy_cores_roles_and_other():
    a = CpuSample(0, 1000, 600, {"workers": 100, "switches": 50})
    b = CpuSample(2_000_000_000, 1400, 640, {"workers": 300, "switches": 110})
    u = usage_between(a, b, hz=100, ncpu=2)
    # 400 machine ticks, 40 idle: 90% busy = 1.8 cores; workers 200 ticks / 100 Hz / 2 s = 1.0
    # core, switches 60 / 100 / 2 = 0.3, the remaining 0.5 busy core is nobody's role
    assert u["busy_fraction"] == 0.9 and u["busy_cores"] == 1.8
    assert u["cores_by_role"] == {"switches": 0.3, "workers": 1.0, "steal": 0.0, "other": 0.5}
    assert u["saturated"] is True and u["window_s"] == 2.0


def test_the_hypervisors_steal_is_its_own_share_not_other():
    a = CpuSample(0, 1000, 600, {"workers": 100}, steal_ticks=10)
    b = CpuSample(2_000_000_000, 1400, 640, {"workers": 300}, steal_ticks=50)
    u = usage_between(a, b, hz=100, ncpu=2)
    # 400 machine ticks, 360 busy = 1.8 cores; 40 of them stolen: 40 / 400 x 2 = 0.2 core;
    # workers 1.0 core; what is left of the busy cores, 0.6, is nobody's
    assert u["cores_by_role"] == {"workers": 1.0, "steal": 0.2, "other": 0.6}
    assert "steal 0.20" in describe("mrc", u)


def test_usage_below_the_saturation_line():
    a = CpuSample(0, 0, 0, {})
    b = CpuSample(1_000_000_000, 200, 120, {})     # 40% busy
    u = usage_between(a, b, hz=100, ncpu=2)
    assert u["busy_fraction"] == 0.4 and u["saturated"] is False
    assert "CPU-bound" not in describe("mrc", u) and "40% of 2 cores" in describe("mrc", u)


def test_window_uses_the_samples_that_enclose_it():
    s = [CpuSample(i * 1_000_000_000, 100 * i, 50 * i if i < 2 else 100 + 10 * (i - 2),
                   {"w": 10 * i}) for i in range(4)]
    # window [1.5 s, 2.5 s]: from the sample at 1 s to the one at 3 s
    u = usage_in_window(s, 1_500_000_000, 2_500_000_000, hz=100, ncpu=1)
    # machine ticks 300-100 = 200, idle 110-50 = 60: busy 0.7; w: 20 ticks over 2 s = 0.1 core
    assert u["window_s"] == 2.0 and u["busy_fraction"] == 0.7
    assert u["cores_by_role"]["w"] == 0.1
    assert usage_in_window(s[:1], 0, 1, hz=100, ncpu=1) is None
    assert usage_in_window(s, 5, 5, hz=100, ncpu=1) is None
