"""The QP settings that are facts of the path to a peer (endpoint_support.path_timing), and the
endpoint handing them to its QPs, from random-loss.toml's numbers worked out by hand: host links
6.5 ms and fabric links 0.25 ms one way, so a path across groups has 2 x 6.5 + 2 x 0.25 = 13.5 ms
one way (27 ms both ways), a path under one T0 2 x 6.5 = 13 ms (26 ms both ways); a 1518-byte
frame on 4 links of 30 Mbit/s is 4 x 1518 x 8 / 30e6 s = 1.6192 ms of serialization."""
import pytest

from model.topology import FabricSpec
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import EndpointConfig, path_timing

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
