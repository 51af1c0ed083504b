"""A VXLAN tunnel end's commands (emulation/cluster/vxlan.py) and the MTU the management
network needs for it."""
import pytest

from emulation.cluster import vxlan as V


def test_an_end_is_made_raised_and_named_as_the_link_interface():
    cmds = V.add_argv("h0-p1", 0x4D0001, "10.0.0.1", "10.0.0.2", 9000, "02:00:00:01:00:00")
    assert cmds == [
        ["ip", "link", "add", "h0-p1", "type", "vxlan", "id", str(0x4D0001), "local", "10.0.0.1",
         "remote", "10.0.0.2", "dstport", "4789", "nolearning"],
        ["ip", "link", "set", "dev", "h0-p1", "mtu", "9000", "address", "02:00:00:01:00:00"],
        ["ip", "link", "set", "dev", "h0-p1", "up"]]
    assert V.add_argv("t0p1g0-e3", 7, "10.0.0.2", "10.0.0.1", 1500)[1] == [
        "ip", "link", "set", "dev", "t0p1g0-e3", "mtu", "1500"]


def test_the_management_mtu_a_tunnelled_packet_needs():
    """14 (inner Ethernet) + 8 (VXLAN) + 8 (UDP) + 20 (outer IPv4) = 50 bytes more."""
    assert V.underlay_mtu_needed(9000) == 9050
    assert V.underlay_mtu_needed(1450) == 1500


@pytest.mark.parametrize("args,words", [
    (("x", 0, "10.0.0.1", "10.0.0.2", 1500), "a VNI is 1..16777215"),
    (("x", 1 << 24, "10.0.0.1", "10.0.0.2", 1500), "got 16777216"),
    (("x", 5, "host-a", "10.0.0.2", 1500), "local must be an IPv4 address"),
    (("x", 5, "10.0.0.1", "-oX", 1500), "remote must be an IPv4 address"),
])
def test_bad_ends_are_refused(args, words):
    with pytest.raises(V.TunnelError) as info:
        V.add_argv(*args)
    assert words in str(info.value)


def test_route_source_and_device():
    out = "10.0.0.2 dev mgmt0 src 10.0.0.1 uid 0 \n    cache \n"
    assert V.route_source(out) == "10.0.0.1" and V.route_device(out) == "mgmt0"
    assert V.route_get_argv("10.0.0.2") == ["ip", "route", "get", "10.0.0.2"]
    with pytest.raises(V.TunnelError, match="no route to 10.0.0.9"):
        V.route_source("RTNETLINK answers: Network is unreachable", "10.0.0.9")
    assert V.route_device("") is None
