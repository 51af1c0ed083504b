"""The scheduler meter of a run (emulation/run/sched_meter.py) on a fake /proc tree, and on this
test's own process. The arithmetic is analysis/sched_profile.py's
(tests/analysis/test_sched_profile.py); here: which task lands in which class, and what a
vanished task or a malformed file does."""
import os
import threading

from emulation.run.sched_meter import SchedMeter

STATUS = "Name:\tw\nvoluntary_ctxt_switches:\t{v}\nnonvoluntary_ctxt_switches:\t{n}\n"


def _task(root, pid, tid, on, wait, slices, v, n):
    d = root / str(pid) / "task" / str(tid)
    d.mkdir(parents=True, exist_ok=True)
    (d / "schedstat").write_text(f"{on} {wait} {slices}\n")
    (d / "status").write_text(STATUS.format(v=v, n=n))


def test_main_threads_and_other_threads_go_to_their_classes(tmp_path):
    _task(tmp_path, 7, 7, 100, 10, 1, 4, 0)       # the worker's main thread: the packet loop
    _task(tmp_path, 7, 8, 200, 20, 2, 5, 1)       # its prefetch thread
    _task(tmp_path, 9, 9, 400, 40, 4, 6, 2)       # ovs-vswitchd
    meter = SchedMeter({"loops": lambda: [7], "switch": lambda: [9]},
                       thread_classes={"loops": "helpers"}, proc=str(tmp_path))
    meter.sample()
    s = meter.samples[-1]
    assert s.classes["loops"].on_cpu_ns == 100 and s.classes["helpers"].wait_ns == 20
    assert s.classes["switch"].voluntary == 6 and s.tasks == {"loops": 1, "switch": 1,
                                                              "helpers": 1}


def test_a_task_that_vanishes_keeps_its_last_reading(tmp_path):
    _task(tmp_path, 7, 7, 100, 10, 1, 4, 0)
    _task(tmp_path, 7, 8, 200, 20, 2, 5, 1)
    meter = SchedMeter({"loops": lambda: [7]}, proc=str(tmp_path))
    meter.sample()
    for name in ("schedstat", "status"):
        (tmp_path / "7" / "task" / "8" / name).unlink()
    (tmp_path / "7" / "task" / "8").rmdir()                      # thread 8 ended
    _task(tmp_path, 7, 7, 150, 10, 2, 5, 0)
    meter.sample()
    # 150 (thread 7 now) + 200 (thread 8's last reading)
    assert meter.samples[-1].classes["loops"].on_cpu_ns == 350 and meter.error is None


def test_a_malformed_file_stops_the_meter_with_the_reason(tmp_path):
    _task(tmp_path, 7, 7, 100, 10, 1, 4, 0)
    (tmp_path / "7" / "task" / "7" / "schedstat").write_text("garbage\n")
    meter = SchedMeter({"loops": lambda: [7]}, proc=str(tmp_path))
    meter.sample()
    assert meter.samples == [] and "schedstat" in meter.error
    meter.sample()                                               # no raise, nothing more
    assert meter.samples == []


def test_a_pid_that_is_gone_is_skipped(tmp_path):
    meter = SchedMeter({"loops": lambda: [12345]}, proc=str(tmp_path))
    meter.sample()
    assert meter.error is None and meter.samples[-1].tasks == {"loops": 0}


def test_this_process_threads_are_read_from_the_real_proc():
    started, stop = threading.Event(), threading.Event()
    t = threading.Thread(target=lambda: (started.set(), stop.wait(5)))
    t.start()
    try:
        started.wait(5)
        meter = SchedMeter({"me": lambda: [os.getpid()]}, thread_classes={"me": "others"})
        meter.sample()
        s = meter.samples[-1]
        assert s.tasks["me"] == 1 and s.tasks["others"] >= 1
        assert s.classes["me"].on_cpu_ns > 0 and s.classes["me"].slices > 0
    finally:
        stop.set()
        t.join()
