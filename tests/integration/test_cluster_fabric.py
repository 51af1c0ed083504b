"""The fabric built over two servers (emulation/cluster/fabric_servers.py): this machine and a
local server (emulation/cluster/local_server.py), reached by ssh as a remote one is. `mrclab
fabric --check` over them (placement "plane": the host links to the other plane cross through
VXLAN) proves what it proves on one machine: every host pair on every plane and every path
delivers its probes, and the port counters of the switches on both servers move on exactly the
ports of each pinned path. Placement "pod" sends T0-T1 links through VXLAN instead (group g's
T0s on server g, T1 number 2p + s on server (2p + s) mod 2: in each plane, g0's T0 to the s1 T1
and g1's T0 to the s0 T1 cross, 4 links). Nothing is left on either server afterwards."""
import re
import subprocess
import sys
import time

import pytest

from emulation.cluster import preflight
from tests.helpers.local_servers import local_server_up, on_server as on_named_server

pytestmark = pytest.mark.integration

NAME, INDEX = "mrclab-f", 60


@pytest.fixture
def local(monkeypatch):
    with local_server_up(monkeypatch, NAME, INDEX) as srv:
        yield srv


def on_server(*argv: str) -> str:
    return on_named_server(NAME, *argv)


def running_there(pattern: str) -> bool:
    return subprocess.run(preflight.ssh_argv(NAME, ["pgrep", "-f", pattern]),
                          capture_output=True, timeout=60).returncode == 0


def wait_for(condition, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def vxlan_devices() -> str:
    return subprocess.run(["ip", "-o", "link", "show", "type", "vxlan"], capture_output=True,
                          text=True, timeout=30, check=True).stdout


def test_the_fabric_over_two_servers_forwards_and_pins_every_path(local):
    done = subprocess.run([sys.executable, "-m", "emulation.cli", "fabric", "--check",
                           "--servers", f"localhost,{NAME}", "--placement", "plane"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "4 host links, 0 fabric links" in done.stderr
    assert "fabric check ok: srv6 2x2x2x2" in done.stdout, done.stdout
    assert re.search(r"\b[1-9]\d* EV paths pinned by port counters", done.stdout), done.stdout
    # torn down on both servers: no bridge, no tunnel end, no TLS setting there
    assert on_server("ovs-vsctl", "list-br").strip() == ""
    assert on_server("ovs-vsctl", "get-ssl").strip() == ""
    assert on_server("ip", "-o", "link", "show", "type", "vxlan").strip() == ""
    assert vxlan_devices().strip() == ""


def test_a_server_that_cannot_be_reached_is_named_before_anything_is_built():
    done = subprocess.run([sys.executable, "-m", "emulation.cli", "fabric", "--check",
                           "--servers", "localhost,mrclab-nowhere.invalid"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "mrclab-nowhere.invalid" in done.stderr
    assert "Traceback" not in done.stderr
    assert subprocess.run(["ovs-vsctl", "list-br"], capture_output=True, text=True,
                          timeout=30).stdout.strip() == ""


def test_the_other_servers_ports_are_configured_shaped_and_faulted_there(local):
    """Placement "pod": group 1 (its T0s, h2 and h3) and the T1s t1p0s1 and t1p1s1 on the
    server. The per-port steps ran on the port's server: the switch ports there have their HTB
    and MTU (the queue counters read them over ssh), a T0-T1 link to this machine's T1 is a
    VXLAN end there, and a host's commands run in its namespace there. The controller's faults
    on a switch end and on a host of that server act there (controller/servers.py)."""
    from emulation.cluster.placement import place
    from emulation.network.fabric import Fabric
    from model.topology import FabricSpec, Topology

    topo = Topology(FabricSpec(mtu=9000))
    placement = place(topo, ["localhost", NAME], "pod")
    assert [placement.server_of[n] for n in ("h2", "t0p0g1", "t1p0s1", "t1p0s0")] == [
        NAME, NAME, NAME, "localhost"]
    with Fabric(topo, placement=placement) as fab:
        there = [i for i in fab.switch_intfs() if fab.servers.server_of_intf(i) == NAME]
        assert len(there) == 12         # 4 host ends, 4 T0 uplinks, 2 T1s x 2 downlinks
        for intf in there:
            assert " htb " in on_server("tc", "qdisc", "show", "dev", intf), intf
            assert on_server("cat", f"/sys/class/net/{intf}/mtu").strip() == "9000"
        assert set(fab.queue_counters()) == set(fab.switch_intfs())
        uplink = topo.link("t0p0g1", "t1p0s0")
        end = uplink.a_intf if uplink.a == "t0p0g1" else uplink.b_intf
        assert "vxlan id" in on_server("ip", "-d", "link", "show", end)
        assert fab.cmd_in_host(2, ["hostname"]).strip() == NAME
        # a link down takes the switch end down where the switch is; the host's is left up
        end = topo.link("h2", "t0p0g1").b_intf
        fab.controller.fault({"action": "link_down", "a": "h2", "b": "t0p0g1"})
        assert "state DOWN" in on_server("ip", "-o", "link", "show", end)
        fab.controller.fault({"action": "link_up", "a": "h2", "b": "t0p0g1"})
        assert ",UP" in on_server("ip", "-o", "link", "show", end)
        # an egress fault of a host there: its nft table in the host's namespace there
        fab.controller.fault({"action": "gray_loss", "a": "h2", "b": "t0p1g1", "percent": 5})
        assert "mrclab_loss" in fab.cmd_in_host(2, ["nft", "list", "tables"])
        fab.controller.fault({"action": "gray_loss_clear", "a": "h2", "b": "t0p1g1"})
        assert "mrclab_loss" not in fab.cmd_in_host(2, ["nft", "list", "tables"])
        # a process started in a host there stops when its ssh here is killed
        proc = fab.popen_in_host(2, ["sleep", "477"])
        assert wait_for(lambda: running_there("sleep 477")), "never started there"
        proc.kill()
        proc.wait(10)
        assert wait_for(lambda: not running_there("sleep 477")), "outlived its ssh"
