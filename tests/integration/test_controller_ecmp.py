"""ECMP routing with dynamic reconvergence over a real fabric (own module: one Fabric at a time,
the srv6 module's fabric must be torn down first because both take the fabric lock)."""
import time

import pytest

from controller import routing
from emulation.fabric import Fabric
from model.topology import FabricSpec, make_ev
from tests.integration.test_controller_fabric import send_and_count

pytestmark = pytest.mark.integration


def test_ecmp_dynamic_reconvergence():
    """ECMP: after a link-down the flows hashed onto it are lost until the controller
    recomputes the buckets (0.5 s here); then every flow is delivered again."""
    spec = FabricSpec(planes=1, groups=2, spines=2, hosts_per_group=1)
    sports = list(range(0x2000, 0x2010))
    evs = [make_ev(0, 0, s) for s in sports]
    on_s0 = [ev for ev in evs if routing.ecmp_uplink(spec, ev, 0, 1) == 0]
    assert on_s0 and len(on_s0) < len(evs)
    with Fabric(spec, routing="ecmp", dynamic_convergence_s=1.0) as fab:
        got = send_and_count(fab, "ecmp", evs, 10)
        assert all(n == 10 for n, _ in got.values()), got
        fab.controller.link_down("t0p0g0", "t1p0s0")
        got = send_and_count(fab, "ecmp", evs, 10, pps=4000)   # well within the 1 s delay
        assert {ev for ev, (n, _) in got.items() if n == 0} == set(on_s0), got
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any(
                e["action"] == "reconverge" for e in fab.controller.faults()):
            time.sleep(0.05)
        got = send_and_count(fab, "ecmp", evs, 10)
        assert all(n == 10 for n, _ in got.values()), got
        # TCP/ping (kernel traffic) crosses the fabric in ecmp mode as well
        fab.cmd_in_host(0, ["ping", "-6", "-c", "1", "-W", "2", fab.topo.nic_addr(1, 0)])
