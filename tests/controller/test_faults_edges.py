"""Fault commands (controller/faults.py): what the other fault tests leave open: the error that
lists every action, `node` given together with `a`, and one blackhole cookie per switch (so each
blackhole can be removed on its own)."""
import pytest

from controller import faults
from controller.faults import FaultError
from model.topology import FabricSpec, Topology

TOPO = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=1))


def test_an_unknown_action_lists_every_action():
    with pytest.raises(FaultError) as e:
        faults.validate({"action": "explode"}, TOPO)
    assert str(e.value) == (
        "unknown action 'explode'; actions are link_down, link_up, flap, gray_loss, "
        "gray_loss_clear, blackhole, blackhole_clear, degrade, degrade_clear, ecn_mark, ecn_clear")


def test_node_is_a_spelling_of_a_not_a_second_target():
    switch = sorted(TOPO.switches)[0]
    assert faults.validate({"action": "blackhole", "node": switch}, TOPO) == \
        {"action": "blackhole", "a": switch}
    with pytest.raises(FaultError, match=r"unexpected parameter\(s\) node"):
        faults.validate({"action": "blackhole", "a": switch, "node": switch}, TOPO)


def test_every_switch_gets_its_own_blackhole_cookie():
    cookies = {name: faults.blackhole_rule(TOPO, name).cookie for name in TOPO.switches}
    assert len(set(cookies.values())) == len(cookies) == 2 * (2 + 2)   # per plane: 2 T0 + 2 T1
