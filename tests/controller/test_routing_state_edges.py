"""RoutingState (controller/routing_state.py) beyond one plane: a link of plane 1 reconverges
the T0s of plane 1 (which come after plane 0's T1s in the switch list), the bucket count reaches
the rules, port reports are recorded as given, and ports of an unknown switch are no link."""
import pytest

from controller import routing as R
from controller.routing_state import PortTransition, RoutingState
from model.topology import FabricSpec, Topology

TOPO = Topology(FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2))


def test_a_bad_mode_is_named():
    with pytest.raises(ValueError, match=r"routing must be one of \('srv6', 'ecmp'\), got 'ospf'"):
        RoutingState(TOPO, "ospf", 16)


def test_nothing_routed_around_at_start():
    state = RoutingState(TOPO, "ecmp", 16)
    assert state.reconverge(frozenset()) is None


def test_a_plane_1_link_down_reconverges_both_t0s_of_plane_1_only():
    """t0p1g0~t1p1s1 down: t0p1g0 stops using that uplink, t0p1g1 stops reaching group 0
    through t1p1s1; plane 0 and the T1s keep their rules."""
    state = RoutingState(TOPO, "ecmp", 16)
    for name in TOPO.switches:
        state.rules_for(name)
    down = frozenset({frozenset(("t0p1g0", "t1p1s1"))})
    assert set(state.reconverge(down)) == {"t0p1g0", "t0p1g1"}


def test_the_bucket_count_reaches_the_rules():
    for buckets in (2, 64):
        state = RoutingState(TOPO, "ecmp", buckets)
        assert state.rules_for("t0p0g0") == R.switch_rules(TOPO, "t0p0g0", "ecmp", frozenset(),
                                                          buckets)
    assert R.switch_rules(TOPO, "t0p0g0", "ecmp", frozenset(), 2) != \
        R.switch_rules(TOPO, "t0p0g0", "ecmp", frozenset(), 64)
    state = RoutingState(TOPO, "ecmp", 2)
    down = frozenset({frozenset(("t0p0g0", "t1p0s1"))})
    updates = state.reconverge(down)
    assert state.installed["t0p0g0"] == R.switch_rules(TOPO, "t0p0g0", "ecmp", down, 2)
    assert updates


def test_port_reports_are_recorded_as_given_and_unknown_switches_have_no_link():
    state = RoutingState(TOPO, "ecmp", 16)
    link = TOPO.switch_ports("t0p1g0")[4]
    assert state.port_status("t0p1g0", 4, False) == PortTransition("t0p1g0", 4, False, link)
    assert state.port_status("t0p1g0", 4, False) is None                 # no transition
    assert state.down_links() == frozenset({frozenset(("t0p1g0", "t1p1s1"))})
    assert state.port_status("nosuch", 1, False) == PortTransition("nosuch", 1, False, None)
    assert state.down_links() == frozenset({frozenset(("t0p1g0", "t1p1s1"))})
    assert state.port_status("t0p1g0", 4, True) == PortTransition("t0p1g0", 4, True, link)
