"""The fault planner on typed actions: expected commands are written out by hand from each
fault's definition (controller/faults.py's docstring) for a 1-plane, 2-group, 2-spine fabric
with one host per group, 100 Mbit/s links. Port names: t0p0g0-e1 faces h0, t0p0g0-e2 faces
spine 0 and t0p0g0-e3 spine 1; t1p0sS-e1 faces group 0 and t1p0sS-e2 group 1."""
import pytest

from controller import actions as A
from controller import planner as P
from controller.commands import (CancelFlap, DeleteCookie, InstallRules, RunArgv, StartFlap)
from controller.faults import FaultError
from model.topology import FabricSpec, Topology

TOPO = Topology(FabricSpec(planes=1, groups=2, spines=2, hosts_per_group=1))
CTX = P.PlanContext(TOPO)
EMPTY = P.FaultState()


def nft_egress(table: str, intf: str, rule: str) -> RunArgv:
    return RunArgv(("nft",
                    f"add table netdev {table}; delete table netdev {table}; "
                    f"add table netdev {table}; "
                    f"add chain netdev {table} egress {{ type filter hook egress device \"{intf}\" "
                    f"priority 0; policy accept; }}; "
                    f"add rule netdev {table} egress {rule}"))


def commands(plan):
    return [c for step in plan.steps for c in step.commands]


def test_gray_loss_5_percent_a_to_b_drops_on_a_egress_toward_b():
    plan = P.plan(A.GrayLoss("t0p0g0", "t1p0s0", "a->b", 5.0), EMPTY, CTX)
    # 5 % of a 0..9999 random number: below 500 is dropped
    assert commands(plan) == [nft_egress("mrclab_loss_t0p0g0_e2", "t0p0g0-e2",
                                         "numgen random mod 10000 < 500 counter drop")]
    assert dict(plan.state.active) == {("gray_loss", "t0p0g0", "t1p0s0"): {"percent": 5.0}}
    assert EMPTY.active == {}          # planning never changes the state it was given


def test_gray_loss_both_directions_is_one_step_per_port():
    plan = P.plan(A.GrayLoss("t0p0g0", "t1p0s0", "both", 0.01), EMPTY, CTX)
    first, second = plan.steps
    assert first.commands == (nft_egress("mrclab_loss_t0p0g0_e2", "t0p0g0-e2",
                                         "numgen random mod 10000 < 1 counter drop"),)
    assert second.commands == (nft_egress("mrclab_loss_t1p0s0_e1", "t1p0s0-e1",
                                          "numgen random mod 10000 < 1 counter drop"),)
    # a failure in the second step leaves the state of the first: one direction active
    assert set(first.state.active) == {("gray_loss", "t0p0g0", "t1p0s0")}
    assert set(second.state.active) == {("gray_loss", "t0p0g0", "t1p0s0"),
                                        ("gray_loss", "t1p0s0", "t0p0g0")}


def test_host_egress_runs_in_the_registered_namespace_or_is_refused():
    loss = A.GrayLoss("h0", "t0p0g0", "a->b", 5.0)
    with pytest.raises(FaultError, match="POST /hosts"):
        P.plan(loss, EMPTY, CTX)
    plan = P.plan(loss, EMPTY, P.PlanContext(TOPO, {"h0": 4242}))
    [cmd] = commands(plan)
    assert cmd.argv[:5] == ("nsenter", "-t", "4242", "-n", "nft")
    assert 'device "h0-p0"' in cmd.argv[5]


def test_gray_loss_clear_deletes_the_table_and_refuses_when_nothing_is_active():
    with pytest.raises(FaultError, match=r"gray_loss_clear: no gray_loss active on "
                                         r"t0p0g0<->t1p0s0 \(both\)"):
        P.plan(A.GrayLossClear("t0p0g0", "t1p0s0", "both"), EMPTY, CTX)
    lossy = P.plan(A.GrayLoss("t0p0g0", "t1p0s0", "a->b", 5.0), EMPTY, CTX).state
    plan = P.plan(A.GrayLossClear("t0p0g0", "t1p0s0", "both"), lossy, CTX)
    assert commands(plan) == [RunArgv(("nft", "delete table netdev mrclab_loss_t0p0g0_e2"))]
    assert plan.state.active == {}


def test_link_down_sets_switch_ends_down_and_cancels_a_flap():
    plan = P.plan(A.LinkDown("t0p0g0", "t1p0s1"), EMPTY, CTX)
    assert commands(plan) == [CancelFlap("t0p0g0", "t1p0s1"),
                              RunArgv(("ip", "link", "set", "dev", "t0p0g0-e3", "down")),
                              RunArgv(("ip", "link", "set", "dev", "t1p0s1-e1", "down"))]
    assert plan.state.admin_down == {frozenset(("t0p0g0", "t1p0s1"))}
    up = P.plan(A.LinkUp("t0p0g0", "t1p0s1"), plan.state, CTX)
    assert commands(up)[1:] == [RunArgv(("ip", "link", "set", "dev", "t0p0g0-e3", "up")),
                                RunArgv(("ip", "link", "set", "dev", "t1p0s1-e1", "up"))]
    assert up.state.admin_down == frozenset()


def test_host_link_down_touches_only_the_switch_end():
    # the host keeps its addresses: only its carrier drops (the T0 end goes down)
    plan = P.plan(A.LinkDown("h0", "t0p0g0"), EMPTY, CTX)
    assert commands(plan) == [CancelFlap("h0", "t0p0g0"),
                              RunArgv(("ip", "link", "set", "dev", "t0p0g0-e1", "down"))]


def test_flap_replaces_any_running_flap_and_leaves_state_to_its_steps():
    plan = P.plan(A.Flap("t0p0g1", "t1p0s0", 0.5, 3), EMPTY, CTX)
    assert commands(plan) == [CancelFlap("t0p0g1", "t1p0s0"), StartFlap("t0p0g1", "t1p0s0", 0.5, 3)]
    assert plan.state == EMPTY
    step = P.link_state_step(EMPTY, TOPO, "t0p0g1", "t1p0s0", up=False)
    assert step.commands == (RunArgv(("ip", "link", "set", "dev", "t0p0g1-e2", "down")),
                             RunArgv(("ip", "link", "set", "dev", "t1p0s0-e2", "down")))


def test_degrade_changes_existing_htb_leaves_and_restores_the_link_rate():
    degrade = A.Degrade("t0p0g0", "t1p0s0", "a->b", 0.25)
    assert P.degrade_queries(degrade, EMPTY, CTX) == {
        ("t0p0g0", "t1p0s0"): ["tc", "class", "show", "dev", "t0p0g0-e2"]}
    with pytest.raises(ValueError, match="HTB classes of t0p0g0-e2 unknown"):
        P.plan(degrade, EMPTY, CTX)
    ctx = P.PlanContext(TOPO, htb_leaves={("t0p0g0", "t1p0s0"): ("1:10", "1:20")})
    plan = P.plan(degrade, EMPTY, ctx)
    # 25 % of 100 Mbit/s = 25000 kbit on both leaves
    assert commands(plan) == [
        RunArgv(("tc", "class", "change", "dev", "t0p0g0-e2", "classid", leaf, "htb",
                 "rate", "25000kbit", "burst", "15k")) for leaf in ("1:10", "1:20")]
    assert dict(plan.state.active) == {("degrade", "t0p0g0", "t1p0s0"):
                                       {"fraction": 0.25, "mbit": 25.0}}
    assert P.degrade_queries(degrade, plan.state, CTX) == {}    # known now
    clear = P.plan(A.DegradeClear("t0p0g0", "t1p0s0", "both"), plan.state, CTX)
    assert commands(clear) == [
        RunArgv(("tc", "class", "change", "dev", "t0p0g0-e2", "classid", leaf, "htb",
                 "rate", "100000kbit", "burst", "15k")) for leaf in ("1:10", "1:20")]
    assert clear.state == EMPTY


def test_degrade_without_htb_adds_its_own_root_then_changes_it_then_deletes_it():
    degrade = A.Degrade("t0p0g0", "t1p0s0", "a->b", 0.5)
    ctx = P.PlanContext(TOPO, htb_leaves={("t0p0g0", "t1p0s0"): ()})
    first = P.plan(degrade, EMPTY, ctx)
    assert commands(first) == [
        RunArgv(("tc", "qdisc", "add", "dev", "t0p0g0-e2", "root", "handle", "7a:0", "htb",
                 "default", "1")),
        RunArgv(("tc", "class", "add", "dev", "t0p0g0-e2", "parent", "7a:0", "classid", "7a:1",
                 "htb", "rate", "50000kbit", "burst", "15k"))]
    again = P.plan(A.Degrade("t0p0g0", "t1p0s0", "a->b", 0.1), first.state, CTX)
    assert commands(again) == [
        RunArgv(("tc", "class", "change", "dev", "t0p0g0-e2", "parent", "7a:0", "classid",
                 "7a:1", "htb", "rate", "10000kbit", "burst", "15k"))]
    clear = P.plan(A.DegradeClear("t0p0g0", "t1p0s0", "a->b"), again.state, CTX)
    assert commands(clear) == [RunArgv(("tc", "qdisc", "del", "dev", "t0p0g0-e2", "root"))]


def test_ecn_mark_rate_in_bytes_and_says_which_marker_the_port_has():
    mark = A.EcnMark("t1p0s0", "t0p0g1", "a->b", 80.0)
    # 80 Mbit/s = 10,000,000 bytes/s; only ECN-capable IPv6 packets get CE
    rule = ("meta protocol ip6 limit rate over 10000000 bytes/second "
            "ip6 ecn != not-ect ip6 ecn set ce counter")
    plain = P.plan(mark, EMPTY, CTX)
    assert commands(plain) == [nft_egress("mrclab_ecn_t1p0s0_e2", "t1p0s0-e2", rule)]
    assert plain.log_extra["marker"] == "nftables-fallback"
    assert "no in-fabric BPF marker" in plain.log_extra["notes"][0]
    with_bpf = P.plan(mark, EMPTY, P.PlanContext(TOPO, bpf_marker_ports=frozenset({"t1p0s0-e2"})))
    assert "BPF virtual-queue marker is active" in with_bpf.log_extra["notes"][0]
    clear = P.plan(A.EcnClear("t1p0s0", "t0p0g1", "both"), plain.state, CTX)
    assert commands(clear) == [RunArgv(("nft", "delete table netdev mrclab_ecn_t1p0s0_e2"))]


def test_blackhole_installs_a_top_priority_drop_and_clear_deletes_it_by_cookie():
    with pytest.raises(FaultError, match="switch t1p0s1 is not connected"):
        P.plan(A.Blackhole("t1p0s1"), EMPTY, P.PlanContext(TOPO, connected=frozenset()))
    plan = P.plan(A.Blackhole("t1p0s1"), EMPTY,
                  P.PlanContext(TOPO, connected=frozenset({"t1p0s1"})))
    [install] = commands(plan)
    [rule] = install.rules
    assert install.switch == "t1p0s1"
    # matches everything, no actions (drop), above every routing rule (highest is 50000)
    assert rule.match == {} and rule.actions == () and rule.priority > 50000
    assert plan.state.blackholes == {"t1p0s1"}
    with pytest.raises(FaultError, match="t1p0s1 is already a blackhole"):
        P.plan(A.Blackhole("t1p0s1"), plan.state, CTX)
    clear = P.plan(A.BlackholeClear("t1p0s1"), plan.state, CTX)
    assert commands(clear) == [DeleteCookie("t1p0s1", rule.cookie)]
    assert clear.state == EMPTY
    with pytest.raises(FaultError, match="t1p0s1 is not a blackhole"):
        P.plan(A.BlackholeClear("t1p0s1"), clear.state, CTX)


def test_clear_actions_undo_every_direction_in_force():
    state = P.plan(A.GrayLoss("t0p0g0", "t1p0s0", "both", 1.0), EMPTY, CTX).state
    state = P.plan(A.EcnMark("t1p0s1", "t0p0g1", "a->b", 10.0), state, CTX).state
    clears = P.clear_actions(state)
    assert sorted(clears, key=repr) == sorted([
        A.GrayLossClear("t0p0g0", "t1p0s0", "a->b"), A.GrayLossClear("t1p0s0", "t0p0g0", "a->b"),
        A.EcnClear("t1p0s1", "t0p0g1", "a->b")], key=repr)
    for clear in clears:
        state = P.plan(clear, state, CTX).state
    assert state == EMPTY


def test_api_commands_become_typed_actions_with_validate_errors():
    assert A.parse({"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": 5},
                   TOPO) == A.GrayLoss("t0p0g0", "t1p0s0", "both", 5.0)
    assert A.parse({"action": "blackhole", "node": "t1p0s0"}, TOPO) == A.Blackhole("t1p0s0")
    assert A.Flap("t0p0g0", "t1p0s0", 1.0, 2).as_dict() == {
        "action": "flap", "a": "t0p0g0", "b": "t1p0s0", "period_s": 1.0, "count": 2}
    with pytest.raises(FaultError, match="unknown action 'melt'"):
        A.parse({"action": "melt"}, TOPO)
    with pytest.raises(FaultError, match="gray_loss: percent must be in 0..100"):
        A.parse({"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": 101}, TOPO)


def test_ecn_mark_is_remembered_with_its_rate_and_its_note_names_the_port():
    """The service lists active faults with their parameters (the `links` view): an ECN mark
    of 80 Mbit/s from t1p0s0 toward t0p0g1 is kept under (ecn_mark, t1p0s0, t0p0g1)."""
    plan = P.plan(A.EcnMark("t1p0s0", "t0p0g1", "a->b", 80.0), EMPTY, CTX)
    assert dict(plan.state.active[("ecn_mark", "t1p0s0", "t0p0g1")]) == {"rate_mbit": 80.0}
    assert plan.log_extra["notes"][0].startswith("ecn_mark on t1p0s0-e2: ")
