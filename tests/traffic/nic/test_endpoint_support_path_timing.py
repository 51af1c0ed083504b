"""The QP settings that are facts of the path to a peer (endpoint_support.path_timing), and the
endpoint handing them to its QPs, from random-loss.toml's numbers worked out by hand: host links
6.5 ms and fabric links 0.25 ms one way, so a path across groups has 2 x 6.5 + 2 x 0.25 = 13.5 ms
one way (27 ms both ways), a path under one T0 2 x 6.5 = 13 ms (26 ms both ways); a 1518-byte
frame on 4 links of 30 Mbit/s is 4 x 1518 x 8 / 30e6 s = 1.6192 ms of serialization."""
import pytest

from model.topology import FabricSpec
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import EndpointConfig, path_timing, trimming_bounds

pytestmark = pytest.mark.core

SPEC = FabricSpec(host_link_mbit=30, fabric_link_mbit=30, host_link_delay_ms=6.5,
                  fabric_link_delay_ms=0.25)


def test_the_path_s_propagation_both_ways_and_a_frame_s_serialization():
    across = path_timing(SPEC, 1518, across_groups=True)
    assert across["propagation_rtt_ns"] == 27_000_000
    assert abs(across["nscc_frame_rtt_ns"] - 1_619_200) <= 1
    assert path_timing(SPEC, 1518, across_groups=False)["propagation_rtt_ns"] == 26_000_000
    assert path_timing(FabricSpec(), 1518, True)["propagation_rtt_ns"] == 0


def test_the_endpoint_gives_each_qp_its_path_s_propagation():
    ep = Endpoint(EndpointConfig.from_dict({"host": 0, "fabric": SPEC.to_dict()}), ports={})
    try:
        assert ep.qp_config(27_150_000, across_groups=True).propagation_rtt_ns == 27_000_000
        assert ep.qp_config(26_150_000, across_groups=False).propagation_rtt_ns == 26_000_000
    finally:
        ep.close()


def test_trimming_bounds_from_the_ports_thresholds():
    """Ports at 30 Mbit/s, MTU 1500, no propagation delay (model/switchport.py
    default_port_config): ECN 3,000..7,500 B, trim max(7,500, 4 ms x 3,750 B/ms, 10 x 1,500) =
    15,000 B = 4 ms of drain; x 1.25 (TRIM_BOUND_MARGIN) = 5 ms a port. The path's delay bound
    is its three ports, 15 ms; the reorder bound one port, 5 ms. The demo's (100 Mbit/s, MTU
    9000): trim 10 x 9,000 = 90,000 B = 7.2 ms, 9 ms a port, 27 ms the path."""
    no_delay = FabricSpec(host_link_mbit=30, fabric_link_mbit=30)
    assert trimming_bounds(no_delay, 1.0, True) == {"fabric_delay_bound_ns": 15_000_000,
                                                    "fabric_reorder_bound_ns": 5_000_000}
    demo = FabricSpec(mtu=9000)
    assert trimming_bounds(demo, 1.0, True) == {"fabric_delay_bound_ns": 27_000_000,
                                                "fabric_reorder_bound_ns": 9_000_000}
    assert trimming_bounds(SPEC, 1.0, False) == {"fabric_delay_bound_ns": 0,
                                                 "fabric_reorder_bound_ns": 0}


def test_with_propagation_the_ports_trim_at_one_bdp():
    """random-loss.toml's ports: the longest path's unloaded round trip is 27 ms + 1.6192 ms =
    28.6192 ms (module docstring), so a 30 Mbit/s port's BDP is 3,750,000 B/s x 0.0286192 s =
    107,322 B: trim there (1 BDP, above 4 ms of drain) = 28.6192 ms of drain, x 1.25 =
    35.774 ms a port, 107.322 ms the path of three ports."""
    bounds = trimming_bounds(SPEC, 1.0, True)
    assert abs(bounds["fabric_delay_bound_ns"] - 107_322_000) <= 1
    assert abs(bounds["fabric_reorder_bound_ns"] - 35_774_000) <= 1
    # the same bytes in the wall world of k = 4: every time x 4
    wall = FabricSpec(host_link_mbit=7.5, fabric_link_mbit=7.5, host_link_delay_ms=26,
                      fabric_link_delay_ms=1)
    assert abs(trimming_bounds(wall, 4.0, True)["fabric_delay_bound_ns"] - 4 * 107_322_000) <= 4


def test_a_trimming_endpoint_s_qps_get_both_bounds():
    ep = Endpoint(EndpointConfig.from_dict({"host": 0, "fabric": SPEC.to_dict(),
                                            "qp": {"trimming": True}}), ports={})
    try:
        qcfg = ep.qp_config(27_150_000, across_groups=True)
        assert abs(qcfg.fabric_delay_bound_ns - 107_322_000) <= 1
        assert abs(qcfg.fabric_reorder_bound_ns - 35_774_000) <= 1
    finally:
        ep.close()
