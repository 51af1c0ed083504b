"""[fabric] time_scale read back: a run's files (worker logs, captures, fidelity inputs) return
into the emulated world (model/timescale.py, applied where analysis loads them). Expected values
worked by hand from the rule: times / k, rates x k, bytes unchanged. The scenario's way into the
wall world is tests/emulation/calibration/test_time_scale.py."""
import json

import pytest

from analysis import flows, jsonl, runmodel
from analysis.timescale import time_scale_of
from model import timescale
from model.events import Event, Phase


def _run_dir(tmp_path, k):
    tdir = tmp_path / "mrc"
    tdir.mkdir()
    (tdir / "worker.json").write_text(json.dumps({
        "transport": "mrc", "hosts": ["h0", "h1"], "iterations": 2, "time_scale": k,
        "fabric": {"planes": 2, "groups": 1, "spines": 1, "hosts_per_group": 2,
                   "host_link_mbit": 100 / k, "fabric_link_mbit": 100 / k, "mtu": 1500}}))
    # two iterations of 400 ms and 800 ms wall, 1 MB received each 400 ms wall
    for h in ("h0", "h1"):
        lines = [{"event": Event.PHASE, "phase": Phase.WARMUP_DONE, "t_ns": 1_000_000_000},
                 {"event": Event.ITERATION, "iter": 0, "start_ns": 1_000_000_000,
                  "end_ns": 1_400_000_000, "verified": True, "bytes": 1},
                 {"event": Event.ITERATION, "iter": 1, "start_ns": 1_400_000_000,
                  "end_ns": 2_200_000_000, "verified": True, "bytes": 1}]
        lines += [{"event": Event.GOODPUT, "t_ns": 1_000_000_000 + i * 400_000_000,
                   "rx_bytes": i * 1_000_000} for i in range(4)]
        (tdir / f"worker-{h}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return tdir


def test_records_come_back_in_emulated_time():
    rec = {"event": "x", "t_ns": 8_000_000_001, "rtt_ns": 4000, "window_ms": 2.0, "bytes": 9000,
           "ok": True, "period_s": 2.0, "rate_mbit": 10.0, "count": 2}
    # a flap's period and an ECN fault's rate as the controller logged the wall commands
    assert timescale.scale_params(rec, 4.0, direction=timescale.BACK) == {
        "event": "x", "t_ns": 2_000_000_000, "rtt_ns": 1000, "window_ms": 0.5, "bytes": 9000,
        "ok": True, "period_s": 0.5, "rate_mbit": 40.0, "count": 2}
    assert timescale.scale_params(rec, 1.0, direction=timescale.BACK) == rec


def test_a_runs_logs_read_back_in_emulated_time(tmp_path):
    tdir = _run_dir(tmp_path, 4.0)
    assert time_scale_of(tdir) == 4.0
    assert time_scale_of(tdir / "fabric") == 4.0                  # a file one level down
    (first, *_) = jsonl.read_jsonl(tdir / "worker-h0.jsonl", [])
    assert first["t_ns"] == 250_000_000                            # 1 s wall / 4


def test_the_run_model_gives_emulated_iterations_and_declared_rates(tmp_path):
    run = runmodel.load_transport(_run_dir(tmp_path, 4.0))
    assert run.iteration_times_ms == [100.0, 200.0]                # 400 and 800 ms wall / 4
    # 2 hosts x 1 MB per 400 ms wall = 5 MB/s wall = 20 MB/s emulated
    assert run.samples[-1][1] - run.samples[0][1] == 6_000_000
    span_s = (run.samples[-1][0] - run.samples[0][0]) / 1e9
    assert span_s == pytest.approx(0.3)                            # 1.2 s wall / 4
    (tmp_path / "k1").mkdir()
    plain = runmodel.load_transport(_run_dir(tmp_path / "k1", 1.0))
    assert plain.iteration_times_ms == [400.0, 800.0]


def test_a_saved_wall_fabric_gets_its_declared_rates_back():
    fabric = {"planes": 2, "host_link_mbit": 25.0, "fabric_link_mbit": 12.5, "mtu": 1500}
    assert timescale.scale_params(fabric, 4.0, direction=timescale.BACK) == {
        "planes": 2, "host_link_mbit": 100.0, "fabric_link_mbit": 50.0, "mtu": 1500}


def test_a_flows_goodput_and_line_fraction_are_the_declared_worlds(tmp_path):
    # worker.json of a k = 2 run: 5 Mbit/s wall links (10 declared), 2 planes. h1 receives
    # 1 MB every 800 ms wall = 10 Mbit/s wall, 20 Mbit/s emulated: 1.0 of 2 x 10 declared
    (tmp_path / "worker.json").write_text(json.dumps(
        {"collective": "bisection", "hosts": ["h0", "h1"], "time_scale": 2.0,
         "fabric": {"host_link_mbit": 5.0, "planes": 2}}))
    events = [{"t_ns": 0, "event": Event.PHASE, "phase": Phase.WARMUP_DONE}]
    events += [{"t_ns": i * 800_000_000, "event": Event.GOODPUT, "rx_bytes": i * 1_000_000}
               for i in range(5)]
    events.append({"t_ns": 3_200_000_000, "event": Event.ITERATION, "iter": 0, "start_ns": 0,
                   "end_ns": 3_200_000_000, "verified": True})
    (tmp_path / "worker-h1.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (flow,) = flows.flow_summary(tmp_path)["flows"]
    assert flow["goodput_mbit"] == pytest.approx(20.0)
    assert flow["link_fraction"] == pytest.approx(1.0)


def test_capture_times_come_back_in_emulated_time(tmp_path):
    from analysis.pcap import load_captures
    from tests.helpers.synth import mixed_frames as _mixed_frames
    from tests.helpers.synth import write_capture
    tdir = tmp_path / "mrc"
    (tdir / "pcaps").mkdir(parents=True)
    (tdir / "worker.json").write_text(json.dumps({"time_scale": 4.0}))
    # clock.json: monotonic = pcap time - 1 s; frames at 5 s + 0..4 us (pcap time)
    (tdir / "clock.json").write_text(json.dumps({"monotonic_ns": 0,
                                                 "realtime_ns": 1_000_000_000}))
    write_capture(tdir / "pcaps" / "h0-p0.pcap", _mixed_frames(False))
    df = load_captures(tdir)
    # (5 s - 1 s) / 4 = 1 s; the frames 1 us apart wall, 250 ns emulated
    assert list(df["time_ns"]) == [1_000_000_000 + 250 * i for i in range(5)]
    assert df["pcap_time_ns"].iloc[0] == 5_000_000_000          # the file's own stamp kept
    # the senders' stamps are on the same clock: TSETH 123456789 / 4 = 30864197.25, echoed
    # 99 / 4 = 24.75, each to the nearest whole ns
    assert df["tseth"].iloc[0] == 30_864_197 and df["sack_echo_ts"].iloc[2] == 25


def test_fidelity_lateness_is_judged_in_one_world(tmp_path):
    # k = 2: the QP's base RTT is logged as 4 ms wall (2 ms emulated once read back); 15 of 1000
    # deadlines served 3 ms late wall (bucket edge 3,145,728 ns), 1.573 ms emulated: p99 over
    # the 2 ms base RTT = 0.786 base RTTs, the same ratio the wall world has (3.146 / 4)
    import pandas as pd
    from analysis import fidelity as F
    from tests.helpers.synth import write_endpoint_log
    from model.lateness import lateness_bucket
    (tmp_path / "worker.json").write_text(json.dumps({"time_scale": 2.0}))
    hist = sorted([[lateness_bucket(100_000), 985], [lateness_bucket(3_000_000), 15]])
    write_endpoint_log(tmp_path / "endpoint-h0.jsonl", [(100, hist)], base_rtt_ns=4_000_000)
    fid = F.transport_fidelity(tmp_path, F.FabricFacts(100, 100, 9000, True, None), 10, 400,
                               packets=pd.DataFrame())
    assert fid["measurements"]["base_rtt_ms"] == 2.0
    [v] = [v for v in fid["violations"] if v["invariant"] == F.TIMER_LATENESS]
    assert v["measured"] == pytest.approx(3_145_728 / 4_000_000, rel=1e-3)


def test_fidelity_ovs_stalls_are_judged_in_emulated_time(tmp_path):
    # a 1234 ms wall stall at k = 2 is 617 ms emulated: 308.5 base RTTs of 2 ms
    from analysis import fidelity as F
    (tmp_path / "worker.json").write_text(json.dumps({"time_scale": 2.0}))
    (tmp_path / F.OVS_STALLS_FILE).write_text(json.dumps({"stalls": [{"ms": 1234}],
                                                          "error": None}))
    check = F.ovs_check(tmp_path, 2_000_000, {}, {}, time_scale_of(tmp_path))
    assert check.measured == pytest.approx(308.5)


def test_fidelity_worker_lateness_grid_is_the_emulated_one(tmp_path):
    # k = 2, goodput every 20 ms wall (worker.json's; 10 ms declared); one sample in ten 8 ms
    # late wall = 4 ms emulated: p99 = 4 ms = 2 base RTTs of 2 ms (against the wall interval,
    # the emulated samples would all look early)
    from analysis import fidelity as F
    (tmp_path / "worker.json").write_text(json.dumps({"time_scale": 2.0,
                                                      "goodput_interval_ms": 20.0}))
    (tmp_path / "worker-h0.jsonl").write_text("".join(
        json.dumps({"event": Event.GOODPUT, "rx_bytes": i,
                    "t_ns": 1_000_000_000 + i * 20_000_000 + (8_000_000 if i % 10 == 5 else 0)})
        + "\n" for i in range(201)))
    check = F.worker_lateness_check(tmp_path, 2_000_000, None, None, {}, {})
    assert check.measured == pytest.approx(2.0)
