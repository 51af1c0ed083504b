"""`mrclab deny/allow` -> controller API -> DenylistService -> an endpoint's control socket: the
real API server, controller backend, control server and endpoint (fake NIC ports only)."""
import json
import threading

import pytest

from controller.api import ApiServer
from controller.app import FabricController
from model.topology import FabricSpec, Topology, ev_plane
from tests.helpers.api_token import TOKEN, use_token
from tests.helpers.cli import run_mrclab as run
from tests.helpers.endpoint_fakes import FakePort
from traffic.nic.control import ControlServer
from traffic.nic.endpoint import Endpoint
from traffic.nic.endpoint_support import EndpointConfig

SPEC = FabricSpec()


@pytest.fixture
def live(tmp_path, monkeypatch):
    """Controller API + endpoint h0 (one QP to h2) serving its control socket in a thread."""
    ctl = FabricController(Topology(SPEC), "srv6", None, str(tmp_path / "faults.jsonl"),
                           run=lambda argv: "")
    use_token(monkeypatch)
    server = ApiServer(ctl, 0, TOKEN).start()
    ep = Endpoint(EndpointConfig.from_dict({"host": 0, "fabric": SPEC.to_dict(), "seed": 1}),
                  ports={p: FakePort(p) for p in range(SPEC.planes)})
    qp = ep.create_qp(0x100, 2, 0x200, base_rtt_ns=1_000_000)
    sock = str(tmp_path / "h0.sock")
    control = ControlServer(ep, sock)
    stop = threading.Event()
    loop = threading.Thread(target=lambda: [ep.run_once(0.005) for _ in iter(stop.is_set, True)])
    loop.start()
    try:
        yield ctl, server.port, ep, qp, sock, tmp_path
    finally:
        stop.set()
        loop.join(5)
        control.close()
        ep.close()
        server.stop()


def test_deny_reaches_the_endpoint_and_allow_lifts_it(capsys, live):
    ctl, port, ep, qp, sock, tmp_path = live
    rc, out, err = run(capsys, "deny", "--show", "--api-port", str(port))
    assert rc == 0 and json.loads(out)["rules"] == []
    ctl.register_endpoints({"h0": sock, "h1": str(tmp_path / "not-up.sock")})
    plane0 = {ev for ev in qp.sender.evs.evs if ev_plane(ev) == 0}
    # h0's plane-0 NIC link: every plane-0 EV of h0's QP crosses it, no plane-1 EV does
    rc, out, err = run(capsys, "deny", "--link", "t0p0g0~h0", "--reason", "test",
                       "--api-port", str(port))
    assert rc == 0, err
    reply = json.loads(out)
    assert reply["rule"] == {"link": "h0~t0p0g0"} and reply["changed"] is True
    assert reply["pushed"]["h0"] == {"ok": True, "evs_denied": len(plane0),
                                     "newly_denied": len(plane0), "newly_allowed": 0}
    assert reply["pushed"]["h1"]["ok"] is False and "not up" in reply["pushed"]["h1"]["error"]
    assert set(qp.sender.evs.denied()) == plane0
    log = [json.loads(x) for x in (tmp_path / "faults.jsonl").read_text().splitlines()]
    assert [(e["action"], e["a"], e["b"]) for e in log] == [("deny", "h0", "t0p0g0")]

    rc, out, err = run(capsys, "allow", "--link", "h0~t0p0g0", "--api-port", str(port))
    assert rc == 0, err
    assert json.loads(out)["pushed"]["h0"]["newly_allowed"] == len(plane0)
    assert qp.sender.evs.denied() == []


def test_a_bad_rule_is_a_clear_error_and_changes_nothing(capsys, live):
    ctl, port, ep, qp, sock, _ = live
    ctl.register_endpoints({"h0": sock})
    rc, out, err = run(capsys, "deny", "--plane", "1", "--api-port", str(port))
    assert rc == 0
    rc, out, err = run(capsys, "deny", "--link", "h0~t0p0g1", "--api-port", str(port))
    assert rc == 2 and "no link between 'h0' and 't0p0g1'" in err and "Traceback" not in err
    rc, out, err = run(capsys, "deny", "--t1", "1", "--ev", "5", "--api-port", str(port))
    assert rc == 2 and "--t1 needs --plane" in err
    rc, out, err = run(capsys, "allow", "--plane", "7", "--api-port", str(port))
    assert rc == 2 and "plane 7 out of range 0..1" in err
    assert ep.denylist.to_list() == [{"plane": 1}]
    assert ctl.denylist_state()["rules"] == [{"plane": 1}]
    # with plane 1 denied, h0's plane-0 NIC link is the last way out of h0
    rc, out, err = run(capsys, "deny", "--link", "h0~t0p0g0", "--api-port", str(port))
    assert rc == 2 and "would leave h0 no path to h1" in err and "Traceback" not in err
    assert ctl.denylist_state()["rules"] == [{"plane": 1}]
    with pytest.raises(ValueError, match="absolute path"):
        ctl.register_endpoints({"h0": "relative.sock"})


def test_the_endpoint_directory_takes_sockets_and_sockets_to_be_never_a_link(tmp_path):
    """docs/security.md: POST /endpoints takes only sockets inside the endpoint directory, with
    no link on the way, the entry itself included."""
    import socket as socketlib

    from controller.denylist import inside_dir
    d = tmp_path / "endpoints"
    d.mkdir()
    real = socketlib.socket(socketlib.AF_UNIX)
    real.bind(str(d / "h0.sock"))
    try:
        (d / "zero.sock").symlink_to("/dev/zero")
        (d / "h1.sock").symlink_to(d / "h0.sock")      # a link even to one of ours
        (d / "plain.sock").write_text("")
        assert inside_dir(str(d / "h0.sock"), str(d))
        assert inside_dir(str(d / "h2.sock"), str(d))   # not made yet: the endpoint makes it
        assert not inside_dir(str(d / "zero.sock"), str(d))
        assert not inside_dir(str(d / "h1.sock"), str(d))
        assert not inside_dir(str(d / "plain.sock"), str(d))
    finally:
        real.close()


def test_a_deny_reason_is_bounded():
    """A reason is a note kept in the history and echoed in every reply: at most
    MAX_REASON_CHARS (200) characters."""
    from controller.denylist import DenylistService, DenyRuleError
    svc = DenylistService(Topology(SPEC))
    assert svc.deny({"plane": 0, "reason": "r" * 200})["reason"] == "r" * 200
    with pytest.raises(DenyRuleError, match="at most 200 characters, got 201"):
        svc.deny({"plane": 1, "reason": "r" * 201})
    assert [r["plane"] for r in svc.state()["rules"]] == [0]
