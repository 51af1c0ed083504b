"""The fidelity monitor in time (analysis/fidelity_windows.py): a stall placed by hand inside or
outside a fault's recovery window, from each source of per-time evidence (worker samples, OVS
stalls, endpoint lateness snapshots), the time-weighted stall fraction and the CPU meter's
saturated share. Every time below is chosen; expected values follow by arithmetic."""
import json

import pandas as pd
import pytest

from analysis import fidelity as F
from analysis import fidelity_verdict as FV
from analysis import fidelity_windows as W
from emulation.run import run_summary
from model.events import Event
from model.lateness import lateness_bucket, lateness_bucket_floor_ns
from tests.helpers.synth import write_endpoint_log

MS = 1_000_000
RTT = 2 * MS                 # every test's base RTT: the stall bound is 0.5 RTT = 1 ms
T0 = 1_000 * MS              # the workers' first sample


def worker_samples(tdir, late_at: dict, n=201, host="h0"):
    """Goodput samples every 10 ms from T0 (sample k due at T0 + 10k ms), sample k late by
    late_at.get(k, 0) ms, plus the off-grid sample taken at exit."""
    times = [T0] + [T0 + i * 10 * MS + int(late_at.get(i, 0) * MS) for i in range(1, n)]
    times.append(times[-1] + 3)
    (tdir / f"worker-{host}.jsonl").write_text("\n".join(
        json.dumps({"t_ns": t, "host": host, "event": Event.GOODPUT}) for t in times) + "\n")


def test_a_worker_stall_voids_only_the_window_it_lands_in(tmp_path):
    # sample 50 is due at 1.5 s and comes 3 ms late: the stall [1.500, 1.503] s
    worker_samples(tmp_path, {50: 3})
    inside = (T0 + 400 * MS, 200.0)      # window [1.4, 1.6] s
    before = (T0 + 400 * MS, 50.0)       # window [1.4, 1.45] s: recovered before the stall
    judged = W.recovery_windows(tmp_path, {}, RTT, [inside], None)
    # 3 ms late over a 1 ms bound: 3x
    assert judged[0]["void"] and judged[0]["ratio"] == pytest.approx(3.0)
    assert "worker h0 ran 3.00 ms late" in judged[0]["reason"]
    judged = W.recovery_windows(tmp_path, {}, RTT, [before], None)
    assert not judged[0]["void"] and judged[0]["ratio"] == 0 and judged[0]["reason"] is None


def test_a_long_window_is_judged_on_the_p99_of_its_worker_samples(tmp_path):
    # the window [T0, T0 + 2 s] holds the grid samples 0..200: 201 samples. Their p99 (inverted
    # CDF) is the ceil(0.99 x 201) = 199th smallest: two stalls of 3 ms leave it at 0, a third
    # makes it 3 ms (3x the 1 ms bound), as the whole run's worker_lateness reads its samples
    long_window = (T0, 2_000.0)
    worker_samples(tmp_path, {40: 3, 120: 3})
    [judged] = W.recovery_windows(tmp_path, {}, RTT, [long_window], None)
    assert not judged["void"] and judged["ratio"] == 0
    worker_samples(tmp_path, {40: 3, 120: 3, 160: 3})
    [judged] = W.recovery_windows(tmp_path, {}, RTT, [long_window], None)
    assert judged["void"] and judged["ratio"] == pytest.approx(3.0)
    assert "p99 of its 201 samples in the window" in judged["reason"]


def test_a_fault_never_recovered_is_judged_up_to_the_next_fault(tmp_path):
    worker_samples(tmp_path, {50: 3})
    # fault 1 at 1.2 s never recovered: its window runs to fault 2 at 1.45 s, before the stall;
    # fault 2 never recovered either: its window runs to the end of the traffic, 1.9 s
    faults = [(T0 + 200 * MS, None), (T0 + 450 * MS, None)]
    judged = W.recovery_windows(tmp_path, {}, RTT, faults, T0 + 900 * MS)
    assert [w["void"] for w in judged] == [False, True]
    assert [w["end_ns"] for w in judged] == [T0 + 450 * MS, T0 + 900 * MS]


def write_ovs(tdir, stalls, offset=7 * 10**18):
    """ovs_stalls.json with stalls (end on the monotonic clock, wall ms), clock.json's offset."""
    (tdir / "clock.json").write_text(json.dumps({"monotonic_ns": 0, "realtime_ns": offset}))
    (tdir / W.OVS_STALLS_FILE).write_text(json.dumps({"stalls": [
        {"t_realtime_ns": end + offset, "ms": ms, "line": "..."} for end, ms in stalls],
        "error": None}))


def test_an_ovs_stall_on_the_logs_clock_at_a_time_scale(tmp_path):
    # k = 2: the stall logged at wall 6 s for 1000 ms spans wall [5, 6] s = emulated [2.5, 3] s
    (tmp_path / "worker.json").write_text(json.dumps({"time_scale": 2}))
    write_ovs(tmp_path, [(6_000 * MS, 1000)])
    assert W.ovs_stall_spans(tmp_path) == [(2_500 * MS, 3_000 * MS, 1000.0)]
    judged = W.recovery_windows(tmp_path, {}, RTT, [(2_600 * MS, 100.0), (3_100 * MS, 100.0)],
                                None, workers={})
    # 500 emulated ms of stall over a bound of 1 base RTT (2 ms): 250x
    assert judged[0]["void"] and judged[0]["ratio"] == pytest.approx(250.0)
    assert "ovs-vswitchd did not poll for 1000 ms" in judged[0]["reason"]
    assert not judged[1]["void"] and judged[1]["ratio"] is None      # no evidence there


def test_endpoint_lateness_is_judged_on_the_snapshots_around_the_window(tmp_path):
    # snapshots at 1, 2, 3 s: 1000 deadlines at 0.1 ms each second, and between 2 s and 3 s also
    # 20 at 3 ms (2% of that second: its p99 is 3 ms' bucket, 3,145,728 ns, 1.57 RTTs)
    fast, slow = lateness_bucket(100_000), lateness_bucket(3 * MS)
    write_endpoint_log(tmp_path / "endpoint-h0.jsonl", [
        (1_000 * MS, [[fast, 1000]]), (2_000 * MS, [[fast, 2000]]),
        (3_000 * MS, [[fast, 3000], [slow, 20]])], base_rtt_ns=RTT)
    logs = F.endpoint_logs(tmp_path, [])
    judged = W.recovery_windows(tmp_path, logs, RTT, [(1_500 * MS, 10.0), (2_500 * MS, 10.0)],
                                None, workers={}, ovs=[])
    p99 = lateness_bucket_floor_ns(slow + 1)
    assert p99 == 3_145_728
    assert not judged[0]["void"]
    assert judged[1]["void"] and judged[1]["ratio"] == pytest.approx(p99 / RTT / 0.5, rel=1e-3)
    # the whole run's p99 is a 0.1 ms deadline (20 late of 3020): it hides this stall
    hist = W.window_histograms(logs["h0"]["lateness"], 0, 3_000 * MS)["timer"]
    assert W.histogram_percentile_ns(hist, 99.0) < MS


def test_endpoints_in_a_window_are_judged_without_the_propagation_workers_with_it(tmp_path):
    # Endpoint snapshots at 1 and 2 s: 1000 deadlines at 0.1 ms, then 20 more at 0.3 ms (2%:
    # p99 in 0.3 ms' bucket, upper edge 327,680 ns) and a worker 0.6 ms late inside the
    # window. Whole base RTT 2 ms: 0.164 and 0.3 RTTs, within 0.5. Without 1.5 ms of
    # propagation the endpoints' RTT is 0.5 ms: 327,680 / 0.5 ms / 0.5 = 1.31x, void; the
    # worker stays judged on the 2 ms: 0.6 / 2 / 0.5 = 0.6.
    fast, slow = lateness_bucket(100_000), lateness_bucket(300_000)
    write_endpoint_log(tmp_path / "endpoint-h0.jsonl", [
        (1_000 * MS, [[fast, 1000]]), (2_000 * MS, [[fast, 1000], [slow, 20]])], base_rtt_ns=RTT)
    worker_samples(tmp_path, {55: 0.6})
    logs = F.endpoint_logs(tmp_path, [])
    fault = [(1_500 * MS, 100.0)]
    [whole] = W.recovery_windows(tmp_path, logs, RTT, fault, None)
    assert not whole["void"]
    [judged] = W.recovery_windows(tmp_path, logs, RTT, fault, None, packet_rtt_ns=500_000)
    assert judged["void"]
    assert judged["evidence"]["timer lateness"] == pytest.approx(327_680 / 500_000 / 0.5,
                                                                 rel=1e-3)
    assert judged["evidence"]["worker lateness"] == pytest.approx(0.6 / 2 / 0.5, rel=1e-3)


def test_stall_fraction_is_the_union_of_every_source_over_the_timed_phase():
    spans = [(100 * MS, 110 * MS, "worker h0"), (105 * MS, 120 * MS, "worker h1"),
             (500 * MS, 600 * MS, "ovs-vswitchd"), (1_500 * MS, 1_600 * MS, "ovs-vswitchd")]
    out = W.stall_fraction(spans, 0, 1_000 * MS)
    # workers: [100, 120] = 20 ms; ovs: [500, 600] = 100 ms (the other is after the phase)
    assert out["fraction"] == pytest.approx(0.12)
    assert out["by_source"] == {"ovs-vswitchd": pytest.approx(0.1), "workers": pytest.approx(0.02)}
    assert W.stall_fraction(spans, None, 1) is None


def test_only_samples_beyond_half_a_base_rtt_are_stalls(tmp_path):
    worker_samples(tmp_path, {10: 0.9, 20: 1.1})
    spans = W.stall_spans(W.worker_lateness(tmp_path), [], RTT)
    # sample 20 is due at T0 + 200 ms and came 1.1 ms late; sample 10 (0.9 ms) is within bound
    assert spans == [(T0 + 200 * MS, T0 + 200 * MS + int(1.1 * MS), "worker h0")]


def test_cpu_saturated_share_from_cpu_csv(tmp_path):
    # k = 2; rows stamped at the end of each interval (wall ns): [0, 1] s 95%, [1, 2] s 50%,
    # [2, 3] s 99%. Emulated: [0, 0.5] s saturated, [1, 1.5] s saturated. Phase [0.25, 1.25] s:
    # saturated [0.25, 0.5] and [1, 1.25] = 0.5 s of 1 s.
    (tmp_path / "worker.json").write_text(json.dumps({"time_scale": 2}))
    (tmp_path / "cpu.csv").write_text("t_ns,busy_fraction,workers_cores\n0,0.1,0\n"
                                      "1000000000,0.95,1\n2000000000,0.5,1\n3000000000,0.99,1\n")
    assert W.cpu_saturated_fraction(tmp_path, 250 * MS, 1_250 * MS, 0.9) == pytest.approx(0.5)
    assert W.cpu_saturated_fraction(tmp_path / "none", 0, 1, 0.9) is None


def test_a_stall_on_a_fault_breaks_the_verdict_where_the_whole_run_p99_does_not(tmp_path):
    """transport_fidelity end to end: one late sample of 200 keeps worker_lateness ok, but it
    lies inside the fault's recovery window, so recovery_window_stalls is invalid and the
    summary voids that recovery only."""
    write_endpoint_log(tmp_path / "endpoint-h0.jsonl", [], base_rtt_ns=RTT)
    worker_samples(tmp_path, {50: 3})
    facts = F.FabricFacts(100, 100, 9000, True, None)
    faults = [(T0 + 400 * MS, 200.0), (T0 + 1_000 * MS, 30.0)]
    fid = F.transport_fidelity(tmp_path, facts, T0, T0 + 2_000 * MS, packets=pd.DataFrame(),
                               faults=faults)
    assert fid["margins"][FV.WORKER_LATENESS] > 1
    [v] = [v for v in fid["violations"] if v["invariant"] == FV.RECOVERY_WINDOWS]
    assert v["ratio"] == pytest.approx(3.0) and fid["verdict"] == FV.INVALID
    void = run_summary.recovery_void(fid, len(faults))
    assert void[0].startswith("a stall inside its recovery window: worker h0 ran 3.00 ms late")
    assert void[1] is None
    # the stall's 3 ms of the 2 s phase, as the time-weighted stall fraction
    assert fid["measurements"]["stall_fraction"]["fraction"] == pytest.approx(0.0015)
    # fabric links: named, never measured, with what can and cannot be checked
    assert "held_beyond_queue_bound" in fid["unmeasured"][FV.FABRIC_PACING]
    # without faults there is no window to judge
    fid = F.transport_fidelity(tmp_path, facts, T0, T0 + 2_000 * MS, packets=pd.DataFrame())
    assert FV.RECOVERY_WINDOWS in fid["unmeasured"] and fid["verdict"] == FV.OK


def bursty_log(tmp_path, stall_at_s=None):
    """Snapshots every second from 1 to 31 s, 100 deadlines at 0.1 ms per second; every third
    second also 5 at 3 ms (the machine's ordinary bursts: 5 of 105 is past the 99th sample, so
    those seconds' p99 is 3 ms' bucket, upper edge 3,145,728 ns, 1.57x the 1 ms bound); and in
    the second ending at stall_at_s, 5 at 20 ms instead (upper edge 20,971,520 ns)."""
    fast, burst, stall = lateness_bucket(100_000), lateness_bucket(3 * MS), lateness_bucket(20 * MS)
    totals, snaps = {fast: 0, burst: 0, stall: 0}, []
    for s in range(1, 32):
        totals[fast] += 100
        if s == stall_at_s:
            totals[stall] += 5
        elif s % 3 == 0:
            totals[burst] += 5
        snaps.append((s * 1_000 * MS, [[b, n] for b, n in totals.items() if n]))
    write_endpoint_log(tmp_path / "endpoint-h0.jsonl", snaps, base_rtt_ns=RTT)
    return F.endpoint_logs(tmp_path, [])


def test_a_window_as_late_as_the_run_is_elsewhere_is_not_a_stall(tmp_path):
    logs = bursty_log(tmp_path)
    fault = [(8_500 * MS, 10.0)]             # inside the bursty second [8, 9] s
    [judged] = W.recovery_windows(tmp_path, logs, RTT, fault, 31_000 * MS, workers={}, ovs=[],
                                  timed_start_ns=1_000 * MS)
    # its p99 alone is past the bound, as in 10 of the 29 other seconds (the worst of them:
    # 3 ms' bucket again): no later than the run elsewhere
    assert lateness_bucket_floor_ns(lateness_bucket(3 * MS) + 1) == 3_145_728
    assert not judged["void"] and judged["ratio"] == 1.0
    # judged on its p99 alone (no timed phase to compare with: fewer than 20 other seconds)
    [alone] = W.recovery_windows(tmp_path, logs, RTT, fault, 10_000 * MS, workers={}, ovs=[],
                                 timed_start_ns=1_000 * MS)
    assert alone["void"] and alone["ratio"] == pytest.approx(3_145_728 / RTT / 0.5, rel=1e-3)


def test_a_window_later_than_the_run_ever_is_elsewhere_is_a_stall(tmp_path):
    logs = bursty_log(tmp_path, stall_at_s=9)
    fault = [(8_500 * MS, 10.0)]             # the stall is in [8, 9] s
    [judged] = W.recovery_windows(tmp_path, logs, RTT, fault, 31_000 * MS, workers={}, ovs=[],
                                  timed_start_ns=1_000 * MS)
    assert judged["void"]
    assert judged["ratio"] == pytest.approx(20_971_520 / RTT / 0.5, rel=1e-3)
    # the share: the 29 other seconds' p99s at 1 - 0.01 / 2 (one endpoint, two kinds), the
    # highest of them with numpy's "higher" rule: 3 ms' bucket, the worst ordinary second
    ordinary = W.ordinary_lateness(logs, (1_000 * MS, 31_000 * MS))
    assert W.ordinary_late_ns(ordinary, "h0", "timer", 8_500 * MS, 8_510 * MS) == 3_145_728


def test_a_servers_stall_file_name_gives_its_server_back():
    name = W.other_ovs_log("root@b.example")
    assert name == "ovs-vswitchd@root@b.example.log"
    assert W.server_of_other_ovs_log(name) == "root@b.example"
    with pytest.raises(ValueError, match="ovs_stalls.json"):
        W.server_of_other_ovs_log("ovs_stalls.json")
