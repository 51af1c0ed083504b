"""CPU accounting of a run: /proc parsing and the per-role arithmetic (analysis/cpu_usage.py),
and the sampler (emulation/cpu_meter.py) on a fake /proc tree and on a real process that burns
a known amount of CPU. Expected figures are worked out by hand from proc(5)'s layout."""
import os
import subprocess
import sys

import pytest

from analysis.cpu_usage import (CpuSample, ProcFormatError, describe, parse_pid_stat,
                                parse_proc_stat, usage_between, usage_in_window)
from emulation.cpu_meter import CpuMeter, pids_from_files

PROC_STAT = """cpu  100 5 50 800 20 3 7 0 10 0
cpu0 50 2 25 400 10 1 3 0 5 0
cpu1 50 3 25 400 10 2 4 0 5 0
intr 12345 0 0
ctxt 999
"""


def test_proc_stat_total_leaves_guest_out_and_idle_counts_iowait():
    # total: user+nice+system+idle+iowait+irq+softirq+steal = 100+5+50+800+20+3+7+0
    assert parse_proc_stat(PROC_STAT) == (985, 820, 2)


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
    assert u["cores_by_role"] == {"switches": 0.3, "workers": 1.0, "other": 0.5}
    assert u["saturated"] is True and u["window_s"] == 2.0


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


def _fake_proc(root, total, idle, pids):
    (root / "stat").write_text(f"cpu  {total - idle} 0 0 {idle} 0 0 0 0 0 0\ncpu0 0\n")
    for pid, ticks in pids.items():
        (root / str(pid)).mkdir(exist_ok=True)
        (root / str(pid) / "stat").write_text(f"{pid} (w) S 1 2 3 4 5 6 7 8 9 10 {ticks} 0 0\n")


def test_meter_keeps_an_exited_process_last_reading(tmp_path):
    _fake_proc(tmp_path, 1000, 500, {11: 40, 12: 60})
    meter = CpuMeter({"workers": lambda: [11, 12]}, proc=str(tmp_path))
    first = meter.sample()
    assert first.role_ticks == {"workers": 100}
    _fake_proc(tmp_path, 1100, 520, {11: 90})
    (tmp_path / "12" / "stat").unlink()              # pid 12 exited after its 60 ticks
    assert meter.sample().role_ticks == {"workers": 150}


def test_meter_measures_a_process_that_burns_known_cpu():
    burn_s = 0.4
    proc = subprocess.Popen([sys.executable, "-c",
                             "import sys, time\n"
                             "sys.stdin.readline()\n"
                             "t = time.process_time()\n"
                             f"while time.process_time() - t < {burn_s}: pass\n"
                             "print('done', flush=True)\n"
                             "sys.stdin.readline()\n"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        meter = CpuMeter({"burner": lambda: [proc.pid]}, interval_s=0.05).start()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "done\n"
        meter.stop()                                  # its last sample: after the burn
        ticks = [s.role_ticks["burner"] for s in meter.samples]
        used = (ticks[-1] - ticks[0]) / meter.hz
        # the burn, plus at most a few ticks of interpreter work around it
        assert burn_s - 0.02 <= used <= burn_s + 0.1, used
        assert ticks == sorted(ticks) and len(ticks) >= 3 and meter.error is None
    finally:
        proc.stdin.close()
        proc.wait(5)


def test_pid_files(tmp_path):
    (tmp_path / "a.pid").write_text("4242\n")
    (tmp_path / "b.pid").write_text("garbage")
    files = [tmp_path / "a.pid", tmp_path / "b.pid", tmp_path / "none.pid"]
    assert pids_from_files(files) == [4242]


def test_meter_writes_one_csv_row_per_interval(tmp_path):
    proc = tmp_path / "proc"
    proc.mkdir()
    _fake_proc(proc, 1000, 500, {})
    meter = CpuMeter({"workers": lambda: []}, proc=str(proc))
    meter.sample()
    _fake_proc(proc, 1200, 550, {})
    meter.sample()
    meter.write_csv(tmp_path / "cpu.csv")
    rows = (tmp_path / "cpu.csv").read_text().splitlines()
    assert rows[0] == "t_ns,busy_fraction,workers_cores,other_cores" and len(rows) == 2
    assert rows[1].split(",")[1] == "0.75"             # 200 ticks, 50 idle


def test_a_meter_that_cannot_read_proc_records_why_and_never_raises(tmp_path):
    (tmp_path / "stat").write_text("intr 1 2\n")          # not what proc(5) documents
    meter = CpuMeter({"workers": lambda: []}, proc=str(tmp_path)).start()
    meter.stop()
    assert "ProcFormatError" in meter.error and meter.samples == []
    assert meter.usage(0, 10**9) is None
