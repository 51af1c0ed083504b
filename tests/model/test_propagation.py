"""The propagation arithmetic (model/propagation.py) against values worked out by hand."""
import math

import pytest

from model import propagation as P
from model.topology import FabricSpec, SpecError

# random-loss.toml's fabric: 30 Mbit/s links, MTU 1500, 6.5 ms per host link, 0.25 ms per
# fabric link. A 1518-byte frame takes 1518 x 8 / 30e6 = 404.8 us on a link.
LOSSY = FabricSpec(host_link_mbit=30, fabric_link_mbit=30, host_link_delay_ms=6.5,
                   fabric_link_delay_ms=0.25)


def test_one_way_delay_sums_the_links_of_the_path():
    assert P.one_way_delay_ns(LOSSY, across_groups=True) == 13_500_000     # 2 x 6.5 + 2 x 0.25
    assert P.one_way_delay_ns(LOSSY, across_groups=False) == 13_000_000    # 2 x 6.5
    assert P.one_way_delay_ns(FabricSpec()) == 0


def test_round_trip_and_bdp_of_a_full_frame():
    assert P.wire_frame_bytes(LOSSY) == 1518
    # 27 ms of propagation + 4 x 404.8 us of serialization
    assert P.path_rtt_ns(LOSSY) == pytest.approx(27_000_000 + 1_619_200, abs=1)
    # 30e6 / 8 B/s x 28.6192 ms = 107 322 B = 70.70 frames of 1518 B
    assert P.bdp_packets(LOSSY) == pytest.approx(70.70, abs=0.01)
    # a transport that bypasses the delay line: serialization alone, one frame per link
    assert P.bdp_packets(LOSSY, delayed=False) == pytest.approx(4.0, abs=1e-6)


def test_without_delay_a_plane_holds_one_frame_per_store_and_forward_link():
    """The demo's fabric (100 Mbit/s, MTU 9000): 4 links of 721.44 us each, 4 frames."""
    demo = FabricSpec(mtu=9000)
    assert P.path_rtt_ns(demo) == pytest.approx(4 * 721_440, abs=1)
    assert P.bdp_packets(demo) == pytest.approx(4.0, abs=1e-6)
    assert P.path_rtt_ns(demo, across_groups=False) == pytest.approx(2 * 721_440, abs=1)


def test_the_shortest_path_is_under_one_t0_when_a_group_holds_two_hosts():
    """What the fidelity monitor judges a run without QPs (kernel TCP) against: the demo's
    fabric, 2 hosts per group: host link, T0, host link, 2 x 721.44 us; one host per group:
    across groups, 4 links; random-loss's with the delay line: 26 ms + 2 x 404.8 us."""
    demo = FabricSpec(mtu=9000)
    assert P.shortest_path_rtt_ns(demo, delayed=False) == pytest.approx(2 * 721_440, abs=1)
    alone = FabricSpec(mtu=9000, hosts_per_group=1)
    assert P.shortest_path_rtt_ns(alone, delayed=False) == pytest.approx(4 * 721_440, abs=1)
    assert P.shortest_path_rtt_ns(LOSSY) == pytest.approx(26_000_000 + 809_600, abs=1)
    assert P.shortest_path_rtt_ns(LOSSY, delayed=False) == pytest.approx(809_600, abs=1)


def test_propagation_of_the_shortest_path_and_the_variable_part_of_an_rtt():
    """What the fidelity monitor subtracts from a QP's base RTT before judging per-packet
    lateness: random-loss's same-T0 path, 2 x (2 x 6.5 ms); across groups with one host per
    group, 2 x 13.5 ms; nothing for a transport that bypasses the delay line."""
    assert P.shortest_path_propagation_rtt_ns(LOSSY) == 26_000_000
    alone = FabricSpec(host_link_mbit=30, fabric_link_mbit=30, host_link_delay_ms=6.5,
                       fabric_link_delay_ms=0.25, hosts_per_group=1)
    assert P.shortest_path_propagation_rtt_ns(alone) == 27_000_000
    assert P.shortest_path_propagation_rtt_ns(LOSSY, delayed=False) == 0
    # a measured base RTT of 27.6 ms holds 1.6 ms that is not propagation
    assert P.variable_rtt_ns(27_600_000, 26_000_000) == 1_600_000
    # no propagation, or a base RTT that does not hold it: the whole base RTT
    assert P.variable_rtt_ns(2_000_000, 0) == 2_000_000
    assert P.variable_rtt_ns(2_000_000, 26_000_000) == 2_000_000


def test_summary_fields_say_which_transport_gets_the_delay():
    mrc = P.summary_fields(LOSSY, "mrc")["propagation"]
    assert mrc["delay_emulated"] and mrc["note"] is None
    assert mrc["one_way_delay_ms"] == 13.5 and mrc["bdp_packets_per_plane"] == 70.7
    tcp = P.summary_fields(LOSSY, "tcp")["propagation"]
    assert not tcp["delay_emulated"] and "kernel" in tcp["note"]
    assert tcp["one_way_delay_ms"] == 0.0 and tcp["bdp_packets_per_plane"] == 4.0
    assert P.summary_fields(LOSSY, "roce")["propagation"]["delay_emulated"]


def test_console_line_names_the_bdp_and_tcp_without_delay():
    text = P.console_line(LOSSY, ["mrc", "roce", "tcp"])
    assert max(len(line) for line in text.splitlines()) <= P.CONSOLE_WIDTH
    line = " ".join(text.split())
    assert line.startswith("BDP 70.7 packets of 1518 B per plane")
    assert "28.6 ms" in line and "propagation 13.5 ms one way" in line
    assert "tcp gets no propagation delay (kernel TCP): BDP 4.0" in line
    assert "tcp" not in P.console_line(LOSSY, ["mrc"])
    assert "tcp" not in P.console_line(FabricSpec(), ["mrc", "tcp"])   # nothing to bypass


@pytest.mark.parametrize("value", [-0.1, math.nan, math.inf, True, "1", 100_001.0])
def test_a_link_delay_the_spec_cannot_take_names_the_key(value):
    with pytest.raises(SpecError, match="host_link_delay_ms"):
        FabricSpec(host_link_delay_ms=value)
    with pytest.raises(SpecError, match="fabric_link_delay_ms"):
        FabricSpec(fabric_link_delay_ms=value)


def test_the_delays_travel_with_the_spec():
    assert FabricSpec.from_dict(LOSSY.to_dict()) == LOSSY
    assert FabricSpec.from_dict({"planes": 2}).host_link_delay_ms == 0.0
