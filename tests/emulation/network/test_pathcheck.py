"""pathcheck frames: Scapy-built bytes parse back to (src, ev, ecn); foreign frames are ignored."""
import pytest
from scapy.layers.inet6 import IPv6

from emulation.network import pathcheck
from model.topology import FabricSpec, Topology, make_ev


@pytest.fixture
def topo():
    return Topology(FabricSpec())


def test_srv6_frame_outer_dst_is_usid_container(topo):
    ev = make_ev(1, 1, 0x1234)
    frame = pathcheck.build_frame(topo, "srv6", 0, 3, ev, ecn=2)
    outer = IPv6(frame[14:])
    assert outer.dst == topo.usid_container(0, 3, 1, 1) and outer.nh == 41
    assert outer.payload.dst == topo.nic_addr(3, 1)
    assert outer.payload.payload.sport == 0x1234 and outer.payload.payload.dport == 4791
    assert pathcheck.parse_frame(frame) == (0, ev, 2)


def test_ecmp_frame_plain_ipv6(topo):
    ev = make_ev(0, 0, 77)
    frame = pathcheck.build_frame(topo, "ecmp", 2, 1, ev, ecn=1)
    ip = IPv6(frame[14:])
    assert ip.nh == 17 and ip.dst == topo.nic_addr(1, 0) and ip.payload.sport == 77
    assert pathcheck.parse_frame(frame) == (2, ev, 1)


def test_ce_marked_outer_is_reported(topo):
    frame = bytearray(pathcheck.build_frame(topo, "srv6", 0, 2, make_ev(0, 1, 5), ecn=2))
    frame[15] |= 0x30  # traffic class low bits live in byte 1 bits 5..4 of the IPv6 header
    assert pathcheck.parse_frame(bytes(frame))[2] == 3


@pytest.mark.parametrize("cut", [0, 14, 54, 70, 94])
def test_truncated_or_foreign_ignored(topo, cut):
    frame = pathcheck.build_frame(topo, "srv6", 0, 2, make_ev(0, 1, 5))
    assert pathcheck.parse_frame(frame[:cut]) is None


def test_other_udp_port_ignored(topo):
    from scapy.layers.inet import UDP
    from scapy.layers.l2 import Ether
    frame = bytes(Ether() / IPv6() / UDP(dport=53) / (b"\0" * 12 + pathcheck.MARKER + b"\0\0"))
    assert pathcheck.parse_frame(frame) is None


def test_bad_routing_rejected(topo):
    with pytest.raises(ValueError, match="routing"):
        pathcheck.build_frame(topo, "ospf", 0, 1, make_ev(0, 0, 1))
