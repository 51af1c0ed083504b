"""A transport's run over servers (emulation/cluster/run_servers.py), its parts that need no
ssh: where each host's processes keep the run's files, what the summary records of the clocks,
and one server left as it was. The whole, over a local server: tests/integration/
test_cluster_run.py."""
import subprocess
from pathlib import Path
from types import SimpleNamespace

from analysis.cpu_usage import CpuSample
from analysis.sched_profile import SchedSample, TaskStat
from emulation.cluster import run_servers as R
from emulation.cluster.fabric_servers import FabricServers
from emulation.cluster.placement import place
from model.clockalign import CLOCKS_FILE, Estimate
from model.topology import FabricSpec, Topology

TOPO = Topology(FabricSpec())         # 2 planes x 2 groups x 2 spines x 2 hosts


def runs(tmp_path, servers=("localhost", "root@b.example"), mode="pod", control=None):
    fab = SimpleNamespace(servers=FabricServers(TOPO, place(TOPO, list(servers), mode)))
    return R.RunServers(fab, tmp_path / "demo-20261201-010203" / "mrc", control)


def test_one_server_keeps_every_file_in_the_run_directory_and_does_nothing(tmp_path):
    one = R.RunServers(SimpleNamespace(servers=FabricServers(TOPO, None)), tmp_path / "mrc")
    assert not one.clustered and one.remote == []
    assert {one.dir_of(h.name) for h in TOPO.hosts} == {tmp_path / "mrc"}
    one.prepare(tmp_path / "mrc" / "worker.json")      # nothing there to prepare: no ssh
    one.follow("h0")
    one.publish(tmp_path / "x")
    one.collect()
    assert one.record() is None and one.errors == []
    assert not (tmp_path / "mrc" / CLOCKS_FILE).exists()    # one clock: nothing for the monitor


def test_a_host_of_another_server_keeps_its_files_in_that_servers_staging(tmp_path):
    r = runs(tmp_path)
    # pod: group 1 (h2, h3) on the second server
    assert r.dir_of("h0") == tmp_path / "demo-20261201-010203" / "mrc"
    assert r.dir_of("h2") == Path(
        "/var/tmp/mrclab-runs/root_b.example/demo-20261201-010203/mrc")
    assert r.is_remote("h3") and not r.is_remote("h1")


def test_servers_sharing_a_filesystem_keep_their_staging_apart(tmp_path):
    r = runs(tmp_path)
    assert len({r.staging(s) for s in ("b", "c", "b@c")}) == 3


def test_the_record_names_the_servers_each_hosts_server_and_the_clocks(tmp_path):
    r = runs(tmp_path)
    r.start["root@b.example"] = Estimate(1_500.0, 40.0, 1_000_000.0, 16)
    record = r.record()
    assert record["servers"] == ["localhost", "root@b.example"]
    assert record["hosts"] == {"h0": "localhost", "h1": "localhost",
                               "h2": "root@b.example", "h3": "root@b.example"}
    clock = record["clocks"]["root@b.example"]
    # without an end measurement the start's offset is held: no drift, its own error bound
    assert clock["drift_ns"] == 0 and clock["bound_ns"] == 40.0
    assert record["cpu"] == {"root@b.example": None}   # no window, no samples
    assert record["errors"] == []


def test_a_servers_cpu_is_judged_over_the_window_on_this_machines_clock(tmp_path):
    r = runs(tmp_path)
    # the server's clock is 1 s ahead; its samples every second, 2 cores, 100 ticks a second
    r.start["root@b.example"] = Estimate(1e9, 10.0, 0.0, 16)
    r.cpu_samples["root@b.example"] = [
        (CpuSample(int(1e9 * (i + 1)), 200 * i, 200 * i - busy, {"workers": w}), 100, 2)
        for i, busy, w in ((0, 0, 0), (1, 100, 50), (2, 300, 150), (3, 300, 150))]
    # our window [1 s, 2 s] is the server's [2 s, 3 s]: 200 of its 200 ticks busy, the workers
    # 100 ticks, 1 core
    cpu = r.record(int(1e9), int(2e9))["cpu"]["root@b.example"]
    assert cpu["busy_fraction"] == 1.0 and cpu["cores_by_role"]["workers"] == 1.0


def test_a_servers_scheduling_profile_is_taken_over_the_window_on_this_machines_clock(
        tmp_path):
    r = runs(tmp_path)
    # the server's clock is 1 s ahead; its loops' counters at its 1, 2 and 3 s
    r.start["root@b.example"] = Estimate(1e9, 10.0, 0.0, 16)
    r.sched_samples["root@b.example"] = [
        SchedSample(int(1e9 * t), {"endpoint_loops": TaskStat(on, wait, slices, wakeups, 0)},
                    {"endpoint_loops": 2})
        for t, on, wait, slices, wakeups in ((1, 0, 0, 0, 0), (2, 10**8, 2 * 10**7, 100, 50),
                                             (3, 5 * 10**8, 4 * 10**7, 300, 250))]
    # our window [1 s, 2 s] is the server's [2 s, 3 s]: 0.4 s on a CPU, 20 ms waiting,
    # 200 wake-ups, over 1 s
    profile = r.record(int(1e9), int(2e9))["sched_profile"]["root@b.example"]
    loops = profile["classes"]["endpoint_loops"]
    assert profile["window_s"] == 1.0 and loops["cores"] == 0.4
    assert loops["wait_cores"] == 0.02 and loops["wakeups_per_s"] == 200.0
    assert loops["wait_per_wakeup_us"] == 100.0 and loops["tasks"] == 2
    assert r.record()["sched_profile"] == {"root@b.example": None}     # no window


def test_the_alignment_interpolates_between_start_and_end(tmp_path):
    r = runs(tmp_path)
    r.start["root@b.example"] = Estimate(1_000.0, 10.0, 0.0, 16)
    r.end["root@b.example"] = Estimate(3_000.0, 30.0, 2_000_000_000.0, 16)
    align = r.alignment("root@b.example")
    # half-way (1 s on our clock) the server is 2_000 ns ahead: its 1_000_002_000 is our 1e9
    assert align.to_reference_ns(1_000_002_000) == 1_000_000_000
    assert align.bound_ns == 30.0 + 2_000.0


def test_the_staging_parent_removed_after_a_run_is_relative_to_the_root(tmp_path):
    r = runs(tmp_path)
    assert r._run_dir_on("root@b.example") == "root_b.example/demo-20261201-010203"


def test_the_publish_loop_writes_each_file_in_one_rename_and_answers(tmp_path):
    """PUBLISH_SCRIPT as a server's shell runs it: a name line and a body line in, the file
    there and "ok NAME" out; it ends with its input."""
    proc = subprocess.Popen(["sh", "-c", R.PUBLISH_SCRIPT, "publish", str(tmp_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate('stop-iteration.json\n{"iterations": 46}\n'
                              'stop-iteration.json\n{"iterations": 47}\n', timeout=30)
    assert out.splitlines() == ["ok stop-iteration.json"] * 2 and proc.returncode == 0
    assert (tmp_path / "stop-iteration.json").read_text() == '{"iterations": 47}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["stop-iteration.json"]   # no temporary left


def test_this_machines_wall_minus_monotonic_is_the_one_the_analysis_maps_captures_by(tmp_path):
    r = runs(tmp_path)
    r.tdir.mkdir(parents=True)
    # clock.json taken at the run's start: wall 5_000_000_007 at monotonic 2_000_000_000; a wall
    # clock stepped since must not move the servers' stamps away from where the analysis puts
    # this machine's own (analysis/pcap.py ClockOffset)
    (r.tdir / "clock.json").write_text('{"monotonic_ns": 2000000000, "realtime_ns": 5000000007}')
    assert r._here_wall_minus_mono() == 3_000_000_007
    (r.tdir / "clock.json").write_text('{"monotonic_ns": "x"}')
    now = R._wall_minus_mono_now()
    assert abs(r._here_wall_minus_mono() - now) < 10**8     # not the runner's: a fresh reading
