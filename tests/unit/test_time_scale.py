"""[fabric] time_scale: the scenario into the wall world (emulation/time_scale.py) and a run's
files back into the emulated world (model/timescale.py where analysis loads them). Expected
values worked by hand from the rule: rates / k, times x k, bytes unchanged. The rule and the
check of k themselves: tests/model/test_timescale.py."""
import json

import pytest

from analysis import flows, jsonl, runmodel
from analysis.timescale import time_scale_of
from emulation import scenario as S
from emulation import time_scale as T
from emulation.hostnet import host_argvs
from emulation.run_output import comparison_table
from emulation.runner import worker_config
from model import timescale
from model.events import Event, Phase
from model.switchport import default_port_config
from model.topology import FabricSpec, Topology
from tests.unit.scenario_texts import SMALL_FABRIC
from traffic.endpoint_support import EndpointConfig, trimming_delay_bound_ns

BASE = """name = "t"
""" + SMALL_FABRIC + """host_link_mbit = 100
fabric_link_mbit = 50
mtu = 1500
{scale}
[transport]
tcp_reconvergence_s = 2.0
roce_reconvergence_s = 1.5

[collective]
message_bytes = 4096
iterations = 10
timeout_s = 20

[options]
goodput_interval_ms = 10

[mrc]
linger_s = 0.5

[mrc.endpoint]
port_poll_ms = 3.0
port_rate_mbit = 80

[mrc.qp]
loss_verdict_ns = 100000000
rto_rtts = 12.0
ack_timeout = 12

[mrc.host_qp.h1]
skip_ns = 3000000

[[faults]]
at_s = 1.5
action = "flap"
a = "t0p0g0"
b = "t1p0s0"
period_s = 0.5
count = 2

[[faults]]
after_s = 2.0
action = "ecn_mark"
a = "t0p0g0"
b = "t1p0s0"
rate_mbit = 40
"""


def scenario(scale="time_scale = 4"):
    return S.parse(BASE.format(scale=scale))


# ---------------------------------------------------------------- the key


def test_time_scale_defaults_to_one_and_keeps_the_scenario_as_is():
    scn = scenario(scale="")
    assert scn.time_scale == 1.0
    assert T.wall_scenario(scn) is scn


def test_time_scale_accepts_a_number_or_auto():
    assert scenario().time_scale == 4.0
    assert scenario('time_scale = 2.5').time_scale == 2.5
    assert scenario('time_scale = "auto"').time_scale == "auto"


@pytest.mark.parametrize("value, words", [
    ("0.5", "[fabric] time_scale: must be between 1 and 1000, got 0.5"),
    ("0", "must be between 1 and 1000, got 0"),
    ('"fast"', "must be a number >= 1 or \"auto\", got 'fast'"),
    ("true", "must be a number >= 1 or \"auto\", got True"),
    ("nan", "must be a number >= 1 or \"auto\", got nan"),
])
def test_bad_time_scale_is_named_with_its_line(value, words):
    with pytest.raises(S.ScenarioError) as err:
        scenario(f"time_scale = {value}")
    assert words in str(err.value)
    assert "<scenario>:10:" in str(err.value)        # the key's line


def test_the_endpoint_cannot_set_it_itself():
    text = BASE.format(scale="").replace("port_poll_ms = 3.0", "time_scale = 2")
    with pytest.raises(S.ScenarioError, match=r"\[mrc.endpoint\] time_scale: unknown key here "
                                              r"\(comes from \[fabric\] time_scale\)"):
        S.parse(text)


def test_auto_must_be_resolved_before_the_run_is_built():
    with pytest.raises(T.TimeScaleError, match="resolved to a number"):
        T.wall_scenario(scenario('time_scale = "auto"'))


# ---------------------------------------------------------------- into the wall world


def test_rates_are_divided_and_bytes_kept():
    wall = T.wall_scenario(scenario())
    assert wall.spec.host_link_mbit == 25.0            # 100 / 4
    assert wall.spec.fabric_link_mbit == 12.5          # 50 / 4
    assert wall.spec.mtu == 1500
    assert wall.collective.message_bytes == 4096
    assert wall.mrc["endpoint"]["port_rate_mbit"] == 20.0       # 80 / 4
    assert wall.topology.link("t0p0g0", "t1p0s0").mbit == 12.5


def test_fault_times_and_rates_scale_and_keep_their_declared_label():
    scn = scenario()
    wall = T.wall_scenario(scn)
    flap, mark = wall.faults
    assert flap.at_s == 6.0                            # 1.5 x 4
    assert flap.commands[0]["period_s"] == 2.0         # 0.5 x 4
    assert flap.commands[0]["count"] == 2
    assert mark.after_s == 8.0                         # 2.0 x 4
    assert mark.commands[0]["rate_mbit"] == 10.0       # 40 / 4
    assert [f.when() for f in wall.faults] == ["at_s=1.5", "after_s=2.0"]
    assert scn.faults[0].at_s == 1.5                   # the declared scenario is untouched


def test_control_plane_and_collective_times_scale():
    wall = T.wall_scenario(scenario())
    assert wall.routing_for("tcp") == ("ecmp", 8.0)     # 2.0 x 4
    assert wall.routing_for("roce") == ("ecmp", 6.0)    # 1.5 x 4
    assert wall.collective.timeout_s == 80.0            # 20 x 4
    assert wall.goodput_interval_ms == 40.0             # 10 x 4
    assert wall.mrc["linger_s"] == 2.0                  # 0.5 x 4
    assert wall.mrc["connect_timeout_s"] == 240.0       # mrc_comm's 60 s default x 4


def test_every_absolute_endpoint_timer_scales_defaults_included():
    wall = T.wall_scenario(scenario())
    ep, qp = wall.mrc["endpoint"], wall.mrc["qp"]
    assert ep["port_poll_ms"] == 12.0                   # set: 3 x 4
    assert ep["min_base_rtt_ns"] == 8_000_000           # default 2 ms x 4
    assert ep["default_base_rtt_ns"] == 4_000_000       # default 1 ms x 4
    assert ep["path_probe_timeout_ms"] == 1000.0        # default 250 ms x 4
    assert "path_probe_interval_ms" not in ep           # 0: off, stays off
    assert "base_rtt_ns" not in ep                      # None: measured (in the wall world)
    assert ep["time_scale"] == 4.0
    assert qp["loss_verdict_ns"] == 400_000_000         # set: 100 ms x 4
    assert qp["rto_min_ns"] == 4_000_000                # MRCConfig default 1 ms x 4
    assert qp["rto_max_ns"] == 4_000_000_000            # default 1 s x 4
    assert qp["rto_rtts"] == 12.0                       # in base RTTs: scales by itself
    # OCP ack_timeout 12 = 1.024 us x 4096 = 4.194304 ms, as a fixed RTO x 4
    assert "ack_timeout" not in qp and qp["rto_ns"] == 16_777_216
    assert wall.mrc["host_qp"]["h1"] == {"skip_ns": 12_000_000}   # 3 ms x 4, nothing added


def test_the_wall_endpoint_config_is_valid():
    wall = T.wall_scenario(scenario())
    cfg = EndpointConfig.from_dict({"host": 0, "fabric": wall.spec.to_dict(),
                                    **wall.mrc["endpoint"], "qp": wall.mrc["qp"]})
    assert cfg.time_scale == 4.0 and cfg.port_rate_mbit == 20.0


def test_worker_config_records_the_scale_and_carries_the_wall_world(tmp_path):
    wall = T.wall_scenario(scenario())
    cfg = worker_config(wall, "mrc", tmp_path)
    assert cfg.time_scale == 4.0
    assert cfg.fabric["host_link_mbit"] == 25.0
    assert cfg.timeout_s == 80.0
    assert cfg.to_dict()["time_scale"] == 4.0


def test_switch_thresholds_keep_the_declared_rates_bytes():
    # 100 Mbit/s, MTU 1500: 12,500 bytes per ms; ECN 0.5 ms / 2 ms, trim 4 ms
    declared = default_port_config(100.0, False, mtu=1500)
    assert (declared.ecn_min_bytes, declared.ecn_max_bytes, declared.trim_bytes) == \
        (6250, 25000, 50000)
    wall = default_port_config(25.0, False, mtu=1500, time_scale=4.0)
    assert (wall.ecn_min_bytes, wall.ecn_max_bytes, wall.trim_bytes) == (6250, 25000, 50000)
    assert wall.rate_mbit == 25.0                       # the port drains at the wall rate


def test_the_endpoints_queue_bound_is_the_declared_one_times_k():
    spec = FabricSpec(host_link_mbit=100.0, fabric_link_mbit=100.0, mtu=1500)
    # three ports' 50,000-byte trim thresholds at 100 Mbit/s: 3 x 4 ms, x 1.25 margin = 15 ms
    assert trimming_delay_bound_ns(spec) == 15_000_000
    wall = T.wall_spec(spec, 4.0)
    assert trimming_delay_bound_ns(wall, 4.0) == 60_000_000


def test_tcp_minimum_rto_scales_through_the_plane_routes():
    topo = Topology(FabricSpec())
    routes = [a for a in host_argvs(topo, 0, 4.0) if a[:3] == ["ip", "-6", "route"]
              and "dev" in a]
    assert routes and all(a[-2:] == ["rto_min", "800ms"] for a in routes)   # 200 ms x 4
    plain = [a for a in host_argvs(topo, 0) if a[:3] == ["ip", "-6", "route"] and "dev" in a]
    assert all("rto_min" not in a for a in plain)       # k = 1: the kernel's own


# ---------------------------------------------------------------- back to the emulated world


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


def test_the_table_says_times_are_emulated():
    rows = [{"transport": "mrc", "verified": True, "time_scale": 4.0}]
    assert "time_scale 4: the fabric ran that many times slower" in comparison_table(rows)
    rows[0]["time_scale"] = 1.0
    assert "time_scale" not in comparison_table(rows)


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
    from tests.unit.test_analysis_pcap import _mixed_frames
    from tests.unit.test_analysis_synth import write_capture
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
    from tests.unit.test_fidelity import write_endpoint_log
    from traffic.endpoint_support import lateness_bucket
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


def test_the_short_version_may_run_at_its_own_numeric_scale():
    text = BASE.format(scale='time_scale = "auto"') + "\n[short]\niterations = 4\n" \
        "fabric_time_scale = 2\n"
    assert S.parse(text).time_scale == "auto"
    assert S.parse(text, short=True).time_scale == 2.0
    with pytest.raises(S.ScenarioError, match=r"\[short\] fabric_time_scale: must be between 1 "
                                              r"and 1000, got 0.5"):
        S.parse(text.replace("fabric_time_scale = 2", "fabric_time_scale = 0.5"))
    with pytest.raises(S.ScenarioError, match="fabric_time_scale: must be a number"):
        S.parse(text.replace("fabric_time_scale = 2", 'fabric_time_scale = "auto"'))


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
