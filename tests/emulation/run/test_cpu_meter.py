"""The CPU sampler of a run (emulation/run/cpu_meter.py) on a fake /proc tree and on a real process
that burns a known amount of CPU. Expected figures are worked out by hand from proc(5)'s layout;
the arithmetic on the samples is analysis/cpu_usage.py's (tests/analysis/test_cpu_usage.py)."""
import subprocess
import sys

from emulation.run.cpu_meter import CpuMeter, pids_from_files


def _fake_proc(root, total, idle, pids, steal=0):
    (root / "stat").write_text(f"cpu  {total - idle - steal} 0 0 {idle} 0 0 0 {steal} 0 0\n"
                               "cpu0 0\n")
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
                             "print('ready', flush=True)\n"
                             "sys.stdin.readline()\n"
                             "t = time.process_time()\n"
                             f"while time.process_time() - t < {burn_s}: pass\n"
                             "print('done', flush=True)\n"
                             "sys.stdin.readline()\n"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        # the interpreter's own start-up is not the burn: the meter starts once it is over
        assert proc.stdout.readline() == "ready\n"
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
    _fake_proc(proc, 1200, 550, {}, steal=20)
    meter.sample()
    meter.write_csv(tmp_path / "cpu.csv")
    rows = (tmp_path / "cpu.csv").read_text().splitlines()
    assert rows[0] == "t_ns,busy_fraction,workers_cores,steal_cores,other_cores" and len(rows) == 2
    # 200 ticks, 50 idle: 0.75 of the one core busy; 20 of them stolen by the hypervisor (0.1
    # core), so 0.65 core busy with nothing the roles or the steal account for
    assert rows[1].split(",")[1:] == ["0.75", "0.0", "0.1", "0.65"]


def test_a_meter_that_cannot_read_proc_records_why_and_never_raises(tmp_path):
    (tmp_path / "stat").write_text("intr 1 2\n")          # not what proc(5) documents
    meter = CpuMeter({"workers": lambda: []}, proc=str(tmp_path)).start()
    meter.stop()
    assert "ProcFormatError" in meter.error and meter.samples == []
    assert meter.usage(0, 10**9) is None
