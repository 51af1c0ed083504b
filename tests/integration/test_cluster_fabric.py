"""The fabric built over two servers (emulation/cluster/fabric_servers.py): this machine and a
local server (emulation/cluster/local_server.py), reached by ssh as a remote one is. `mrclab
fabric --check` over them proves what it proves on one machine: every host pair on every plane
and every path delivers its probes, and the port counters of the switches on both servers move
on exactly the ports of each pinned path. Placement "plane" sends the host links to the other
plane through VXLAN; "pod" sends the T0-T1 links to the other server's T1s through it. Nothing
is left on either server afterwards."""
import re
import subprocess
import sys

import pytest

from tests.helpers.local_servers import local_server_up, on_server as on_named_server

pytestmark = pytest.mark.integration

NAME, INDEX = "mrclab-f", 60


@pytest.fixture
def local(monkeypatch):
    with local_server_up(monkeypatch, NAME, INDEX) as srv:
        yield srv


def on_server(*argv: str) -> str:
    return on_named_server(NAME, *argv)


def vxlan_devices() -> str:
    return subprocess.run(["ip", "-o", "link", "show", "type", "vxlan"], capture_output=True,
                          text=True, timeout=30, check=True).stdout


@pytest.mark.parametrize("placement, crossing", [("plane", "4 host links, 0 fabric links"),
                                                 ("pod", "0 host links, 4 fabric links")])
def test_the_fabric_over_two_servers_forwards_and_pins_every_path(local, placement, crossing):
    done = subprocess.run([sys.executable, "-m", "emulation.cli", "fabric", "--check",
                           "--servers", f"localhost,{NAME}", "--placement", placement],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert crossing in done.stderr
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


def test_the_other_servers_ports_are_configured_and_shaped_there(local):
    """The per-port steps ran on the port's server: the switch ports there have their HTB
    (the queue counters read them over ssh), a host there has its NIC on the other server's
    plane as a VXLAN end, and its commands run in its namespace there."""
    from emulation.cluster.placement import place
    from emulation.network.fabric import Fabric
    from model.topology import FabricSpec, Topology

    topo = Topology(FabricSpec(mtu=9000))
    placement = place(topo, ["localhost", NAME], "plane")
    remote_ports = [link.b_intf for link in topo.links
                    if placement.server_of[link.b] == NAME]
    with Fabric(topo, placement=placement) as fab:
        for intf in remote_ports:
            assert " htb " in on_server("tc", "qdisc", "show", "dev", intf), intf
            assert on_server("cat", f"/sys/class/net/{intf}/mtu").strip() == "9000"
        assert set(fab.queue_counters()) == set(fab.switch_intfs())
        # h2 lives on the server with plane 1; its plane-0 NIC is a tunnel to this machine
        h2 = topo.host(2)
        assert placement.server_of[h2.name] == NAME
        assert "vxlan id" in fab.cmd_in_host(2, ["ip", "-d", "link", "show", "h2-p0"])
        assert fab.cmd_in_host(2, ["hostname"]).strip() == NAME
