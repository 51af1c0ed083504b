"""NSCC's base RTT is a full data frame's unloaded round trip: on emulated links the frame's
store-and-forward serialization dominates it (MRCConfig.nscc_frame_rtt_ns), while the measured
base RTT comes from small probes. Expected values are serialization arithmetic by hand."""
import random

import pytest

from model.topology import FabricSpec
from tests.helpers.endpoint_fakes import FakePort
from traffic.core.clock import FakeClock
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import EndpointConfig, frame_rtt_ns
from traffic.core.evs import PathInfo
from traffic.core.reliability import MRCConfig, SenderQP

pytestmark = pytest.mark.core

MS = 1_000_000


def test_frame_serialization_on_every_link_of_the_path():
    # 9000 B at 25 Mbit/s: 72,000 bits / 25e6 = 2.88 ms per link; 4 links across groups
    spec = FabricSpec(host_link_mbit=25, fabric_link_mbit=25, mtu=9000)
    assert frame_rtt_ns(spec, 9000, across_groups=True) == 11_520_000
    assert frame_rtt_ns(spec, 9000, across_groups=False) == 5_760_000     # host links only
    # host links 100 Mbit/s (0.12 ms for 1500 B), fabric links 50 (0.24 ms): 2 x 0.12 + 2 x 0.24
    spec = FabricSpec(host_link_mbit=100, fabric_link_mbit=50)
    assert frame_rtt_ns(spec, 1500, across_groups=True) == 720_000


def sender(**cfg):
    return SenderQP(0x10, 0x11, MRCConfig(**cfg), PathInfo(planes=(0, 1), spines=2),
                    random.Random(1))


def test_nscc_base_is_the_probed_base_plus_a_frame_and_samples_do_not_lower_it():
    s = sender(base_rtt_ns=2 * MS, nscc_frame_rtt_ns=11_520_000, nscc_min_base_rtt_ns=6 * MS)
    assert s.nscc.base_rtt_ns == 13_520_000                 # 2 ms + 11.52 ms > the 6 ms floor
    s._rtt_sample(1 * MS, 5 * MS, ev=0)                     # a small packet's fast round trip
    assert s.rtt.base_rtt_ns == 1 * MS                      # the timers keep the measured min
    assert s.nscc.base_rtt_ns == 13_520_000
    s = sender(base_rtt_ns=2 * MS, nscc_frame_rtt_ns=1 * MS, nscc_min_base_rtt_ns=6 * MS)
    assert s.nscc.base_rtt_ns == 6 * MS                     # the floor when it is larger
    s = sender(base_rtt_ns=2 * MS)                          # no frame term, no floor
    s._rtt_sample(1 * MS, 5 * MS, ev=0)
    assert s.nscc.base_rtt_ns == 1 * MS


def test_the_endpoint_derives_the_frame_term_from_the_path_to_the_peer(tmp_path):
    spec = FabricSpec(host_link_mbit=25, fabric_link_mbit=25, mtu=9000)
    cfg = EndpointConfig.from_dict({"host": 0, "fabric": spec.to_dict(), "seed": 1,
                                    "event_log": str(tmp_path / "h0.jsonl")})
    ep = Endpoint(cfg, ports={p: FakePort(p) for p in range(spec.planes)}, clock=FakeClock(MS))
    try:
        same = ep.create_qp(0x100, 1, 0x200, base_rtt_ns=2 * MS)      # h1: h0's T0 group
        other = ep.create_qp(0x101, 2, 0x201, base_rtt_ns=2 * MS)     # h2: the other group
        frame = ep.max_payload + ep.qps[0x100].sender.cfg.header_overhead
        link_ns = frame * 8 / 25e6 * 1e9
        assert abs(ep.qps[0x100].sender.cfg.nscc_frame_rtt_ns - 2 * link_ns) <= 1
        assert abs(ep.qps[0x101].sender.cfg.nscc_frame_rtt_ns - 4 * link_ns) <= 1
        assert 8_900 <= frame <= 9_100                                 # a jumbo frame on the wire
        assert same is not None and other is not None
    finally:
        ep.close()
