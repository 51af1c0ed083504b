"""Fabric over real Mininet + userspace OVS + the controller (one module-scoped 2x2x2x2 srv6
fabric): reachability, EV path pinning by port counters, HTB, `mrclab link` faults."""
import subprocess
import time

import pytest

from emulation.network import check
from emulation.network.fabric import Fabric
from model.events import ControllerLog
from model.topology import FabricSpec
from tests.integration.fabric_checks import MRCLAB, REPO, assert_nothing_left

pytestmark = pytest.mark.integration

SPEC = FabricSpec(planes=2, groups=2, spines=2, hosts_per_group=2)


@pytest.fixture(scope="module")
def fab():
    with Fabric(SPEC, routing="srv6") as f:
        yield f
    assert_nothing_left()


def test_every_pair_every_plane_srv6(fab):
    got = check.check_reachability(fab)
    assert got["pair_planes"] == 4 * 3 * 2
    # srv6: cross-group flows use both spines, same-group flows one path.
    assert got["flows"] == 4 * (2 * 2 * 2 + 1 * 2)


def test_ev_paths_pinned_by_port_counters(fab):
    assert check.check_path_pinning(fab) == SPEC.planes * SPEC.spines


def test_ofports_equal_topology(fab):
    for link in fab.topo.links:
        got = subprocess.run(["ovs-vsctl", "get", "Interface", link.b_intf, "ofport"],
                             capture_output=True, text=True, check=True).stdout.strip()
        assert got == str(link.b_port), link


def test_htb_on_both_ends(fab):
    link = fab.topo.link("t0p0g0", "t1p0s1")
    for intf in (link.a_intf, link.b_intf):
        out = subprocess.run(["tc", "class", "show", "dev", intf], capture_output=True,
                             text=True, check=True).stdout
        assert "rate 100Mbit" in out, out
    out = fab.cmd_in_host(0, ["tc", "class", "show", "dev", "h0-p1"])
    assert "rate 100Mbit" in out


def test_cli_link_down_seen_by_controller(fab):
    run = subprocess.run(MRCLAB + ["link", "down", "t0p1g0", "t1p1s0"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        faults = fab.controller.faults()
        status = [f for f in faults if f.get("action") == ControllerLog.PORT_STATUS
                  and f.get("switch") in ("t0p1g0", "t1p1s0")]
        if len(status) >= 2:
            break
        time.sleep(0.1)
    assert any(f.get("action") == "link_down" for f in faults)
    assert {f["switch"] for f in status} == {"t0p1g0", "t1p1s0"}, faults
    state = {(l["a"], l["b"]): l["state"] for l in fab.controller.links()}
    assert state[("t0p1g0", "t1p1s0")] == "down"
    bad = subprocess.run(MRCLAB + ["link", "down", "t0p1g0", "t1p0s0"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "t1p0s0" in bad.stderr
    up = subprocess.run(MRCLAB + ["link", "up", "t0p1g0", "t1p1s0"], cwd=REPO,
                        capture_output=True, text=True, timeout=60)
    assert up.returncode == 0, up.stderr
    state = {(l["a"], l["b"]): l["state"] for l in fab.controller.links()}
    assert state[("t0p1g0", "t1p1s0")] == "up"




def test_host_link_down_is_a_cable_pull_and_up_restores_the_plane(fab):
    """The host end loses carrier but keeps its address, route and neighbours, so the plane
    works again as soon as the link is back (an admin-down host end would lose all three)."""
    def addresses():
        out = fab.cmd_in_host(0, ["ip", "-6", "addr", "show", "dev", "h0-p1"])
        return sorted(line.split()[1] for line in out.splitlines() if "inet6" in line)

    addr_before = addresses()
    assert addr_before, "h0-p1 has no IPv6 address to begin with"
    route_before = fab.cmd_in_host(0, ["ip", "-6", "route", "show", "dev", "h0-p1"])
    fab.controller.fault({"action": "link_down", "a": "h0", "b": "t0p1g0"})
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            link = fab.cmd_in_host(0, ["ip", "link", "show", "dev", "h0-p1"])
            if "NO-CARRIER" in link:
                break
            time.sleep(0.1)
        assert "NO-CARRIER" in link and ",UP" in link, link
        assert addresses() == addr_before
    finally:
        fab.controller.fault({"action": "link_up", "a": "h0", "b": "t0p1g0"})
    assert fab.cmd_in_host(0, ["ip", "-6", "route", "show", "dev", "h0-p1"]) == route_before
    peer = fab.topo.nic_addr(3, 1)
    deadline = time.monotonic() + 10
    while True:
        ping = subprocess.run(fab._in_host(0, ["ping", "-6", "-c", "1", "-W", "1", "-I", "h0-p1",
                                               peer]), capture_output=True, text=True)
        if ping.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert ping.returncode == 0, ping.stdout + ping.stderr
