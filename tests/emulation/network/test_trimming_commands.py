"""tc command builders and map layouts of emulation/network/trimming.py (pure, no root)."""
import struct

import pytest

from emulation.network import trimming
from model.proc import in_netns
from model.topology import FabricSpec, Topology
from emulation.network.vqueue import DSCP_TRIMMED, DSCP_TRIMMED_LASTHOP, PortConfig
from model.dscp import DSCP_CONTROL


def test_port_qdisc_commands_put_trimmed_dscps_in_the_priority_class():
    cmds = trimming.port_qdisc_commands("t0p0g0-e3", 100)
    assert cmds[0] == ["tc", "qdisc", "replace", "dev", "t0p0g0-e3", "root", "handle", "1:",
                       "htb", "default", "20"]
    classes = {c[c.index("classid") + 1]: c for c in cmds if c[1] == "class"}
    assert classes["1:1"][-4:] == ["rate", "100000kbit", "ceil", "100000kbit"]
    assert classes["1:10"][-2:] == ["prio", "0"] and classes["1:20"][-2:] == ["prio", "1"]
    # HTB serves a leaf under its assured rate first, whatever its prio: the priority leaf is
    # assured 99 of 100 Mbit/s so it stays there, the data leaf 1 Mbit/s and borrows the rest
    assert "99000kbit" in classes["1:10"] and "1000kbit" in classes["1:20"]
    assert all(c[c.index("ceil") + 1] == "100000kbit" for c in classes.values())
    filters = [c for c in cmds if c[1] == "filter"]
    matched = {int(f[f.index("priority") + 1], 16) >> 2 for f in filters}
    assert matched == {DSCP_TRIMMED, DSCP_TRIMMED_LASTHOP, DSCP_CONTROL}   # + SACKs, probes
    assert all(f[-2:] == ["flowid", "1:10"] and f[f.index("priority") + 2] == "0xfc"
               for f in filters)
    plain = trimming.port_qdisc_commands("t0p0g0-e3", 100, control_class=False)
    matched = {int(f[f.index("priority") + 1], 16) >> 2 for f in plain if f[1] == "filter"}
    assert matched == {DSCP_TRIMMED, DSCP_TRIMMED_LASTHOP}


def test_port_qdisc_commands_limit_and_bad_input():
    cmds = trimming.port_qdisc_commands("x", 10, limit_packets=50)
    assert ["tc", "qdisc", "replace", "dev", "x", "parent", "1:20", "handle", "20:", "pfifo",
            "limit", "50"] in cmds
    with pytest.raises(ValueError, match="rate_mbit"):
        trimming.port_qdisc_commands("x", 0)
    with pytest.raises(ValueError, match="limit_packets"):
        trimming.port_qdisc_commands("x", 10, limit_packets=0)


def test_attach_command_and_namespace_prefix():
    argv = trimming.attach_commands("s1-e1", "/o/trim.o")[0]
    assert argv[:6] == ["tc", "filter", "replace", "dev", "s1-e1", "egress"]
    assert argv[-6:] == ["bpf", "da", "obj", "/o/trim.o", "sec", "tc"]
    assert in_netns(42, ["tc"]) == ["nsenter", "-t", "42", "-n", "tc"]
    assert in_netns(None, ["tc"]) == ["tc"]


def test_config_value_layout_matches_trim_c():
    cfg = PortConfig(100, 1000, 2000, 3000, last_hop=True, mark=False, trim=True, drop_bytes=9000)
    rate, lo, hi, trim, drop, flags, _ = struct.unpack("<QIIIIII", trimming.config_value(cfg))
    assert (rate, lo, hi, trim, drop) == (12_500_000, 1000, 2000, 3000, 9000)
    assert flags == trimming.CFG_CONFIGURED | trimming.CFG_TRIM | trimming.CFG_LAST_HOP
    no_drop = PortConfig(100, 1000, 2000, 3000, last_hop=False)
    assert struct.unpack("<QIIIIII", trimming.config_value(no_drop))[4] == 0xFFFFFFFF


def test_parse_state_names_every_counter():
    raw = trimming.STATE_STRUCT.pack(0, 0, *range(1, len(trimming.STATE_FIELDS) + 1))
    state = trimming.parse_state(raw)
    assert state["vq_bytes"] == 1 and state["offered_packets"] == 3 and state["errors"] == 12


def test_fabric_ports_cover_every_switch_port_and_last_hops():
    topo = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2))
    ports = trimming.fabric_ports(topo)
    names = [p[0] for p in ports]
    assert len(names) == len(set(names))
    expected = sum(len(topo.switch_ports(s)) for s in topo.switches)
    assert len(ports) == expected
    last = {p[0] for p in ports if p[2]}
    host_links = [link for link in topo.links if link.kind == "host"]
    assert last == {link.b_intf for link in host_links}


def test_fabric_port_configs_floor_thresholds_in_frames_of_the_fabric_mtu():
    # 10 Mbit/s drains 1250 bytes per ms, so the drain-time terms (625 / 2500 / 5000 bytes) are
    # all below the frame floors: 2 frames ECN min, 2 more to ECN max, 10 frames to trim.
    for mtu, ecn_min, ecn_max, trim in ((1500, 3000, 6000, 15000),
                                        (9000, 18000, 36000, 90000)):
        topo = Topology(FabricSpec(planes=1, groups=2, spines=1, hosts_per_group=1,
                                   host_link_mbit=10, fabric_link_mbit=10, mtu=mtu))
        configs = trimming.fabric_port_configs(topo, True, True)
        assert set(configs) == {p[0] for p in trimming.fabric_ports(topo)}
        for cfg in configs.values():
            assert (cfg.ecn_min_bytes, cfg.ecn_max_bytes, cfg.trim_bytes) == (ecn_min, ecn_max,
                                                                              trim)
