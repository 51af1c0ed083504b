"""The delay line, the per-peer delays and the receive buffer size (endpoint_support), from the
fabric's numbers worked out by hand."""
import pytest

from model.topology import FabricSpec
from traffic.nic.endpoint_support import (DEFAULT_RX_BUFFER_BYTES, MAX_RX_BUFFER_BYTES,
                                          DelayLine, peer_delays_ns, rx_buffer_bytes)

pytestmark = pytest.mark.core


def test_release_order_is_release_time_then_arrival():
    line = DelayLine({1: 4_000_000})
    line.push(5_000, "b")
    line.push(3_000, "a")
    line.push(5_000, "c")             # same release as "b": after it, as it arrived after it
    assert line.next_release() == 3_000 and len(line) == 3
    assert line.pop_due(2_999) == []
    assert line.pop_due(5_000) == [(3_000, "a"), (5_000, "b"), (5_000, "c")]
    assert line.next_release() is None and len(line) == 0
    assert line.held_max == 3
    assert line.delay_of(1) == 4_000_000 and line.delay_of(9) == 0


def test_each_peer_gets_its_paths_links():
    """Default fabric: hosts 0, 1 under group 0's T0, hosts 2, 3 under group 1's. From host 1:
    host 0 is two host links away, hosts 2 and 3 two host and two fabric links."""
    spec = FabricSpec(host_link_delay_ms=2.0, fabric_link_delay_ms=3.0)
    assert peer_delays_ns(spec, 1) == {0: 4_000_000, 2: 10_000_000, 3: 10_000_000}
    assert peer_delays_ns(FabricSpec(), 1) == {0: 0, 2: 0, 3: 0}


def test_the_receive_buffer_holds_a_bdp_from_every_peer():
    # no delay: 4 frames per plane, 3 peers, 2 KiB slots = 24 KiB, under the default
    assert rx_buffer_bytes(FabricSpec(), 2048) == DEFAULT_RX_BUFFER_BYTES
    # 50 ms per host link at 100 Mbit/s: round trip 200 ms + 4 x 121.44 us = 200.48576 ms,
    # 12.5e6 B/s x that / 1518 B = 1650.9 frames, 1651 from each of 3 peers, 2 KiB each
    far = FabricSpec(host_link_delay_ms=50.0)
    assert rx_buffer_bytes(far, 2048) == 1651 * 3 * 2048
    # 10 Gbit/s and 100 ms per link: far beyond what the machine gives one port
    huge = FabricSpec(host_link_mbit=10000, fabric_link_mbit=10000, host_link_delay_ms=100.0,
                      fabric_link_delay_ms=100.0)
    assert rx_buffer_bytes(huge, 16384) == MAX_RX_BUFFER_BYTES
