"""Many nftables faults at one instant as one nft transaction per namespace
(planner.merge_nft_steps): the expected commands are written out by hand from each fault's
nft script (controller/faults.py) for a 1-plane, 2-group, 2-spine fabric with one host per
group. Port names: t0p0g0-e1 faces h0, t0p0g0-e2 spine 0; t1p0s0-e1 faces group 0; h0-p0 is
h0's NIC on plane 0."""
import pytest

from controller import actions as A
from controller import planner as P
from controller.commands import RunArgv
from model import faults as R
from model.topology import FabricSpec, Topology

TOPO = Topology(FabricSpec(planes=1, groups=2, spines=2, hosts_per_group=1))
CTX = P.PlanContext(TOPO, {"h0": 4242})
EMPTY = P.FaultState()


def loss_script(table: str, intf: str, threshold: int) -> str:
    return (f"add table netdev {table}; delete table netdev {table}; add table netdev {table}; "
            f"add chain netdev {table} egress {{ type filter hook egress device \"{intf}\" "
            f"priority 0; policy accept; }}; "
            f"add rule netdev {table} egress numgen random mod 10000 < {threshold} counter drop")


def planned(actions, state=EMPTY):
    steps = []
    for action in actions:
        plan = P.plan(action, state, CTX)
        steps += plan.steps
        state = plan.state
    return steps, state


def test_loss_on_two_links_both_ways_is_one_nft_per_namespace_in_order():
    steps, final = planned([A.GrayLoss("h0", "t0p0g0", "both", 1.0),
                            A.GrayLoss("t0p0g0", "t1p0s0", "both", 1.0)])
    assert len(steps) == 4                                   # one per egress port
    merged = P.merge_nft_steps(EMPTY, steps)
    # 1 % of 0..9999: below 100 is dropped. h0's own NIC is the first port planned, so h0's
    # namespace comes first; the switch ports follow in the root namespace, in planned order.
    h0_ns = ("nsenter", "-t", "4242", "-n", "nft")
    assert [s.commands for s in merged] == [
        (RunArgv(h0_ns + (loss_script("mrclab_loss_h0_p0", "h0-p0", 100),)),),
        (RunArgv(("nft", "; ".join([
            loss_script("mrclab_loss_t0p0g0_e1", "t0p0g0-e1", 100),
            loss_script("mrclab_loss_t0p0g0_e2", "t0p0g0-e2", 100),
            loss_script("mrclab_loss_t1p0s0_e1", "t1p0s0-e1", 100)]))),),
    ]
    # a failure of the second command leaves the state of the first: h0's direction only
    assert set(merged[0].state.active) == {("gray_loss", "h0", "t0p0g0")}
    assert merged[1].state == final and len(final.active) == 4


def test_a_clear_and_a_new_rate_on_the_same_port_stay_in_order():
    before = planned([A.GrayLoss("t0p0g0", "t1p0s0", "a->b", 0.1)])[1]
    steps, final = planned([A.GrayLossClear("t0p0g0", "t1p0s0", "a->b"),
                            A.GrayLoss("t0p0g0", "t1p0s0", "a->b", 1.0)], before)
    [step] = P.merge_nft_steps(before, steps)
    assert step.commands == (RunArgv(("nft", "delete table netdev mrclab_loss_t0p0g0_e2; "
                                      + loss_script("mrclab_loss_t0p0g0_e2", "t0p0g0-e2", 100))),)
    assert dict(step.state.active) == {("gray_loss", "t0p0g0", "t1p0s0"): {"percent": 1.0}}
    assert step.state == final


def test_a_script_past_the_budget_starts_another_command():
    steps, final = planned([A.GrayLoss("t0p0g0", "t1p0s0", "both", 1.0)])
    one = len(loss_script("mrclab_loss_t0p0g0_e2", "t0p0g0-e2", 100))
    two = len(loss_script("mrclab_loss_t1p0s0_e1", "t1p0s0-e1", 100))
    joined = one + 2 + two
    assert len(P.merge_nft_steps(EMPTY, steps, budget=joined)) == 1
    split = P.merge_nft_steps(EMPTY, steps, budget=joined - 1)
    assert [len(s.commands) for s in split] == [1, 1] and split[-1].state == final
    assert split[0].commands[0].argv[-1] == loss_script("mrclab_loss_t0p0g0_e2", "t0p0g0-e2", 100)
    # Linux refuses one argument over 128 KiB (MAX_ARG_STRLEN): the default stays under it
    assert P.NFT_SCRIPT_BUDGET < 128 * 1024


def test_only_single_nft_commands_merge():
    steps, _ = planned([A.LinkDown("t0p0g0", "t1p0s0")])
    with pytest.raises(ValueError, match="not a single nft command"):
        P.merge_nft_steps(EMPTY, steps)


def test_the_kinds_applied_as_nftables_tables():
    assert {k.action for k in R.KINDS if k.nft_applied} == {
        "gray_loss", "gray_loss_clear", "ecn_mark", "ecn_clear"}
