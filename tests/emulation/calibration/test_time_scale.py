"""[fabric] time_scale: the scenario into the wall world (emulation/calibration/time_scale.py). Expected
values worked by hand from the rule: rates / k, times x k, bytes unchanged. A run's files back
into the emulated world: tests/analysis/test_timescale.py; the rule and the check of k:
tests/model/test_timescale.py."""
import pytest

from emulation.config import scenario as S
from emulation.calibration import time_scale as T
from emulation.network.hostnet import host_argvs
from emulation.run.runner import worker_config
from model.switchport import default_port_config
from model.topology import FabricSpec, Topology
from tests.helpers.scenario_texts import FLAP_THEN_ECN, SMALL_FABRIC
from traffic.nic.endpoint_support import EndpointConfig, trimming_delay_bound_ns

# SMALL_FABRIC without its pinned time_scale: each test here sets its own. 4 MiB messages, 20
# iterations: at line rate at least 4.8 s of traffic after the timed start, so the faults below
# land inside it (emulation/config/scenario_timing.py).
BASE = """name = "t"
""" + SMALL_FABRIC.replace("time_scale = 1\n", "") + """host_link_mbit = 100
fabric_link_mbit = 50
mtu = 1500
{scale}
[transport]
tcp_reconvergence_s = 2.0
roce_reconvergence_s = 1.5

[collective]
message_bytes = 4194304
iterations = 20
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
""" + FLAP_THEN_ECN


def scenario(scale="time_scale = 4"):
    return S.parse(BASE.format(scale=scale))


# ---------------------------------------------------------------- the key


def test_time_scale_defaults_to_auto_and_one_keeps_the_scenario_as_is():
    assert scenario(scale="").time_scale == "auto"
    scn = scenario(scale="time_scale = 1")
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
    assert wall.collective.message_bytes == 4194304
    assert wall.mrc["endpoint"]["port_rate_mbit"] == 20.0       # 80 / 4
    # the EV event limit holds per emulated second: its default 50/s is 12.5/s on the wall clock
    assert wall.mrc["endpoint"]["ev_event_rate_per_s"] == 12.5
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
    assert "min_base_rtt_ns" not in ep                  # None: no floor, stays none
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


def test_the_short_version_may_run_at_its_own_numeric_scale():
    text = BASE.format(scale='time_scale = "auto"') + "\n[short]\niterations = 4\n" \
        "fault_time_factor = 0.2\nfabric_time_scale = 2\n"
    assert S.parse(text).time_scale == "auto"
    assert S.parse(text, short=True).time_scale == 2.0
    with pytest.raises(S.ScenarioError, match=r"\[short\] fabric_time_scale: must be between 1 "
                                              r"and 1000, got 0.5"):
        S.parse(text.replace("fabric_time_scale = 2", "fabric_time_scale = 0.5"))
    with pytest.raises(S.ScenarioError, match="fabric_time_scale: must be a number"):
        S.parse(text.replace("fabric_time_scale = 2", 'fabric_time_scale = "auto"'))
