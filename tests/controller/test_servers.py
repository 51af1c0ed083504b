"""A fault's commands on the server of the node it concerns (controller/servers.py): the map the
fabric writes, checked; a switch end or a host of another server reached over ssh as root, in
the namespace it would use here; this machine's nodes unchanged; the hosts of another server
registered by their pid there, never opened here. The commands are recorded, not run (a fabric
over a local server runs them: tests/integration/test_cluster_fabric.py)."""
import json
import shlex

import pytest

from controller.service import FabricController
from controller.servers import RemoteNodes
from model.topology import FabricSpec, Topology
from tests.helpers.controller import Recorder

TOPO = Topology(FabricSpec())          # 2 planes x 2 groups x 2 spines x 2 hosts
# plane 1 and h2, h3 on server b (the "plane" placement of two servers)
ON_B = {n: "b" for n in ("t0p1g0", "t0p1g1", "t1p1s0", "t1p1s1", "h2", "h3")}


def remote_command(argv: list[str]) -> tuple[str, list[str]]:
    """(server, the command it runs as root) of an ssh argv of model/ssh.py."""
    assert argv[:2] == ["ssh", "-n"], argv
    words = shlex.split(argv[-1])
    assert words[:2] == ["sh", "-c"] and words[3] == "as_root"
    return argv[-2], words[4:]


def controller(tmp_path, remote=ON_B):
    run = Recorder()
    return FabricController(TOPO, "srv6", None, str(tmp_path / "f.jsonl"), run=run,
                            remote=RemoteNodes(remote)), run


def test_the_fabrics_map_is_read_and_checked(tmp_path):
    path = tmp_path / "remote.json"
    path.write_text(json.dumps(ON_B))
    nodes = RemoteNodes.from_file(str(path), TOPO)
    assert nodes.server_of("h2") == "b" and nodes.server_of("h0") is None
    assert nodes.server_of(None) is None
    assert not RemoteNodes.from_file(None, TOPO).is_remote("h2")
    for bad, why in (({"h9": "b"}, "not a node"), ({"h2": ""}, "must be a name"),
                     (["h2"], "JSON object")):
        path.write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=why):
            RemoteNodes.from_file(str(path), TOPO)


def test_a_link_down_runs_each_switch_end_on_its_own_server(tmp_path):
    ctl, run = controller(tmp_path)
    ctl.fault({"action": "link_down", "a": "h0", "b": "t0p1g0"})    # host end: never set down
    [argv] = run.argvs
    assert remote_command(argv) == ("b", ["ip", "link", "set", "dev", "t0p1g0-e1", "down"])
    run.argvs.clear()
    ctl.fault({"action": "link_down", "a": "h0", "b": "t0p0g0"})    # both ends here
    assert run.argvs == [["ip", "link", "set", "dev", "t0p0g0-e1", "down"]]


def test_a_host_of_another_server_is_entered_there_by_its_pid_there(tmp_path):
    ctl, run = controller(tmp_path)
    # 4242 need not be a process here: it is h2's shell in server b's PID namespace
    assert ctl.register_hosts({"h2": 4242}) == {"ok": True, "hosts": ["h2"]}
    ctl.fault({"action": "gray_loss", "a": "h2", "b": "t0p0g1", "percent": 5,
               "direction": "a->b"})
    [argv] = run.argvs
    server, command = remote_command(argv)
    assert server == "b" and command[:5] == ["nsenter", "-t", "4242", "-n", "nft"]
    for bad in ({"h2": 0}, {"h2": "4242"}, {"t0p1g0": 5}):
        with pytest.raises(ValueError):
            ctl.register_hosts(bad)


def test_nft_faults_on_two_servers_are_two_transactions(tmp_path):
    ctl, run = controller(tmp_path)
    # one port here (t0p0g0's uplink to t1p0s0), one on b (t0p1g0's uplink to t1p1s0)
    ctl.fault_batch([{"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": 5},
                {"action": "gray_loss", "a": "t0p1g0", "b": "t1p1s0", "percent": 5}])
    assert len(run.argvs) == 2
    here, there = run.argvs
    assert here[0] == "nft" and "t0p0g0" in " ".join(here)
    server, command = remote_command(there)
    assert server == "b" and command[0] == "nft" and "t0p1g0" in " ".join(command)
    # on one machine the two ports are one namespace: one transaction
    ctl1, run1 = controller(tmp_path, remote={})
    ctl1.fault_batch([{"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": 5},
                 {"action": "gray_loss", "a": "t0p1g0", "b": "t1p1s0", "percent": 5}])
    assert len(run1.argvs) == 1
