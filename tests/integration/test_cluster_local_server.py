"""A second server on this machine (emulation/cluster/local_server.py), used as a remote one is:
reached by ssh under its own name, its own host name and Open vSwitch, judged ready by the
preflight, its clock measured over ssh, and gone without a trace when taken down."""
import json
import subprocess
import time
from pathlib import Path

import pytest

from emulation.cluster import local_server as L
from emulation.cluster import preflight, server_clock
from tests.helpers.local_servers import local_server_up, on_server

pytestmark = pytest.mark.integration

NAME, INDEX = "mrclab-t", 61


@pytest.fixture
def local(monkeypatch):
    with local_server_up(monkeypatch, NAME, INDEX) as srv:
        yield srv


def ssh(*command: str) -> str:
    return on_server(NAME, *command).strip()


def system_id() -> str:
    return subprocess.run(["ovs-vsctl", "get", "Open_vSwitch", ".", "external_ids:system-id"],
                          capture_output=True, text=True, timeout=30).stdout.strip()


def test_a_local_server_is_a_server_of_its_own_and_leaves_nothing(local):
    # its own UTS namespace and Open vSwitch database (ovs-ctl's random system-id), this
    # machine's checkout and Python
    assert ssh("hostname") == NAME
    assert ssh("ovs-vsctl", "get", "Open_vSwitch", ".", "external_ids:system-id") != system_id()
    assert ssh("ovs-appctl", "-t", "ovs-vswitchd", "version").startswith("ovs-vswitchd")
    assert ssh(f"{preflight.REPO}/.venv/bin/python", "-c", "print(6 * 7)") == "42"
    # the management network: the server's end only inside it, at MGMT_MTU
    assert ssh("cat", f"/sys/class/net/{local.there_intf}/mtu") == str(L.MGMT_MTU)
    assert not Path(f"/sys/class/net/{local.there_intf}").exists()

    found = preflight.run(["localhost", NAME], {"localhost": local.here_address,
                                                NAME: local.address}, fabric_mtu=9000)
    dirty = [p for p in found[NAME] if "uncommitted" in p]
    assert found == {"localhost": dirty, NAME: dirty}, preflight.report(found)

    # one machine, one monotonic clock: the offset is zero within its error bound
    est = server_clock.measure(NAME, count=8)
    assert abs(est.offset_ns) <= est.error_ns, est
    assert 0 < est.error_ns < 50e6

    record = json.loads((local.state / "server.json").read_text())
    holder = record["holder"]
    L.down(NAME)
    assert not Path(f"/proc/{holder}").exists()
    assert not Path(f"/sys/class/net/{local.here_intf}").exists()
    assert not local.state.exists() and not L.SSH_CONFIG.exists()
    assert not L.down(NAME)                     # already down: nothing to do, said so
    L.up(NAME, INDEX)                           # for the fixture's own down


def test_a_mininet_cluster_host_on_the_local_server(local):
    """Mininet's cluster edition over mrclab's ssh: a shell in a namespace of its own on the
    server, commands in the server's root namespace, nothing left once it is terminated."""
    from emulation.cluster.remote_nodes import ClusterHost
    host = ClusterHost("hx0", server=NAME, serverIP=local.address)
    try:
        assert host.isRemote
        assert host.cmd("hostname").strip() == NAME
        links = host.cmd("ip -o link show").strip().splitlines()
        assert len(links) == 1 and ": lo:" in links[0], links     # its own network namespace
        assert local.there_intf in host.rcmd(["ip", "-o", "link", "show"])
    finally:
        host.terminate()
    deadline = time.monotonic() + 10
    while "mininet:hx0" in ssh("ps", "-eo", "args") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "mininet:hx0" not in ssh("ps", "-eo", "args")


def test_a_node_whose_shell_cannot_start_there_is_an_error_not_a_hang(local):
    """Mininet waits for a shell's prompt without end: a log-in the server refuses (no key for
    that user) must end in an error naming the server, at once."""
    from emulation.cluster.remote_nodes import ClusterHost, RemoteNodeError
    started = time.monotonic()
    with pytest.raises(RemoteNodeError, match=f"hx1 on {NAME}: a shell cannot start there"):
        ClusterHost("hx1", server=NAME, serverIP=local.address, user="nobody")
    assert time.monotonic() - started < 30


def test_a_second_up_of_the_same_name_or_index_is_refused_and_the_first_is_untouched(local):
    with pytest.raises(L.LocalServerError, match="already up"):
        L.up(NAME, INDEX)
    # another name on the same management subnet: its veth cannot be made, and taking its
    # half-made state down must not delete the running server's veth
    with pytest.raises(L.LocalServerError, match="management link"):
        L.up("mrclab-t2", INDEX)
    assert not (L.STATE_ROOT / "mrclab-t2").exists()
    assert Path(f"/sys/class/net/{local.here_intf}").exists()
    assert ssh("hostname") == NAME


def test_taking_down_a_server_that_is_not_up_says_so():
    run = subprocess.run([str(preflight.REPO / ".venv/bin/python"), "-m",
                          "emulation.cluster.local_server", "down", "mrclab-nothing"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "no local server 'mrclab-nothing' is up" in run.stderr
