"""Where the fabric spec, switch lookup and EV layout draw their lines, and what their errors say.

The limits: at most 8 planes, 64 groups, 64 spines and 32 hosts per group (the model's stated
ceilings, so every interface name fits Linux's IFNAMSIZ of 15 characters and every uSID and MAC
field its byte), link rates 0.1..10000 Mbit/s, the MTU from IPv6's minimum link MTU of 1280
bytes (RFC 8200, section 5) to a 9000-byte jumbo frame. The EV is plane(4 bits) << 28 |
spine(6 bits) << 22 | entropy(16 bits, 0 excluded).
"""
from __future__ import annotations

import pytest

from model.topology import FabricSpec, SpecError, Topology, make_ev

IFNAMSIZ = 15


@pytest.mark.parametrize("field,ceiling", [("planes", 8), ("groups", 64), ("spines", 64),
                                           ("hosts_per_group", 32)])
def test_each_count_is_accepted_up_to_its_ceiling_and_named_beyond_it(field, ceiling):
    base = {"planes": 1, "groups": 2, "spines": 1, "hosts_per_group": 1}
    assert getattr(FabricSpec(**{**base, field: ceiling}), field) == ceiling
    for bad in (ceiling + 1, 0):
        with pytest.raises(SpecError, match=rf"^{field} must be between 1 and {ceiling}, "
                                            rf"got {bad}$"):
            FabricSpec(**{**base, field: bad})
    for bad in (True, 2.0, "2"):
        with pytest.raises(SpecError, match=rf"^{field} must be an integer, got {bad!r}$"):
            FabricSpec(**{**base, field: bad})


def test_the_largest_fabric_names_fit_linux_interfaces():
    topo = Topology(FabricSpec(planes=8, groups=64, spines=1, hosts_per_group=32))
    names = [link.a_intf for link in topo.links] + [link.b_intf for link in topo.links]
    assert max(len(n) for n in names) <= IFNAMSIZ


@pytest.mark.parametrize("field", ["host_link_mbit", "fabric_link_mbit"])
def test_link_rates_from_a_tenth_to_ten_thousand_mbit(field):
    for ok in (0.1, 10000, 100):
        assert getattr(FabricSpec(**{field: ok}), field) == ok
    for bad in (0.09, 10000.5, 0, -1):
        with pytest.raises(SpecError, match=rf"^{field} must be between 0.1 and 10000 Mbit/s, "
                                            rf"got {bad}$"):
            FabricSpec(**{field: bad})
    for bad in (True, "100", None):
        with pytest.raises(SpecError, match=rf"^{field} must be a number, got {bad!r}$"):
            FabricSpec(**{field: bad})


def test_the_mtu_runs_from_the_ipv6_minimum_to_a_jumbo_frame():
    assert FabricSpec(mtu=1280).mtu == 1280 and FabricSpec(mtu=9000).mtu == 9000
    for bad in (1279, 9001, True, 1500.0, "1500"):
        with pytest.raises(SpecError, match=r"^mtu must be an integer number of bytes between "
                                            rf"1280 and 9000, got {bad!r}$"):
            FabricSpec(mtu=bad)


def test_a_fabric_needs_two_hosts():
    with pytest.raises(SpecError, match=r"^the fabric needs at least 2 hosts "
                                        r"\(groups \* hosts_per_group >= 2\)$"):
        FabricSpec(groups=1, hosts_per_group=1)
    assert FabricSpec(groups=1, hosts_per_group=2).num_hosts == 2


def test_from_dict_names_the_unknown_and_the_known_keys():
    with pytest.raises(SpecError) as err:
        FabricSpec.from_dict({"planes": 2, "routing": "srv6", "buffer": 3})
    assert str(err.value) == ("unknown fabric key(s): buffer, routing; known: "
                              "fabric_link_delay_ms, fabric_link_mbit, groups, "
                              "host_link_delay_ms, host_link_mbit, hosts_per_group, mtu, "
                              "planes, spines")


def test_from_fabric_table_ignores_other_keys_and_rejects_bad_values():
    spec = FabricSpec.from_fabric_table({"planes": 4, "spines": 3, "routing": "ecmp",
                                         "trim": True, "mtu": 9000})
    assert (spec.planes, spec.spines, spec.mtu, spec.groups) == (4, 3, 9000, 2)
    assert FabricSpec.from_fabric_table({}) == FabricSpec()
    with pytest.raises(SpecError, match="^planes must be between 1 and 8, got 9$"):
        FabricSpec.from_fabric_table({"planes": 9})


def test_an_unknown_switch_is_named_with_the_ones_that_exist():
    topo = Topology(FabricSpec(planes=1, groups=2, spines=1, hosts_per_group=1))
    with pytest.raises(KeyError) as err:
        topo.switch("t9p0g0")
    assert err.value.args[0] == "no switch named 't9p0g0'; switches are t0p0g0, t0p0g1, t1p0s0"


def test_make_ev_takes_every_field_to_its_width_and_names_what_does_not_fit():
    assert make_ev(15, 63, 0xFFFF) == 0xF000_0000 | 0x0FC0_0000 | 0xFFFF   # bits 16-21 unused
    assert make_ev(0, 0, 1) == 1
    assert make_ev(1, 2, 3) == (1 << 28) | (2 << 22) | 3
    for args, message in (((16, 0, 1), "plane 16 does not fit the EV"),
                          ((-1, 0, 1), "plane -1 does not fit the EV"),
                          ((0, 64, 1), "spine 64 does not fit the EV"),
                          ((0, -1, 1), "spine -1 does not fit the EV"),
                          ((0, 0, 0x10000), "entropy 65536 must be 1..65535"),
                          ((0, 0, 0), "entropy 0 must be 1..65535")):
        with pytest.raises(ValueError) as err:
            make_ev(*args)
        assert str(err.value) == message


def test_datapath_ids_pack_tier_plane_and_index_plus_one():
    from model.topology import dpid_of
    # 1 << 32 | tier << 24 | plane << 16 | index + 1
    assert dpid_of(1, 3, 4) == 0x0000_0001_0103_0005
    assert dpid_of(0, 0, 0) == 0x0000_0001_0000_0001
    assert dpid_of(0, 7, 63) == 0x0000_0001_0007_0040


def test_a_usid_container_holds_six_usids_after_the_locator():
    from model.topology import usid_address
    # 128 bits = a 32-bit locator (fcbb:bb00) + 6 x 16-bit uSIDs
    assert usid_address([1, 2, 3, 4, 5, 6]) == "fcbb:bb00:1:2:3:4:5:6"
    assert usid_address([0x1001]) == "fcbb:bb00:1001::"
    with pytest.raises(ValueError) as err:
        usid_address([1] * 7)
    assert str(err.value) == "a /128 container holds at most 6 uSIDs after a 32-bit locator"
    with pytest.raises(ValueError) as err:
        usid_address([0x10000])
    assert str(err.value) == "uSID 0x10000 is not 16 bits"


def test_links_carry_the_rate_of_their_kind():
    topo = Topology(FabricSpec(planes=1, groups=2, spines=1, hosts_per_group=1,
                               host_link_mbit=25, fabric_link_mbit=40))
    rates = {(link.kind, link.mbit) for link in topo.links}
    assert rates == {("host", 25), ("fabric", 40)}


def test_out_of_range_planes_spines_and_hosts_are_named_with_the_valid_range():
    topo = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2))
    for args, message in (((0, 2, 0, 2), "spine 2 out of range 0..1"),
                          ((0, 2, 2, 0), "plane 2 out of range 0..1"),
                          ((0, 2, 0, -1), "spine -1 out of range 0..1")):
        with pytest.raises(ValueError) as err:
            topo.usid_container(*args)
        assert str(err.value) == message
    assert topo.usid_container(0, 2, 1, 1)           # the last plane and spine are valid
    with pytest.raises(KeyError) as err:
        topo.host("h9")
    assert err.value.args[0] == "no host named 'h9'; hosts are h0..h3"
    with pytest.raises(KeyError) as err:
        topo.host(4)
    assert err.value.args[0] == "no host 4; hosts are h0..h3"
