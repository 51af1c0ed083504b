"""Fault commands written out in full (tc-htb(8), nft(8) syntax) and the validator's limits at
their edges. Expected argv lists are typed from the tools' syntax, not taken from the module."""
import pytest

from controller import faults
from controller.faults import FaultError
from model.topology import FabricSpec, Topology

TOPO = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2))
NS = ["nsenter", "-t", "42", "-n"]


def test_tc_commands_in_full():
    assert faults.tc_class_show_command(NS, "h0-p1") == NS + ["tc", "class", "show", "dev", "h0-p1"]
    assert faults.degrade_commands(NS, "e1", ["1:10", "5:1"], 12.5) == [
        NS + ["tc", "class", "change", "dev", "e1", "classid", "1:10", "htb",
              "rate", "12500kbit", "burst", "15k"],
        NS + ["tc", "class", "change", "dev", "e1", "classid", "5:1", "htb",
              "rate", "12500kbit", "burst", "15k"]]
    # no HTB class of its own: a root HTB qdisc (handle 7a) whose default class 1 is limited
    assert faults.degrade_commands([], "x", [], 0.0004) == [
        ["tc", "qdisc", "add", "dev", "x", "root", "handle", "7a:0", "htb", "default", "1"],
        ["tc", "class", "add", "dev", "x", "parent", "7a:0", "classid", "7a:1", "htb",
         "rate", "1kbit", "burst", "15k"]]                   # never below 1 kbit
    assert faults.degrade_clear_commands(NS, "e1", ["1:10"], 100, own_qdisc=False) == [
        NS + ["tc", "class", "change", "dev", "e1", "classid", "1:10", "htb",
              "rate", "100000kbit", "burst", "15k"]]
    assert faults.mbit_arg(0.0016) == "2kbit"                # 1.6 kbit rounds to 2


def test_nft_commands_in_full():
    table = "mrclab_loss_t0p0g0_e3"
    assert faults.gray_loss_commands([], "t0p0g0-e3", 12.346) == [["nft", (
        f"add table netdev {table}; delete table netdev {table}; add table netdev {table}; "
        f"add chain netdev {table} egress {{ type filter hook egress device \"t0p0g0-e3\" "
        f"priority 0; policy accept; }}; "
        f"add rule netdev {table} egress numgen random mod 10000 < 1235 counter drop")]]
    [argv] = faults.ecn_mark_commands(NS, "t1p0s0-e2", 0.004)           # 500 B/s
    assert argv[:5] == NS + ["nft"]
    assert argv[5].endswith("add rule netdev mrclab_ecn_t1p0s0_e2 egress meta protocol ip6 "
                            "limit rate over 500 bytes/second ip6 ecn != not-ect "
                            "ip6 ecn set ce counter")
    assert faults.ecn_rate_bytes(0.0000001) == 1                       # never 0 bytes/s
    assert faults.ecn_rate_bytes(0.000012) == 2                        # 1.5 B/s rounds to 2
    assert faults.nft_clear_commands(NS, "ecn", "h0-p0") == [
        NS + ["nft", "delete table netdev mrclab_ecn_h0_p0"]]


def test_link_commands_only_touch_switch_ends():
    assert faults.link_set_commands(TOPO, "t0p0g0", "t1p0s1", False, {}) == [
        ["ip", "link", "set", "dev", faults.intf_of(TOPO, "t0p0g0", "t1p0s1"), "down"],
        ["ip", "link", "set", "dev", faults.intf_of(TOPO, "t1p0s1", "t0p0g0"), "down"]]
    assert faults.link_set_commands(TOPO, "h1", "t0p1g0", True, {}) == [
        ["ip", "link", "set", "dev", faults.intf_of(TOPO, "t0p1g0", "h1"), "up"]]
    assert faults.netns_prefix(TOPO, "t0p0g0", {}) == []
    assert faults.netns_prefix(TOPO, "h3", {"h3": 77}) == ["nsenter", "-t", "77", "-n"]
    with pytest.raises(FaultError, match="h3 is a host and its namespace is unknown"):
        faults.netns_prefix(TOPO, "h3", {})
    assert faults.egress_ports(TOPO, {"a": "h0", "b": "t0p0g0", "direction": "b->a"}, {}) == [
        ([], faults.intf_of(TOPO, "t0p0g0", "h0"))]


def test_blackhole_rule_cookie_names_the_switch():
    rule = faults.blackhole_rule(TOPO, "t1p1s0")
    other = faults.blackhole_rule(TOPO, "t1p0s1")
    assert rule.cookie != other.cookie and rule.table == other.table == 0


def ok(**cmd):
    return faults.validate(cmd, TOPO)


def test_validation_limits_at_their_edges():
    link = {"a": "t0p0g0", "b": "t1p0s0"}
    assert ok(action="flap", period_s=0.02, count=1, **link)["period_s"] == 0.02
    assert ok(action="flap", period_s=3600, count=10000, **link)["count"] == 10000
    for bad in ({"period_s": 0.019, "count": 1}, {"period_s": 3600.5, "count": 1}):
        with pytest.raises(FaultError, match=r"period_s must be in 0\.02\.\.3600"):
            ok(action="flap", **bad, **link)
    for count in (0, 10001, 2.0, True):
        with pytest.raises(FaultError, match="count must be an integer in 1..10000"):
            ok(action="flap", period_s=1, count=count, **link)
    assert ok(action="gray_loss", percent=0, **link)["percent"] == 0.0
    assert ok(action="gray_loss", percent=100, **link) == {
        "action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "direction": "both", "percent": 100.0}
    for pct in (-0.01, 100.01):
        with pytest.raises(FaultError, match=r"percent must be in 0\.\.100"):
            ok(action="gray_loss", percent=pct, **link)
    assert ok(action="degrade", fraction=1, **link)["fraction"] == 1.0
    with pytest.raises(FaultError, match=r"fraction must be in \(0, 1\]"):
        ok(action="degrade", fraction=1.0001, **link)
    assert ok(action="ecn_mark", rate_mbit=100000, **link)["rate_mbit"] == 100000.0
    with pytest.raises(FaultError, match=r"rate_mbit must be in \(0, 100000\]"):
        ok(action="ecn_mark", rate_mbit=100000.5, **link)
    for value in (float("nan"), float("inf"), "5", None):
        with pytest.raises(FaultError, match="percent must be a number"):
            ok(action="gray_loss", percent=value, **link)
    # a host's uplink direction may be marked; the last hop into a host may not
    assert ok(action="ecn_mark", a="h0", b="t0p0g0", rate_mbit=1, direction="a->b")
    with pytest.raises(FaultError, match="t0p0g0->h0 is a last hop to a host"):
        ok(action="ecn_mark", a="h0", b="t0p0g0", rate_mbit=1, direction="b->a")


def test_validation_names_what_is_wrong():
    with pytest.raises(FaultError, match="must be a JSON object, got list"):
        faults.validate([], TOPO)
    with pytest.raises(FaultError, match=r"unexpected parameter\(s\) colour, size; allowed: a, b$"):
        ok(action="link_down", a="t0p0g0", b="t1p0s0", colour=1, size=2)
    with pytest.raises(FaultError, match=r"missing parameter\(s\) b, percent"):
        ok(action="gray_loss", a="t0p0g0")
    with pytest.raises(FaultError, match="unknown node 5 in field 'a'"):
        ok(action="link_up", a=5, b="t1p0s0")
    with pytest.raises(FaultError, match="direction must be one of a->b, b->a, both, got 'up'"):
        ok(action="degrade_clear", a="t0p0g0", b="t1p0s0", direction="up")
    assert ok(action="blackhole", node="t1p0s0") == {"action": "blackhole", "a": "t1p0s0"}
    with pytest.raises(FaultError, match="'h2' is a host"):
        ok(action="blackhole_clear", a="h2")
    assert faults.directed_pairs({"a": "x", "b": "y"}) == [("x", "y"), ("y", "x")]


def test_flap_schedule_and_table_names_by_hand():
    """period 0.5 s: down at 0, 0.5, 1.0 s, each for a quarter second."""
    assert faults.flap_schedule(0.5, 3) == [(0.0, False), (0.25, True), (0.5, False),
                                            (0.75, True), (1.0, False), (1.25, True)]
    assert faults.nft_table_name("loss", "T0p0G1-e3.x") == "mrclab_loss_T0p0G1_e3_x"
