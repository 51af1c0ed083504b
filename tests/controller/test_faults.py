"""Fault command validation and command building (no root needed)."""
import pytest

from controller import faults, routing
from controller.faults import FaultError
from model.topology import FabricSpec, Topology

TOPO = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2))


@pytest.mark.parametrize("cmd, message", [
    ({"action": "explode", "a": "t0p0g0", "b": "t1p0s0"}, "unknown action 'explode'"),
    ({"a": "t0p0g0", "b": "t1p0s0"}, "unknown action None"),
    ({"action": "link_down", "a": "t0p9g0", "b": "t1p0s0"}, "unknown node 't0p9g0'"),
    ({"action": "link_down", "a": "t0p0g0", "b": "t0p0g1"}, "no link between 't0p0g0' and 't0p0g1'"),
    ({"action": "link_down", "a": "t0p0g0", "b": "t1p1s0"}, "no link"),
    ({"action": "link_down", "a": "t0p0g0"}, "missing parameter(s) b"),
    ({"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0"}, "missing parameter(s) percent"),
    ({"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": 101}, "percent must be in 0..100"),
    ({"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": -0.5}, "percent"),
    ({"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": "20"}, "must be a number"),
    ({"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": 5, "direction": "up"},
     "direction must be one of"),
    ({"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": 5, "colour": 1},
     "unexpected parameter(s) colour"),
    ({"action": "degrade", "a": "t0p0g0", "b": "t1p0s0", "fraction": 0}, "fraction must be in (0, 1]"),
    ({"action": "degrade", "a": "t0p0g0", "b": "t1p0s0", "fraction": 1.5}, "fraction"),
    ({"action": "ecn_mark", "a": "t0p0g0", "b": "h0", "rate_mbit": 10, "direction": "a->b"},
     "last hop to a host"),
    ({"action": "ecn_mark", "a": "h0", "b": "t0p0g0", "rate_mbit": 10}, "last hop to a host"),
    ({"action": "ecn_mark", "a": "t0p0g0", "b": "t1p0s0", "rate_mbit": 0}, "rate_mbit"),
    ({"action": "blackhole", "a": "h1"}, "must be a switch"),
    ({"action": "blackhole", "a": "t0p0g0", "b": "t1p0s0"}, "unexpected parameter(s) b"),
    ({"action": "blackhole"}, "missing parameter(s) a"),
    ({"action": "flap", "a": "t0p0g0", "b": "t1p0s0", "period_s": 1}, "missing parameter(s) count"),
    ({"action": "flap", "a": "t0p0g0", "b": "t1p0s0", "period_s": 0, "count": 2}, "period_s"),
    ({"action": "flap", "a": "t0p0g0", "b": "t1p0s0", "period_s": 1, "count": 2.5}, "count"),
    ("link_down", "JSON object"),
])
def test_bad_commands_rejected_with_clear_message(cmd, message):
    with pytest.raises(FaultError) as err:
        faults.validate(cmd, TOPO)
    assert message in str(err.value)


def test_valid_commands_normalized():
    assert faults.validate({"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": 20},
                           TOPO) == {"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0",
                                     "percent": 20.0, "direction": "both"}
    assert faults.validate({"action": "blackhole", "node": "t1p1s1"}, TOPO) == \
        {"action": "blackhole", "a": "t1p1s1"}
    ok = faults.validate({"action": "ecn_mark", "a": "h0", "b": "t0p0g0", "rate_mbit": 5,
                          "direction": "a->b"}, TOPO)
    assert ok["rate_mbit"] == 5.0
    assert faults.validate({"action": "link_down", "a": "h3", "b": "t0p1g1"}, TOPO)["b"] == "t0p1g1"


def test_link_set_commands_switch_ends_only():
    cmds = faults.link_set_commands(TOPO, "t0p0g0", "t1p0s1", False, {})
    assert cmds == [["ip", "link", "set", "dev", "t0p0g0-e4", "down"],
                    ["ip", "link", "set", "dev", "t1p0s1-e1", "down"]]
    # a host end is never set admin-down (it would lose its address, route and neighbours):
    # the switch end goes down and the host loses carrier
    for pids in ({"h1": 4242}, {}):
        assert faults.link_set_commands(TOPO, "h1", "t0p1g0", True, pids) == [
            ["ip", "link", "set", "dev", "t0p1g0-e2", "up"]]
        assert faults.link_set_commands(TOPO, "t0p1g0", "h1", False, pids) == [
            ["ip", "link", "set", "dev", "t0p1g0-e2", "down"]]


def test_gray_loss_commands_fractional_percent_and_direction():
    fault = faults.validate({"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0",
                             "percent": 0.25, "direction": "b->a"}, TOPO)
    [(ns, intf)] = faults.egress_ports(TOPO, fault, {})
    assert ns == [] and intf == "t1p0s0-e1"
    [argv] = faults.gray_loss_commands(ns, intf, fault["percent"])
    assert argv[0] == "nft"
    assert "numgen random mod 10000 < 25 counter drop" in argv[1]
    assert 'hook egress device "t1p0s0-e1"' in argv[1]
    assert "netdev mrclab_loss_t1p0s0_e1" in argv[1]
    assert faults.nft_clear_commands(ns, "loss", intf) == [
        ["nft", "delete table netdev mrclab_loss_t1p0s0_e1"]]
    assert faults.loss_threshold(100) == 10000 and faults.loss_threshold(0.01) == 1


def test_host_side_faults_need_namespace():
    fault = faults.validate({"action": "gray_loss", "a": "h0", "b": "t0p0g0", "percent": 5,
                             "direction": "a->b"}, TOPO)
    with pytest.raises(FaultError, match="POST /hosts"):
        faults.egress_ports(TOPO, fault, {})
    [(ns, intf)] = faults.egress_ports(TOPO, fault, {"h0": 99})
    assert ns == ["nsenter", "-t", "99", "-n"] and intf == "h0-p0"


def test_ecn_commands_only_mark_ect_over_rate():
    [argv] = faults.ecn_mark_commands([], "t1p0s0-e2", 8)
    assert ("limit rate over 1000000 bytes/second ip6 ecn != not-ect ip6 ecn set ce"
            in argv[1])
    assert "mrclab_ecn_t1p0s0_e2" in argv[1]


def test_htb_parsing_and_degrade_commands():
    out = ("class htb 5:1 root prio 0 rate 100Mbit ceil 100Mbit burst 15337b cburst 1600b\n"
           "class htb 1:1 root rate 1Gbit\nclass htb 1:10 parent 1:1 prio 0 rate 5Mbit\n")
    assert faults.htb_leaf_classes(out) == ["5:1", "1:10"]
    assert faults.htb_leaf_classes("") == []
    cmds = faults.degrade_commands([], "t0p0g0-e3", ["5:1"], 25)
    assert cmds == [["tc", "class", "change", "dev", "t0p0g0-e3", "classid", "5:1", "htb",
                     "rate", "25000kbit", "burst", "15k"]]
    own = faults.degrade_commands([], "x", [], 2.5)
    assert own[0][:4] == ["tc", "qdisc", "add", "dev"] and "2500kbit" in own[1]
    assert faults.degrade_clear_commands([], "x", [], 100, own_qdisc=True) == [
        ["tc", "qdisc", "del", "dev", "x", "root"]]


def test_flap_schedule_and_blackhole_rule():
    assert faults.flap_schedule(1.0, 2) == [(0.0, False), (0.5, True), (1.0, False), (1.5, True)]
    rule = faults.blackhole_rule(TOPO, "t1p1s0")
    assert rule.match == {} and rule.actions == ()
    assert rule.priority > max(r.priority for r in routing.switch_rules(TOPO, "t1p1s0"))
    assert routing.cookie_kind(rule.cookie) == routing.KIND_FAULT_BLACKHOLE
