"""HTTP API + client + FabricController state, without root: the commands the controller would
run are recorded by a stand-in runner (real runs are in tests/integration)."""
import json
import time
import urllib.request

import pytest

from controller.app import FabricController
from controller.client import ControllerClient, ControllerError
from model.events import ControllerLog
from model.topology import FabricSpec, Topology
from tests.helpers.api_token import TOKEN
from tests.helpers.controller import Recorder, namespace_with

TOPO = Topology(FabricSpec(planes=1, groups=2, spines=2, hosts_per_group=1))


@pytest.fixture
def api(tmp_path, api_server):
    run = Recorder()
    ctl = FabricController(TOPO, "ecmp", 0.05, str(tmp_path / "faults.jsonl"), run=run)
    server = api_server(ctl)
    return ControllerClient(port=server.port, timeout_s=5, token=TOKEN), ctl, run, tmp_path / "faults.jsonl"


def test_health_without_switches(api):
    client, _, _, _ = api
    h = client.health()
    assert h == {"ok": True, "routing": "ecmp", "switches_connected": 0, "switches_expected": 4,
                 "ready": False, "dynamic_convergence_s": 0.05, "ecmp_buckets": 8}
    with pytest.raises(ControllerError, match="not ready"):
        client.wait_ready(timeout_s=0.2)


def test_link_down_runs_both_ends_and_logs(api):
    client, ctl, run, log_path = api
    before = time.monotonic_ns()
    reply = client.link_down("t0p0g0", "t1p0s1")
    assert reply["ok"] and before <= reply["t_ns"] <= time.monotonic_ns()
    assert run.argvs == [["ip", "link", "set", "dev", "t0p0g0-e3", "down"],
                         ["ip", "link", "set", "dev", "t1p0s1-e1", "down"]]
    [link] = [l for l in client.links() if {l["a"], l["b"]} == {"t0p0g0", "t1p0s1"}]
    assert link["state"] == "down"
    lines = [json.loads(x) for x in log_path.read_text().splitlines()]
    assert lines == client.faults() and lines[0]["action"] == "link_down"


def test_bad_command_400_changes_nothing(api):
    client, _, run, log_path = api
    for cmd in ({"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": 120},
                {"action": "link_down", "a": "h0", "b": "t1p0s0"},
                {"action": "gray_loss_clear", "a": "t0p0g0", "b": "t1p0s0"},
                [1, 2]):
        with pytest.raises(ControllerError) as err:
            client.fault(cmd)
        assert err.value.status == 400
    assert run.argvs == [] and client.faults() == [] and not log_path.exists()
    req = urllib.request.Request(client.base + "/fault", data=b"{nope", method="POST",
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer " + TOKEN})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req)
    assert err.value.code == 400 and "not valid JSON" in json.loads(err.value.read())["error"]
    with pytest.raises(ControllerError, match="no endpoint GET /nope") as err:
        client._request("GET", "/nope")
    assert err.value.status == 404


def test_command_failure_is_500_with_stderr_and_controller_survives(api):
    client, _, run, _ = api
    run.fail_on = "nft"
    with pytest.raises(ControllerError, match="RTNETLINK answers: boom") as err:
        client.fault({"action": "gray_loss", "a": "t0p0g0", "b": "t1p0s0", "percent": 5})
    assert err.value.status == 500
    assert client.health()["ok"]


def test_host_faults_need_registered_namespace(api):
    client, _, run, _ = api
    with pytest.raises(ControllerError, match="POST /hosts"):
        client.fault({"action": "gray_loss", "a": "h0", "b": "t0p0g0", "percent": 5,
                      "direction": "a->b"})
    with pytest.raises(ControllerError, match="no host named 'h9'"):
        client.register_hosts({"h9": 1})
    with pytest.raises(ControllerError, match="positive integer"):
        client.register_hosts({"h0": "x"})
    h0 = namespace_with("h0-p0")
    try:
        assert client.register_hosts({"h0": h0.pid})["hosts"] == ["h0"]
    finally:
        h0.kill()
        h0.wait()
    client.fault({"action": "gray_loss", "a": "h0", "b": "t0p0g0", "percent": 5,
                  "direction": "a->b"})
    assert run.argvs[-1][0] == "nsenter" and run.argvs[-1][1].startswith("--net=/proc/")
    assert run.argvs[-1][2] == "nft"
    [link] = [l for l in client.links() if l["a"] == "h0"]
    assert link["faults"] == [{"action": "gray_loss", "from": "h0", "to": "t0p0g0", "percent": 5.0}]
    client.fault({"action": "gray_loss_clear", "a": "h0", "b": "t0p0g0"})
    assert "delete table netdev mrclab_loss_h0_p0" in run.argvs[-1][-1]


def test_flap_runs_in_background_and_link_up_cancels(api):
    client, ctl, run, _ = api
    client.fault({"action": "flap", "a": "t0p0g1", "b": "t1p0s0", "period_s": 0.1, "count": 3})
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and ctl.flaps:
        time.sleep(0.02)
    states = [a[-1] for a in run.argvs]
    assert states == ["down", "down", "up", "up"] * 3
    steps = [e for e in client.faults() if e["action"] == ControllerLog.FLAP_STEP]
    assert [e["state"] for e in steps] == ["down", "up"] * 3
    run.argvs.clear()
    client.fault({"action": "flap", "a": "t0p0g1", "b": "t1p0s0", "period_s": 10, "count": 100})
    time.sleep(0.1)
    client.link_up("t0p0g1", "t1p0s0")
    time.sleep(0.2)
    assert not ctl.flaps
    assert [a[-1] for a in run.argvs] == ["down", "down", "up", "up"]


def test_port_status_logged_and_reconvergence_recomputes(api):
    client, ctl, _, _ = api
    ctl.on_port_status("t1p0s0", 2, False, "modify")
    ctl.on_port_status("t1p0s0", 2, False, "modify")   # no transition: not logged twice
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and not ctl.routed_around:
        time.sleep(0.02)
    assert ctl.routed_around == {frozenset(("t1p0s0", "t0p0g1"))}
    log = client.faults()
    assert [e["action"] for e in log] == [ControllerLog.PORT_STATUS, ControllerLog.RECONVERGE]
    assert log[0]["a"] == "t0p0g1" and log[0]["state"] == "down"
    # every ECMP rule on t0p0g0 towards group 1 now avoids spine 0 (port 2)
    rules = ctl.installed["t0p0g0"] if "t0p0g0" in ctl.installed else []
    assert rules and all(r.actions == (("output", 3),) for r in rules
                         if r.priority in (20000, 10000))


# ---------------------------------------------------------------- POST /faults: nftables faults on
# many links at one instant, one nft transaction per namespace (scripts written out by hand;
# t0p0g0-e2 faces spine 0, t0p0g1-e3 spine 1, t1p0s0-e1 group 0, t1p0s1-e2 group 1)


def loss(a, b, percent, direction="both"):
    return {"action": "gray_loss", "a": a, "b": b, "percent": percent, "direction": direction}


def drop_below(table: str, intf: str, threshold: int) -> str:
    return (f"add table netdev {table}; delete table netdev {table}; add table netdev {table}; "
            f"add chain netdev {table} egress {{ type filter hook egress device \"{intf}\" "
            f"priority 0; policy accept; }}; "
            f"add rule netdev {table} egress numgen random mod 10000 < {threshold} counter drop")


def test_loss_on_two_links_is_one_nft_command_and_a_log_entry_per_link(api):
    client, _, run, log_path = api
    reply = client.fault_batch([loss("t0p0g0", "t1p0s0", 1.0), loss("t0p0g1", "t1p0s1", 1.0)])
    assert reply["ok"] and len(reply["faults"]) == 2
    # four switch ports, all in the root namespace: one nft, the scripts in planned order
    assert run.argvs == [["nft", "; ".join([
        drop_below("mrclab_loss_t0p0g0_e2", "t0p0g0-e2", 100),
        drop_below("mrclab_loss_t1p0s0_e1", "t1p0s0-e1", 100),
        drop_below("mrclab_loss_t0p0g1_e3", "t0p0g1-e3", 100),
        drop_below("mrclab_loss_t1p0s1_e2", "t1p0s1-e2", 100)])]]
    lines = [json.loads(x) for x in log_path.read_text().splitlines()]
    assert [(x["action"], x["a"], x["b"]) for x in lines] == [
        ("gray_loss", "t0p0g0", "t1p0s0"), ("gray_loss", "t0p0g1", "t1p0s1")]
    faulted = [l for l in client.links() if l["faults"]]
    assert sorted((l["a"], l["b"], len(l["faults"])) for l in faulted) == [
        ("t0p0g0", "t1p0s0", 2), ("t0p0g1", "t1p0s1", 2)]


def test_a_batch_with_a_wrong_or_foreign_command_runs_nothing(api):
    client, _, run, log_path = api
    for body, why in (([loss("t0p0g0", "t1p0s0", 1.0), loss("t0p0g1", "t1p0s1", 120)], "percent"),
                      ([loss("t0p0g0", "t1p0s0", 1.0),
                        {"action": "link_down", "a": "t0p0g1", "b": "t1p0s1"}],
                       "send link_down with POST /fault"),
                      ([], "non-empty JSON list"),
                      (loss("t0p0g0", "t1p0s0", 1.0), "non-empty JSON list")):
        with pytest.raises(ControllerError, match=why) as err:
            client.fault_batch(body)
        assert err.value.status == 400
    assert run.argvs == [] and not log_path.exists()
    assert not any(l["faults"] for l in client.links())


def test_a_failed_namespace_leaves_the_state_of_what_was_applied(api):
    client, _, run, _ = api
    h0 = namespace_with("h0-p0")
    try:
        client.register_hosts({"h0": h0.pid})
    finally:
        h0.kill()
        h0.wait()
    run.fail_on = "nsenter"
    with pytest.raises(ControllerError, match="boom") as err:
        client.fault_batch([loss("t0p0g0", "t1p0s0", 1.0), loss("h0", "t0p0g0", 1.0, "a->b")])
    assert err.value.status == 500
    assert [argv[0] for argv in run.argvs] == ["nft"]           # the root namespace's went in
    [spine_link] = [l for l in client.links() if l["faults"]]
    assert (spine_link["a"], spine_link["b"]) == ("t0p0g0", "t1p0s0")
    assert len(spine_link["faults"]) == 2
