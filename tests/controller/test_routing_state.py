"""Routing state: port events and ECMP reconvergence return the flow-rule changes, checked by
forwarding packets through the fake OpenFlow fabric before and after a link goes down.

Fabric: 1 plane, 2 groups, 2 spines, 2 hosts per group. ECMP uses 8 buckets (smallest power of
two >= 4 x 2 spines); bucket = UDP sport & 7, and with both spines up bucket b goes to spine
b % 2. So sport 4 leaves group 0 through spine 0 and sport 5 through spine 1. T0 ports:
1-2 hosts, 3 = spine 0, 4 = spine 1."""
from controller import routing as R
from controller.routing_state import RoutingState
from model.topology import FabricSpec, Topology
from tests.helpers.fakeoftable import FakeFabric

TOPO = Topology(FabricSpec(planes=1, groups=2, spines=2, hosts_per_group=2))
G0_SPINE0 = frozenset(("t0p0g0", "t1p0s0"))


def udp(src: int, dst: int, sport: int) -> dict:
    return {"eth_type": 0x86DD, "ip_proto": 17, "udp_src": sport,
            "ipv6_src": TOPO.nic_addr(src, 0), "ipv6_dst": TOPO.nic_addr(dst, 0)}


def connect_all(state: RoutingState) -> dict:
    return {name: state.rules_for(name) for name in TOPO.switches}


def apply_adds(tables: dict, updates: dict) -> dict:
    """What OFPFC_ADD does on the switches: a rule with the same table, priority and match
    replaces the old one in place."""
    out = {}
    for name, rules in tables.items():
        new = {r.key(): r for r in updates.get(name, [])}
        out[name] = [new.pop(r.key(), r) for r in rules] + list(new.values())
    return out


def test_link_down_then_reconverge_moves_only_the_broken_buckets():
    state = RoutingState(TOPO, "ecmp", 8)
    tables = connect_all(state)
    fab = FakeFabric(TOPO, tables)
    assert fab.send(0, 0, udp(0, 2, 4)).nodes == ["h0", "t0p0g0", "t1p0s0", "t0p0g1", "h2"]
    assert fab.send(0, 0, udp(0, 2, 5)).nodes == ["h0", "t0p0g0", "t1p0s1", "t0p0g1", "h2"]

    change = state.port_status("t0p0g0", 3, up=False)
    assert change.link.ends() in (("t0p0g0", "t1p0s0"), ("t1p0s0", "t0p0g0"))
    assert state.port_status("t0p0g0", 3, up=False) is None       # no transition
    down = state.down_links()
    assert down == {G0_SPINE0}
    # before reconvergence the rules are unchanged: spine-0 flows die on the dead link
    assert FakeFabric(TOPO, tables, down).send(0, 0, udp(0, 2, 4)).reason == "link down"

    updates = state.reconverge(down)
    # both T0s route around it (group 1 reaches group 0 through the same dead link); on each,
    # buckets 0, 2, 4, 6 (spine 0) x UDP and TCP, plus the default rule (bucket 0's uplink)
    assert set(updates) == {"t0p0g0", "t0p0g1"}
    assert len(updates["t0p0g0"]) == len(updates["t0p0g1"]) == 4 * 2 + 1
    assert all(r.actions == (("output", 4),) for r in updates["t0p0g0"])
    after = FakeFabric(TOPO, apply_adds(tables, updates), down)
    assert after.send(0, 0, udp(0, 2, 4)).nodes == ["h0", "t0p0g0", "t1p0s1", "t0p0g1", "h2"]
    assert after.send(0, 0, udp(0, 2, 5)).nodes == ["h0", "t0p0g0", "t1p0s1", "t0p0g1", "h2"]
    assert after.send(2, 0, udp(2, 0, 6)).delivered_to == "h0"
    assert state.reconverge(down) is None                         # already routed around


def test_port_up_and_reconverge_restore_the_static_buckets():
    state = RoutingState(TOPO, "ecmp", 8)
    static = connect_all(state)
    state.port_status("t1p0s0", 1, up=False)      # spine 0's port toward group 0
    state.reconverge(state.down_links())
    state.port_status("t1p0s0", 1, up=True)
    assert state.down_links() == frozenset()
    updates = state.reconverge(state.down_links())
    assert set(updates) == {"t0p0g0", "t0p0g1"}
    assert state.installed == static


def test_reconnecting_switch_gets_rules_for_what_is_routed_around():
    state = RoutingState(TOPO, "ecmp", 8)
    state.reconverge(frozenset({G0_SPINE0}))
    fab = FakeFabric(TOPO, connect_all(state), {G0_SPINE0})
    assert fab.send(1, 0, udp(1, 3, 0)).nodes == ["h1", "t0p0g0", "t1p0s1", "t0p0g1", "h3"]


def test_fault_downed_links_count_and_srv6_never_changes_rules():
    state = RoutingState(TOPO, "srv6", 8)
    connect_all(state)
    assert state.down_links({frozenset(("t0p0g1", "t1p0s1"))}) == {frozenset(("t0p0g1", "t1p0s1"))}
    assert state.reconverge(frozenset({G0_SPINE0})) == {}
    assert state.installed == R.rules(TOPO, "srv6", buckets=8)
