"""The pure fabric spec: names, numbering, addresses, uSID containers and EVs for several sizes."""
import ipaddress

import pytest

from model import topology as T

SIZES = [
    T.FabricSpec(1, 1, 1, 2),
    T.FabricSpec(2, 2, 2, 2),
    T.FabricSpec(4, 3, 3, 3),
    T.FabricSpec(8, 4, 2, 4),
]


@pytest.mark.parametrize("spec", SIZES, ids=str)
def test_counts_and_unique_names(spec):
    topo = T.Topology(spec)
    assert len(topo.hosts) == spec.groups * spec.hosts_per_group
    assert len(topo.switches) == spec.planes * (spec.groups + spec.spines)
    host_links = [link for link in topo.links if link.kind == "host"]
    fabric_links = [link for link in topo.links if link.kind == "fabric"]
    assert len(host_links) == spec.num_hosts * spec.planes
    assert len(fabric_links) == spec.planes * spec.groups * spec.spines
    intfs = [link.a_intf for link in topo.links] + [link.b_intf for link in topo.links]
    assert len(intfs) == len(set(intfs))
    assert all(len(name) <= 15 for name in intfs)
    dpids = [s.dpid for s in topo.switches.values()]
    assert len(set(dpids)) == len(dpids) and 0 not in dpids
    usids = [s.usid for s in topo.switches.values()]
    assert len(set(usids)) == len(usids)


@pytest.mark.parametrize("spec", SIZES, ids=str)
def test_switch_ports_are_dense_and_consistent(spec):
    topo = T.Topology(spec)
    for name, sw in topo.switches.items():
        ports = topo.switch_ports(name)
        expected = spec.hosts_per_group + spec.spines if sw.tier == 0 else spec.groups
        assert sorted(ports) == list(range(1, expected + 1))
        for port, link in ports.items():
            intf = link.a_intf if link.a == name else link.b_intf
            assert intf == T.switch_intf(name, port)
            assert link.plane == sw.plane


@pytest.mark.parametrize("spec", SIZES, ids=str)
def test_addresses_unique_and_in_plane_prefix(spec):
    topo = T.Topology(spec)
    addrs, macs = set(), set()
    for h in topo.hosts:
        for p in range(spec.planes):
            addr = ipaddress.IPv6Address(topo.nic_addr(h.index, p))
            assert addr in ipaddress.IPv6Network(T.plane_prefix(p))
            assert addr in ipaddress.IPv6Network(T.group_prefix(p, h.group))
            addrs.add(addr)
            macs.add(topo.nic_mac(h.index, p))
    assert len(addrs) == len(macs) == spec.num_hosts * spec.planes


@pytest.mark.parametrize("spec", SIZES, ids=str)
def test_usid_container_names_every_switch_on_the_path(spec):
    topo = T.Topology(spec)
    for src, dst in topo.iter_host_pairs():
        for plane in range(spec.planes):
            for spine in range(spec.spines):
                locator, slots = T.usid_slots(topo.usid_container(src, dst, plane, spine))
                assert locator == T.USID_LOCATOR
                path = topo.path(src, dst, plane, spine)
                switches = [topo.switch(n) for n in path[1:-1]]
                assert slots[0] == switches[0].usid
                assert slots[2] == switches[-1].usid
                if len(switches) == 3:
                    assert slots[1] == switches[1].usid
                else:
                    assert slots[1] == 0
                assert slots[3] == T.USID_HOST_BASE | topo.host(dst).local
                assert slots[4:] == [0, 0]
                # every consecutive pair of the path is a real link of the plane
                assert all(link.plane == plane for link in topo.path_links(src, dst, plane, spine))


def test_slot_mask_selects_locator_and_one_slot():
    shift, mask = T.usid_slot_mask(2)
    addr = int(ipaddress.IPv6Address(T.usid_address([0x1001, 0x2003, 0x1002, 0x3001])))
    assert (addr & mask) >> shift & 0xFFFF == 0x2003
    assert (addr & mask) >> 96 == T.USID_LOCATOR


def test_ev_round_trip_through_the_wire_fields():
    for plane in (0, 3, 15):
        for spine in (0, 1, 63):
            for entropy in (1, 0x1234, 0xFFFF):
                ev = T.make_ev(plane, spine, entropy)
                wire = T.ev_from_wire(T.ev_udp_sport(ev), T.ev_flow_label(ev))
                assert wire == ev
                assert (T.ev_plane(ev), T.ev_spine(ev), T.ev_entropy(ev)) == (plane, spine, entropy)
                assert T.ev_flow_label(ev) < 1 << 20


@pytest.mark.parametrize("bad, field", [
    (dict(planes=0), "planes"), (dict(planes=9), "planes"), (dict(groups=2.5), "groups"),
    (dict(spines=True), "spines"), (dict(hosts_per_group=0), "hosts_per_group"),
    (dict(host_link_mbit=0), "host_link_mbit"), (dict(fabric_link_mbit="fast"), "fabric_link_mbit"),
    (dict(groups=1, hosts_per_group=1), "at least 2 hosts"),
])
def test_invalid_specs_are_rejected_naming_the_field(bad, field):
    with pytest.raises(T.SpecError, match=field):
        T.FabricSpec(**bad)


def test_from_dict_rejects_unknown_keys():
    with pytest.raises(T.SpecError, match="unknown fabric key"):
        T.FabricSpec.from_dict({"planes": 2, "spine": 2})
    assert T.FabricSpec.from_dict(T.FabricSpec(2, 3).to_dict()) == T.FabricSpec(2, 3)


def test_lookups_name_what_is_missing():
    topo = T.Topology(T.FabricSpec())
    with pytest.raises(KeyError, match="t0p9g0"):
        topo.link("t0p9g0", "t1p0s0")
    with pytest.raises(KeyError, match="no link between"):
        topo.link("t0p0g0", "t0p0g1")
    assert topo.link("t1p0s1", "t0p0g0").a == "t0p0g0"
    with pytest.raises(ValueError, match="plane 2"):
        topo.path(0, 3, 2, 0)
