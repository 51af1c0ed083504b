"""Another server's CPU meter (emulation/cluster/server_meter.py): its workers found by the
marker in their command line, its line format (CPU and scheduler counters) read back, and the
meter itself run on this machine's /proc until its input ends."""
import signal
import subprocess
import sys

import pytest

from analysis.cpu_usage import CpuSample
from analysis.sched_profile import SchedSample, TaskStat
from emulation.cluster import server_meter as M
from tests.helpers.paths import REPO


def fake_proc(tmp_path, cmdlines):
    for pid, cmd in cmdlines.items():
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "cmdline").write_bytes(cmd)
    (tmp_path / "self").mkdir()
    return tmp_path


def test_the_workers_are_the_interpreters_carrying_the_marker_not_their_wrappers(tmp_path):
    marker = "/var/tmp/mrclab-runs/b/demo-1/mrc/worker.json"
    proc = fake_proc(tmp_path, {
        10: f"python\0-m\0traffic.workload.worker\0--config\0{marker}\0".encode(),
        11: b"tail\0-F\0/var/tmp/mrclab-runs/b/demo-1/mrc/worker-h2.jsonl\0",
        12: f"python\0-m\0emulation.cluster.server_meter\0--marker\0{marker}\0".encode(),
        13: b"ovs-vswitchd\0",
        # the ssh tie's shell around a worker carries the worker's whole command line
        14: f"sh\0-c\0...\0tied\0python\0-m\0traffic.workload.worker\0--config\0{marker}\0"
            .encode(),
        15: f"mnexec\0-a\0123\0python\0-m\0traffic.workload.worker\0--config\0{marker}\0"
            .encode()})
    assert sorted(M.pids_with(marker, proc, own=12)) == [10]


def test_a_sample_line_reads_back_as_it_was_written():
    s = CpuSample(123, 1000, 400, {"workers": 7, "switches": 9}, 3)
    assert M.parse_line(M.sample_line(s, 100, 2) + "\n") == (s, 100, 2)
    assert M.parse_sched(M.sample_line(s, 100, 2)) is None        # no scheduler counters
    sched = SchedSample(123, {"endpoint_loops": TaskStat(5_000, 700, 9, 8, 1),
                              "ovs_vswitchd": TaskStat(9_000, 100, 3, 2, 1)},
                        {"endpoint_loops": 2, "ovs_vswitchd": 36})
    line = M.sample_line(s, 100, 2, sched)
    assert M.parse_line(line) == (s, 100, 2) and M.parse_sched(line) == sched


@pytest.mark.parametrize("sched", ['{"endpoint_loops": [1, 2, 3]}', '{"x": "no"}', '[1]',
                                   '{"x": [1, 2, 3, 4, "five"]}'])
def test_scheduler_counters_that_are_not_five_integers_are_named(sched):
    line = ('{"t_ns": 1, "total": 2, "idle": 1, "steal": 0, "roles": {}, "hz": 100, '
            f'"ncpu": 2, "sched": {sched}}}')
    with pytest.raises(M.MeterLineError, match="not a scheduler sample line"):
        M.parse_sched(line)


@pytest.mark.parametrize("line", ["not json", '{"t_ns": 1}', '[1, 2]',
                                  '{"t_ns": 1, "total": 2, "idle": 1, "steal": 0, '
                                  '"roles": 5, "hz": 100, "ncpu": 2}'])
def test_what_is_not_a_sample_is_named(line):
    with pytest.raises(M.MeterLineError, match="not a CPU sample line"):
        M.parse_line(line)


def test_the_meter_samples_this_machine_until_it_is_stopped():
    """As the tie to its ssh connection runs it (model/ssh.py): its own input /dev/null, which
    must not stop it; SIGTERM does."""
    meter = subprocess.Popen([sys.executable, "-m", "emulation.cluster.server_meter",
                              "--marker", "no-such-run", "--interval", "0.05"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        lines = [meter.stdout.readline() for _ in range(3)]
        assert all(line.endswith("\n") for line in lines), (lines, meter.stderr.read())
    finally:
        meter.send_signal(signal.SIGTERM)
        rc = meter.wait(60)
    assert rc == 0
    sample, hz, ncpu = M.parse_line(lines[0])
    assert hz > 0 and ncpu >= 1 and sample.total_ticks > 0
    assert sample.role_ticks == {"switches": sample.role_ticks["switches"], "workers": 0}
    # the scheduler counters of the classes this machine's runner profiles, none of whose
    # workers run here
    sched = M.parse_sched(lines[0])
    assert set(sched.classes) == {"endpoint_loops", "worker_threads", "ovs_vswitchd",
                                  "ovsdb_server"}
    assert sched.tasks["endpoint_loops"] == 0 and sched.t_ns == sample.t_ns
