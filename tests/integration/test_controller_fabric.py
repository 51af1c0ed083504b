"""Controller against a real fabric (Mininet + userspace OVS + os-ken): rules, API, faults.

Packets are sent with emulation.network.pathcheck (one frame per EV, paced) from h0 and counted at h1.
Spec: 1 plane x 2 groups x 2 spines x 1 host, so h0 -> h1 has exactly two paths (spine 0, 1).
"""
import subprocess
import time

import pytest

from controller import routing
from controller.client import ControllerError
from emulation.network.fabric import Fabric
from model.events import ControllerLog
from model.topology import FabricSpec, make_ev
from tests.integration.fabric_checks import delivered_all, send_and_count

pytestmark = pytest.mark.integration

SPEC = FabricSpec(planes=1, groups=2, spines=2, hosts_per_group=1,
                  host_link_mbit=50, fabric_link_mbit=50)
EV_S0 = make_ev(0, 0, 0x1001)
EV_S1 = make_ev(0, 1, 0x1002)


@pytest.fixture(scope="module")
def fab():
    with Fabric(SPEC, routing="srv6") as f:
        yield f


def works(got, evs, sent, ce=0):
    """Every EV delivered (within the tolerance) and exactly `ce` CE marks (marks only come
    from a configured marker, never from load)."""
    return all(delivered_all(got[ev][0], sent) and got[ev][1] == ce for ev in evs)


def wait_until_delivered(fab, evs, deadline_s=10.0):
    """Poll (5 frames per EV) until every EV delivers again, e.g. after a repair."""
    deadline = time.monotonic() + deadline_s
    while True:
        got = send_and_count(fab, "srv6", evs, 5)
        if all(got[ev][0] > 0 for ev in evs) or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def port_status_events(fab, since_ns):
    return [e for e in fab.controller.faults()
            if e["action"] == ControllerLog.PORT_STATUS and e["t_ns"] >= since_ns]


def test_health_rules_and_counters(fab):
    c = fab.controller
    health = c.health()
    assert health["ready"] is True and health["routing"] == "srv6"
    assert health["switches_connected"] == health["switches_expected"] == 4
    flows = c.flow_counters()
    for name in fab.topo.switches:
        expected = routing.switch_rules(fab.topo, name, "srv6")
        assert sorted(f["cookie"] for f in flows[name]) == sorted(r.cookie for r in expected)
    before = c.port_counters()["t0p0g0"]["1"]["rx_packets"]
    got = send_and_count(fab, "srv6", [EV_S0, EV_S1], 20)
    assert works(got, [EV_S0, EV_S1], 20), got
    after = c.port_counters()
    # every frame h1 received came in through h0's T0 port: a bound that holds however many
    # of the 40 sent a loaded machine lost on the way (delivered_all allows a quarter)
    delivered = got[EV_S0][0] + got[EV_S1][0]
    assert after["t0p0g0"]["1"]["rx_packets"] - before >= delivered, (after["t0p0g0"], delivered)
    assert set(after["t1p0s0"]) == {"1", "2"}
    # the path counters show which spine carried each EV: both used
    # (OVS pushes datapath counters to OpenFlow rules about once a second: poll)
    deadline = time.monotonic() + 5
    while True:
        hits = {n: sum(f["packet_count"] for f in c.flow_counters()[n]
                       if routing.cookie_kind(f["cookie"]) == routing.KIND_SRV6_T1)
                for n in ("t1p0s0", "t1p0s1")}
        if min(hits.values()) >= 20 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert hits["t1p0s0"] >= got[EV_S0][0] and hits["t1p0s1"] >= got[EV_S1][0], (hits, got)


@pytest.mark.parametrize("cmd", [
    {"action": "link_down", "a": "t0p0g0", "b": "t0p0g1"},
    {"action": "link_down", "a": "nosuch", "b": "t1p0s0"},
    {"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": 150},
    {"action": "degrade", "a": "t0p0g0", "b": "t1p0s0", "fraction": 0},
    {"action": "ecn_mark", "a": "t0p0g1", "b": "h1", "rate_mbit": 1, "direction": "a->b"},
    {"action": "blackhole", "a": "h0"},
    {"action": "gray_loss_clear", "a": "t0p0g0", "b": "t1p0s0"},
    {"action": "reboot", "a": "t0p0g0"},
])
def test_bad_commands_rejected_nothing_changed(fab, cmd):
    c = fab.controller
    log_before, links_before = c.faults(), c.links()
    with pytest.raises(ControllerError) as err:
        c.fault(cmd)
    assert err.value.status == 400 and str(err.value)
    assert c.faults() == log_before and c.links() == links_before


def test_link_down_loses_only_that_paths_evs(fab):
    c = fab.controller
    t0 = time.monotonic_ns()
    c.link_down("t0p0g0", "t1p0s0")
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(port_status_events(fab, t0)) < 2:
            time.sleep(0.05)
        events = port_status_events(fab, t0)
        assert {(e["switch"], e["state"]) for e in events} == {("t0p0g0", "down"),
                                                               ("t1p0s0", "down")}
        assert [l["state"] for l in c.links()
                if {l["a"], l["b"]} == {"t0p0g0", "t1p0s0"}] == ["down"]
        got = send_and_count(fab, "srv6", [EV_S0, EV_S1], 50)
        assert got[EV_S0][0] == 0 and delivered_all(got[EV_S1][0], 50), got
    finally:
        c.link_up("t0p0g0", "t1p0s0")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(l["state"] == "down" for l in c.links()):
        time.sleep(0.05)
    wait_until_delivered(fab, [EV_S0, EV_S1])      # carrier back: poll, do not guess a delay
    got = send_and_count(fab, "srv6", [EV_S0, EV_S1], 20)
    assert works(got, [EV_S0, EV_S1], 20), got


def test_gray_loss_rate_within_tolerance_and_silent(fab):
    """20% gray loss on spine 1's downlink: EV_S1 (through it) delivers 80% of what EV_S0
    (spine 0, same sender, frames interleaved) delivers. Comparing with EV_S0 cancels the
    frames a CPU-starved OVS or receiver drops from both alike. Binomial: ratio
    sd = sqrt(0.8 x 0.2 / n0), 0.026 at n0 = 240 (the least EV_S0 may deliver, below);
    0.8 +- 0.12 is over 4.5 sd."""
    c = fab.controller
    t0 = time.monotonic_ns()
    c.fault({"action": "gray_loss", "a": "t1p0s1", "b": "t0p0g1", "percent": 20,
             "direction": "a->b"})
    try:
        got = send_and_count(fab, "srv6", [EV_S0, EV_S1], 1000, pps=2000)
    finally:
        c.fault({"action": "gray_loss_clear", "a": "t1p0s1", "b": "t0p0g1"})
    n0, n1 = got[EV_S0][0], got[EV_S1][0]
    assert n0 >= 240, f"the healthy path delivered only {n0} of 1000: {got}"
    assert 0.68 <= n1 / n0 <= 0.92, got
    assert port_status_events(fab, t0) == []
    wait_until_delivered(fab, [EV_S1])
    assert works(send_and_count(fab, "srv6", [EV_S1], 50), [EV_S1], 50)


def test_ecn_marks_only_where_configured(fab):
    c = fab.controller
    c.fault({"action": "ecn_mark", "a": "t1p0s0", "b": "t0p0g1", "rate_mbit": 0.01,
             "direction": "a->b"})
    try:
        got = send_and_count(fab, "srv6", [EV_S0, EV_S1], 200, ecn=2)
        not_ect = send_and_count(fab, "srv6", [EV_S0], 100, ecn=0)
    finally:
        c.fault({"action": "ecn_clear", "a": "t1p0s0", "b": "t0p0g1", "direction": "a->b"})
    # 0.01 Mbit/s marking rate: the 2 Mbit/s probe stream is far above it, so (after the
    # marker's first burst) nearly every frame is marked; 75% leaves room for that burst.
    assert delivered_all(got[EV_S0][0], 200) and got[EV_S0][1] >= 0.75 * got[EV_S0][0], got
    assert works(got, [EV_S1], 200), got
    assert works(not_ect, [EV_S0], 100), not_ect     # Not-ECT is never marked
    assert works(send_and_count(fab, "srv6", [EV_S0], 50), [EV_S0], 50)


def test_blackhole_drops_silently(fab):
    c = fab.controller
    t0 = time.monotonic_ns()
    c.fault({"action": "blackhole", "a": "t1p0s1"})
    try:
        with pytest.raises(ControllerError, match="already"):
            c.fault({"action": "blackhole", "a": "t1p0s1"})
        got = send_and_count(fab, "srv6", [EV_S0, EV_S1], 50)
        assert delivered_all(got[EV_S0][0], 50) and got[EV_S1][0] == 0, got
        assert port_status_events(fab, t0) == []
        assert all(l["state"] == "up" for l in c.links())
    finally:
        c.fault({"action": "blackhole_clear", "a": "t1p0s1"})
    wait_until_delivered(fab, [EV_S1])
    assert works(send_and_count(fab, "srv6", [EV_S1], 20), [EV_S1], 20)


def test_degrade_changes_htb_rate_and_clears(fab):
    c = fab.controller
    c.fault({"action": "degrade", "a": "t0p0g0", "b": "t1p0s0", "fraction": 0.5,
             "direction": "a->b"})
    try:
        out = subprocess.run(["tc", "class", "show", "dev", "t0p0g0-e2"], capture_output=True,
                             text=True, check=True).stdout
        assert "rate 25Mbit" in out, out
    finally:
        c.fault({"action": "degrade_clear", "a": "t0p0g0", "b": "t1p0s0", "direction": "a->b"})
    out = subprocess.run(["tc", "class", "show", "dev", "t0p0g0-e2"], capture_output=True,
                         text=True, check=True).stdout
    assert "rate 50Mbit" in out, out
