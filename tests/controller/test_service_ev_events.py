"""EV state changes reach the controller as events (OCP mrc_ctl.h EV event queue): once a
controller subscribes ("ev_subscribe"), an endpoint's QPs' forward EV state changes into a
monitored state are queued (traffic/core/ev_events.py), served on its control socket
("ev_events"), and the controller logs what the path monitor forwards
(POST /ev_events) on the run's time line (action ev_event). Real endpoints over in-memory
wires, the real control socket and the real controller API (its commands recorded)."""
import threading

import pytest

from controller import api_auth
from controller.client import ControllerClient, ControllerError
from controller.service import FabricController
from emulation.network.path_monitor import PathMonitor
from model.events import ControllerLog
from model.topology import FabricSpec, Topology, ev_plane, ev_spine
from tests.helpers.api_token import TOKEN
from tests.helpers.controller import Recorder
from tests.helpers.endpoint_fakes import endpoints
from traffic.nic.control import ControlError, ControlServer


def test_an_ev_retirement_is_served_on_the_control_socket_once(tmp_path):
    a, b, _, _ = endpoints(tmp_path)
    server = ControlServer(a, str(tmp_path / "a.sock"))
    try:
        qp = a.create_qp(0x100, 2, 0x200, base_rtt_ns=1_000_000)
        ev, ev2 = qp.sender.evs.rotation[:2]
        qp.sender.evs.mark_lost(ev2, "timeout", a.clock())      # no subscriber: no event
        assert server.execute({"op": "ev_subscribe", "mask": 3})["mask"] == 3
        qp.sender.evs.mark_lost(ev, "timeout", a.clock())
        got = server.execute({"op": "ev_events"})
        assert not [e for e in got["events"] if e["ev"] == ev2]
        retired = [e for e in got["events"] if e["ev"] == ev]
        assert [(e["old"], e["new"], e["reason"], e["qp"], e["peer"], e["state"],
                 e["drop_count"]) for e in retired] == \
            [("GOOD", "ASSUMED_BAD", "timeout", 0x100, 2, 2, 0)]
        with pytest.raises(ControlError, match="only GOOD"):
            server.execute({"op": "ev_subscribe", "mask": 4})
        assert server.execute({"op": "ev_events"})["events"] == []      # delivered once
    finally:
        server.close()
        a.close()
        b.close()


@pytest.fixture
def controller(tmp_path, monkeypatch, api_server):
    """The real API with its token; the path monitor's clients find it in MRCLAB_API_TOKEN, as
    a user root handed the token would."""
    monkeypatch.setenv(api_auth.TOKEN_ENV, TOKEN)
    topo = Topology(FabricSpec())
    ctl = FabricController(topo, "srv6", None, str(tmp_path / "faults.jsonl"), run=Recorder())
    server = api_server(ctl)
    return topo, ControllerClient(port=server.port, timeout_s=5, token=TOKEN), ctl, server.port


def test_the_path_monitor_forwards_an_endpoints_ev_events_to_the_controller_log(
        tmp_path, controller):
    topo, client, ctl, port = controller
    a, b, _, _ = endpoints(tmp_path)
    server = ControlServer(a, str(tmp_path / "a.sock"))
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            a.run_once(0.0005)

    thread = threading.Thread(target=loop, daemon=True)
    try:
        qp = a.create_qp(0x100, 2, 0x200, base_rtt_ns=1_000_000)
        ev = qp.sender.evs.rotation[1]
        thread.start()
        monitor = PathMonitor(topo, {"h0": server.path}, port, tmp_path / "pm.jsonl")
        monitor.gather()                    # subscribes
        qp.sender.evs.mark_lost(ev, "sack_gap", a.clock())
        monitor.gather()
        logged = [e for e in ctl.fault_log.entries() if e["action"] == ControllerLog.EV_EVENT]
        mine = [e for e in logged if e["ev"] == ev]
        assert [(e["host"], e["new"], e["reason"]) for e in mine] == \
            [("h0", "ASSUMED_BAD", "sack_gap")]
        assert monitor.ev_events_forwarded == len(logged) and not monitor.ev_event_errors
        # and the loss counts on its path (h0 to h2 on the EV's plane and spine)
        key = f"h0>h2/p{ev_plane(ev)}/s{ev_spine(ev)}"
        assert monitor.ev_losses == {key: 1}
    finally:
        stop.set()
        thread.join(5)
        server.close()
        a.close()
        b.close()


def test_bad_ev_event_bodies_are_refused_by_name(controller):
    _, client, ctl, _ = controller
    with pytest.raises(ControllerError, match="unknown host 'h99'"):
        client.ev_events("h99", [])
    with pytest.raises(ControllerError, match="an event needs at least ev and new"):
        client.ev_events("h0", [{"ev": 1}])
    assert not [e for e in ctl.fault_log.entries() if e["action"] == ControllerLog.EV_EVENT]
    assert client.ev_events("h0", [{"ev": 5, "new": "GOOD", "t_ns": 7}])["logged"] == 1
    entry, = [e for e in ctl.fault_log.entries() if e["action"] == ControllerLog.EV_EVENT]
    assert (entry["host"], entry["ev"], entry["new"], entry["endpoint_t_ns"]) == ("h0", 5, "GOOD", 7)
